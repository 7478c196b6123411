#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/ir.h"
#include "compiler/mxu_dot.h"
#include "compiler/plan.h"
#include "compiler/tracer.h"
#include "runtime/device_memory.h"
#include "runtime/kernel_stats.h"
#include "runtime/timing_cache.h"
#include "sim/runner.h"
#include "sim/trace.h"

namespace tinytpu {

// How a call runs its launches. A launch's counters are a function of its timing key: its image (program and
// records), how it is loaded (sim/loader.h LaunchLoad: the cross-launch state its timing reads) and the
// core's configuration (the kernel's) -- not of its data, when its program computes in order (sim/runner.h).
// With `functional` (TINYTPU_FUNCTIONAL, on unless 0) the first launch of each key is ticked and its counters
// kept; a later one whose program computes in order takes them and runs its instructions in order, without
// the cycles between them. Ticked still: traced launches and programs that do not compute in order. The first
// launch of a key run in order and every kSampleEvery-th after it are ticked as well and compared (`verify`,
// TINYTPU_VERIFY=1: every one): a difference in results or counters is a SimError. A call runs its
// independent runs (compiler/independent.h) on up to `threads` threads (TINYTPU_THREADS), with the same
// results and counters as on one (but batches, which each thread counts for its own); and with `streams`
// (TINYTPU_STREAMS, on unless 0), each thread interleaves its independent groups so that their launches batch
// together, with the same results and counters again (but batches).
struct RunMode {
  bool functional = true;
  bool verify = false;
  int threads = 1;
  bool streams = true;
};
constexpr uint64_t kSampleEvery = 64;

// How far a kernel call has got: chunks of 16 lanes traced out of all, launches run so far.
struct KernelProgress {
  int64_t chunks_done = 0, chunks = 0;
  uint64_t launches = 0, cycles = 0;
};
// Called about every kProgressInterval of host time while a kernel runs (and at no other time): it
// may show progress, and whatever it throws stops the kernel (Python raises KeyboardInterrupt in it).
using Progress = std::function<void(const KernelProgress&)>;
constexpr std::chrono::milliseconds kProgressInterval{50};

// What a device's TensorCore keeps from one launch to the next, across kernel calls: with resident programs
// (config.h resident_program), the programs in program memory's ring, oldest first, and the instruction
// entries they fill. The kernels that run on one device share one.
namespace runtime {
struct SegmentStorage;
}
struct CoreState {
  std::deque<std::shared_ptr<const compiler::Image>> resident;  // launch images whose programs are resident
  int entries = 0;                                              // their instructions
  const compiler::Image* last = nullptr;                        // the resident entry the last launch ran from

  // A launch of `image` in a ring of `capacity` entries: whether its program is resident. If not, it is
  // written after the last one written, evicting the oldest until it fits; `evicts_last` says whether that
  // overwrote the program of the launch that ran last (with launch prefetch, still running: the loader
  // must wait for it to end).
  bool load(const std::shared_ptr<const compiler::Image>& image, int capacity, bool& evicts_last);
  // A call's first segment's storage, kept for the device's next call (segment.h)
  std::shared_ptr<runtime::SegmentStorage> spare;
};

// A kernel tinygrad compiled for this device: the parsed IR, and the plans compiled from it (on first
// use) for the device's TensorCore and each set of symbolic-variable values, buffer sizes and chains
// kept off the MXU. A call runs a plan: it gathers, ticks and scatters. A bad configuration is
// std::invalid_argument when the kernel is made.
class CompiledKernel {
 public:
  explicit CompiledKernel(std::string_view ir, const TensorCoreConfig& cfg = {},
                          const compiler::TraceLimits& limits = {});
  CompiledKernel(const CompiledKernel& o)
      : kernel_(o.kernel_),
        config_(o.config_),
        limits_(o.limits_),
        params_(o.params_),
        loads_(o.loads_),
        stores_(o.stores_) {}
  const TensorCoreConfig& config() const { return config_; }
  // With a trace, the kernel is one slice on its kernel track, each launch one nested in it, and the
  // launches' runs follow one another on the timeline. `core` is what the device's core kept from its last
  // launch (none: nothing kept).
  KernelStats run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals, bool keep_tasm,
                  TraceLog* trace = nullptr, const Progress& progress = {}, CoreState* core = nullptr,
                  const RunMode& mode = {}) const;
  const std::string& name() const { return kernel_.name; }
  // The buffers a call loads from and stores to, by their places in the call (every place when the kernel
  // loads through a pointer of another kind).
  const std::vector<int>& loads() const { return loads_; }
  const std::vector<int>& stores() const { return stores_; }
  // A test hook: every kept count of cycles is made one too many, which the sampled check must catch.
  void corrupt_timings_for_test() { timings_.corrupt_for_test(); }

 private:
  compiler::Kernel kernel_;
  TensorCoreConfig config_;
  compiler::TraceLimits limits_;
  std::map<int, compiler::DType> params_;  // buffer PARAM slot -> dtype, in slot order
  std::vector<int> loads_, stores_;
  // symbolic-variable values, buffer sizes, vetoed chains, MXU operands with an earlier one's values
  using PlanKey =
      std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::set<int>, std::vector<std::pair<int, int>>>;
  mutable std::map<PlanKey, std::shared_ptr<const compiler::Plan>> plans_;
  mutable std::mutex plans_mutex_;                   // calls run with the GIL released
  mutable std::mutex compile_mutex_;                 // held while a plan compiles (plan())
  std::string named(const std::string& what) const;  // the message, naming this kernel
  mutable TimingCache timings_;
  KernelStats run_plan(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals, bool keep_tasm,
                       TraceLog* trace, const Progress& progress, CoreState* core, const RunMode& mode) const;
  std::shared_ptr<const compiler::Plan> plan(const PlanKey& key, const compiler::Choices& choices,
                                             const std::function<void(int64_t, int64_t)>& traced) const;
};

}  // namespace tinytpu
