#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "runtime/data_plan.h"
#include "runtime/device_memory.h"
#include "runtime/executor.h"
#include "runtime/segment.h"

namespace tinytpu::runtime {

// What the progress callback threw (KeyboardInterrupt from Python): carried past the handlers of
// CompiledKernel::run, which turn other failures into errors naming the kernel, and rethrown as it was.
struct Stopped {
  std::exception_ptr cause;
};

// Raised in the other threads of a call that stops: an error, or Ctrl-C, in one of its threads.
struct Cancelled {};

// One call of a kernel: its buffers bound to slots, its progress reports, and the run of a plan's launches.
class Call {
 public:
  // tinygrad passes the buffers of the PARAMs the kernel still has, in slot order; a slot whose uses were
  // folded away has no PARAM and no buffer. Everything below is indexed by slot.
  Call(const std::string& kernel, const std::map<int, compiler::DType>& params,
       std::vector<DeviceBuffer>& bufs, const Progress& progress, TimingCache& timings, const RunMode& mode);

  std::vector<int64_t> sizes;  // elements per slot
  const std::vector<Slot>& slots() const { return slots_; }

  // Reports progress at most every kProgressInterval; what the callback throws (KeyboardInterrupt) stops
  // the call.
  void poll();
  std::function<void(int64_t, int64_t)> tracing();  // compiling: chunks traced so far

  // Loads see the buffers as they were when the kernel started, like one pass of tinygrad's loops: a
  // buffer the kernel reads (`loads`: places in the call) and writes, or one sharing memory with a buffer it
  // writes, is read from a copy.
  void snapshot_written(const compiler::Plan& plan, const std::vector<int>& loads);
  // The memo buffers (compiler/element_memo.h), after the counter slot: 32-bit lanes as they were drained.
  void add_memos(const compiler::Plan& plan);

  // Every launch of the plan: gather, run on the model, scatter. Independent runs are shared among threads
  // (parts): the main thread runs the runs before them, then its part while the others run theirs, each from
  // the kept tiles it left.
  KernelStats run(const compiler::Plan& plan, bool keep_tasm, TraceLog* trace, CoreState* core);

 private:
  const std::string& kernel_;
  const Progress& progress_;
  int nslots_ = 0;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_place_;  // a buffer's slot by its place in the call
  std::vector<std::vector<uint8_t>> snapshots_;
  std::vector<std::vector<int32_t>> memos_;
  KernelProgress done_{0, 1};
  std::chrono::steady_clock::time_point last_report_ = std::chrono::steady_clock::now();
  TimingCache& timings_;
  const RunMode mode_;
  std::vector<Segment*> segments_;          // running
  std::atomic<bool> stop_{false};           // an error or Ctrl-C in one thread stops the others
  const Poll poller_ = [this] { poll(); };  // the main thread's
  const Poll cancel_ = [this] {             // the others'
    if (stop_.load(std::memory_order_relaxed)) throw Cancelled{};
  };

  // Run boundaries: the main thread runs [0, b[0]), then thread k its part [b[k], b[k+1]), all of about equal
  // launches: the independent groups of runs shared among up to RunMode::threads threads of at least
  // kThreadLaunches launches each. One part when launches are looked at one by one (a trace, listings), or
  // when a launch's timing key depends on the launch before it (resident programs, launch prefetch).
  static constexpr int64_t kThreadLaunches = 512;
  std::vector<size_t> parts(const compiler::Plan& plan, bool one_by_one) const;
};

}  // namespace tinytpu::runtime
