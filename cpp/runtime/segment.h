#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/plan.h"
#include "runtime/data_plan.h"
#include "runtime/executor.h"
#include "sim/batch.h"
#include "sim/runner.h"
#include "sim/trace.h"

namespace tinytpu::runtime {

// The launch prefetch variant's timeline (config.h prefetch_launches), in cycles from the kernel call's
// start: the loader fills the idle banks with the next launch while the current one runs.
struct LaunchClock {
  const compiler::PlanLaunch* last = nullptr;  // the launch that ran last in this call
  bool last_swap = false;                      // its run's swap_banks
  uint64_t end = 0;                            // when it finished (its last output line)
  uint64_t started = 0;      // its do_start: from then on its banks are in use, the others free
  uint64_t loader_free = 0;  // when the loader had sent its last record
  uint64_t writes = 0;       // with HBM, its output phase: its DMA engine's writes

  // How long before the last launch's end the next one's loading began, when it loads while the last one
  // runs: as soon as the loader and the idle banks were free. (One that reads what the last launch output
  // loads after its end.)
  uint64_t ahead() const {
    const uint64_t begin = std::max(loader_free, started);
    return begin < end ? end - begin : 0;
  }
  void ran(const compiler::PlanLaunch& l, bool swap, const RunResult& r);
};

// A segment's batch and window outputs, kept for the next one (segment.cc spare_for): their pages are then
// not faulted in and zeroed anew at every call.
struct SegmentStorage {
  std::unique_ptr<BatchDatapath> batch;
  std::vector<Tile> outputs;
};

// A sequence of a call's runs, run by one thread: its kept tiles (a data plan), its window and its batches. A
// call runs its plan in one segment, or its independent groups of runs (Plan::independent_groups) in several
// at once.
class Segment {
 public:
  using Plan = compiler::Plan;
  using PlanLaunch = compiler::PlanLaunch;
  using LaunchRun = compiler::LaunchRun;

  // `data`: the kept tiles as the runs before it leave them. `first_number`: the call's launches before it.
  // `launches`: about as many as it runs (its batch is no larger). `one_by_one`: something looks at launches
  // one by one (a trace, listings): a window of one launch, run at once, and no streams.
  Segment(const Plan& plan, const DataPlan& data, const std::string& kernel, TimingCache& timings,
          const RunMode& mode, Poll poll, uint64_t first_number, int64_t launches, bool one_by_one,
          CoreState* core = nullptr);  // `core`: the device's, whose storage a call's first segment takes
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Runs [first, end) of the plan's runs, the independent groups among them as streams; the window is drained
  // at the end.
  void run(size_t first, size_t end, bool keep_tasm, TraceLog* trace, CoreState* core);
  KernelStats& stats() { return stats_; }

  DataPlan data;
  std::atomic<uint64_t> launches_done{0}, cycles_done{0};  // its stats so far, for the main thread's progress

 private:
  const Plan& plan_;
  const std::string& kernel_;
  TimingCache& timings_;
  const RunMode mode_;
  const Poll poll_;  // after every launch, and in the model's run loop
  const uint64_t first_number_;
  KernelStats stats_;
  LaunchClock clock_;
  // This call's view of the timing cache: per key, its entry (none: not ticked yet) and the batch runner of
  // its program, made at its first run in order.
  struct KeyRuns {
    std::shared_ptr<TimingCache::Entry> timing;
    std::unique_ptr<BatchRunner> runner;
  };
  std::unordered_map<TimingCache::Key, KeyRuns, TimingCache::KeyHash> keys_;

  // A sequence of launches whose kept tiles the window follows apart: the segment's runs in order, or a
  // stream of independent groups, which also keeps its tiles apart from the data plan's (`apart`).
  struct Stream {
    bool apart;
    // per kept-tile place: the window's launch that kept it last (-1: none) and its output
    PagedPlaces<std::pair<int, int>> keeper{{-1, 0}};
    StreamKept kept{{}};
    StreamKept* kept_apart() { return apart ? &kept : nullptr; }
  };
  Stream in_order_{false};
  Stream* stream_ = &in_order_;  // the stream of the launch being run
  const bool streams_;           // independent groups may run as streams

