#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "runtime/device_memory.h"
#include "sim/trace.h"

namespace tinytpu {

struct KernelStats {
  uint64_t launches = 0, cycles = 0, sxu_cycles = 0;
  std::vector<std::string> tasm;  // each launch's program, when asked for
};

// A compiled kernel: the parsed IR; launches are generated per call because the lane indices depend
// on the symbolic variables' values.
class CompiledKernel {
 public:
  explicit CompiledKernel(std::string_view ir) : kernel_(compiler::parse_kernel(ir)) {}
  // With a trace, the kernel is one slice on its kernel track, each launch one nested in it, and the
  // launches' runs follow one another on the timeline.
  KernelStats run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals, bool keep_tasm,
                  TraceLog* trace = nullptr) const;
  const std::string& name() const { return kernel_.name; }

 private:
  compiler::Kernel kernel_;
};

}  // namespace tinytpu
