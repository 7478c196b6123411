#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
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

// How far a kernel call has got: chunks of 16 lanes traced out of all, launches run so far.
struct KernelProgress {
  int64_t chunks_done = 0, chunks = 0;
  uint64_t launches = 0, cycles = 0;
};
// Called about every kProgressInterval of host time while a kernel runs (and at no other time): it
// may show progress, and whatever it throws stops the kernel (Python raises KeyboardInterrupt in it).
using Progress = std::function<void(const KernelProgress&)>;
constexpr std::chrono::milliseconds kProgressInterval{50};

// A compiled kernel: the parsed IR; launches are generated per call because the lane indices depend
// on the symbolic variables' values.
class CompiledKernel {
 public:
  explicit CompiledKernel(std::string_view ir) : kernel_(compiler::parse_kernel(ir)) {}
  // With a trace, the kernel is one slice on its kernel track, each launch one nested in it, and the
  // launches' runs follow one another on the timeline.
  KernelStats run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals, bool keep_tasm,
                  TraceLog* trace = nullptr, const Progress& progress = {}) const;
  const std::string& name() const { return kernel_.name; }

 private:
  compiler::Kernel kernel_;
  std::string named(const std::string& what) const;  // the message, naming this kernel
  KernelStats run_chunks(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals, bool keep_tasm,
                         TraceLog* trace, const Progress& progress) const;
};

}  // namespace tinytpu