  // Independent groups of runs, from `first` (a group start) up to `last` and then `end`, up to kStreams at
  // once: a launch of each in turn, so that the window's levels hold launches of many groups, which batch
  // together where their programs agree (a group is often one long chain of launches). Each stream keeps
  // its tiles apart: by independence (compiler/independent.h), what a group reads before keeping it no
  // other group keeps, and so it reads the data plan's. Loads see the buffers as the call began, and the
  // groups store disjoint elements: the results are those of running the groups one after another.
  static constexpr int kStreams = 64;
  void run_streams(std::vector<size_t>::const_iterator first, std::vector<size_t>::const_iterator last,
                   size_t end, CoreState* core);

  // Launches run in order wait in a window, then run out of their order, in batches. A launch's level is one
  // more than the highest of the window's launches whose kept tiles it reads (0: none); level by level, the
  // launches of one key run together, each reading the kept tiles it needs from the launch that kept them
  // (DataPlan::rename). Then every launch is drained in its order: buffers, kept tiles and memo buffers
  // end as running them one by one leaves them. A launch that reads a memo buffer a launch of the window
  // stores into waits for the window to be drained; one that does not run in order drains it first.
  static constexpr int kBatchLaunches = 64;
  static constexpr int kWindowLaunches = 1 << 14;
  static constexpr size_t kWindowTiles = size_t(1) << 18;  // their output tiles: 16 MB
  const int window_limit_;
  SegmentStorage& spare_;  // where its batch and outputs come from and go back to (segment.cc spare_for)
  std::unique_ptr<BatchDatapath> batch_;
  struct Windowed {
    const PlanLaunch* launch;
    const LaunchRun* run;
    const KeyRuns* key;
    LaunchLoad load;
    uint64_t number;  // the call's launch count before it
    bool check;       // ticked as well and compared (RunMode)
    int level;
    int renames_first, renames_end;  // in renames_
    size_t outputs;                  // its first output tile in outputs_
    Stream* stream;
  };
  struct Rename {  // a kept tile a launch reads, from the window's launch that kept it last before it
    int place, keeper, output;
  };
  size_t window_tiles_ = 0;                 // the window's launches' output tiles (outputs_ once run)
  const LaunchRun* current_run_ = nullptr;  // the data plan's run, set back after a window
  std::vector<Windowed> window_;
  std::vector<Rename> renames_;
  bool window_stores_memo_ = false;
  std::vector<Tile> outputs_;  // the window's launches' output tiles, once run
  std::vector<int> renamed_;   // the places the data plan reads renamed
  std::vector<int> filled_;

  // The launch's load: resident program (a ring of both banks' entries with prefetch), and prefetched while
  // the last launch runs unless it reads what that one outputs or its program's write overwrites that one's.
  LaunchLoad load_of(const PlanLaunch& l, CoreState* core) const;
  void run_launch(const LaunchRun& run, const PlanLaunch& l, bool keep_tasm, TraceLog* trace,
                  CoreState* core);
  // The launch's counters, added to the segment's.
  void count(const PlanLaunch& l, const LaunchLoad& load, const RunResult& res);
  Fill fill(const PlanLaunch& l) const {
    return [this, &l](TensorCore& tc) { data.fill(l, tc); };
  }
  SimError launch_error(const PlanLaunch& l, const std::exception& e) const;

  void add_to_window(Windowed w);
  // Sets up the data plan to gather a windowed launch's data: its run, and the kept tiles it reads.
  void gathering(const Windowed& w);
  void unrename();
  void run_window();
  // The VMEM entries every one of a batch's launches fills (launches of one image fill the same records).
  const std::vector<int>& filled_by_all(const int* launches, int n);
  // Launches of one key and level: each one's data into its tiles, the program run once for all, their
  // outputs kept, and the sampled launches ticked as well and compared.
  void run_batch(const int* launches, int n);
};

}  // namespace tinytpu::runtime
