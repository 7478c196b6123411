#include "runtime/segment.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>

#include "base/errors.h"
#include "isa/tasm.h"
#include "sim/tensorcore.h"

namespace tinytpu::runtime {

using namespace compiler;

namespace {

// A launch's TASM (DEBUG=4): float32 tiles the loader fills also as floats, in a comment, so the listing
// still assembles. The bundle's first records are the fills, in order.
std::string listing(const Bundle& b, const std::vector<DType>& fill_dtypes) {
  std::istringstream tasm(disassemble(b));
  std::string out, line;
  for (size_t i = 0; std::getline(tasm, line); ++i) {
    out += line;
    if (i < fill_dtypes.size() && is_float(fill_dtypes[i])) {  // float32 lanes (a weak float constant too)
      out += "  # f32";
      for (int32_t bits : b.records[i].data) {
        float f;
        std::memcpy(&f, &bits, 4);
        char text[32];
        out += ' ';
        out.append(text, std::to_chars(text, text + sizeof text, f).ptr);
      }
    }
    out += '\n';
  }
  return out;
}

// A launch run in order against the same launch ticked: a difference in results or counters is an error.
void check_same(const RunResult& in_order, const RunResult& ticked, uint64_t launch) {
  std::string differs;
  auto count = [&](const char* name, uint64_t kept, uint64_t now) {
    if (kept != now && differs.empty())
      differs = std::string(name) + " " + std::to_string(kept) + " kept, " + std::to_string(now) + " ticked";
  };
#define RUN(name, type, combine, energy, doc) count(#name, in_order.name, ticked.name);
#define BUSY(unit, name, type, doc) count(#name, in_order.busy.unit, ticked.busy.unit);
#include "sim/counters.def"
  if (differs.empty() &&
      (in_order.vmem_results != ticked.vmem_results || in_order.asram_results != ticked.asram_results ||
       in_order.mxu_result != ticked.mxu_result))
    differs = "its results";
  if (!differs.empty())
    throw SimError("launch " + std::to_string(launch) +
                   " run in order differs from the same launch ticked: " + differs +
                   " (TINYTPU_FUNCTIONAL=0 ticks every launch)");
}

// A thread's batch and window outputs, kept from one call to the next, so that their pages are not faulted in
// and zeroed anew at every call: a segment takes them on the thread that makes it, and gives them back there.
thread_local SegmentStorage spare_storage;

// Where a segment takes its storage from and gives it back: its device's (CoreState::spare) for a call's
// first segment, which runs on the caller's thread, else its thread's. A device's calls come one at a time,
// and a Python thread's thread_local storage would be freed after Python's join of the thread returned (TSan
// sees the race); a call's other segments run on threads of their own, joined in C++.
SegmentStorage& spare_for(CoreState* core) {
  if (!core) return spare_storage;
  if (!core->spare) core->spare = std::make_shared<SegmentStorage>();
  return *core->spare;
}

std::unique_ptr<BatchDatapath> take_batch(SegmentStorage& spare, const TensorCoreConfig& cfg, int capacity) {
  std::unique_ptr<BatchDatapath>& b = spare.batch;
  if (!b || !b->holds(cfg, capacity)) return std::make_unique<BatchDatapath>(cfg, capacity);
  b->cfg = cfg;
  return std::move(b);
}

}  // namespace

void LaunchClock::ran(const PlanLaunch& l, bool swap, const RunResult& r) {
  last = &l;
  last_swap = swap;
  started = end + r.start;
  loader_free = end + r.loader_done;  // a loading done before this run's start counts as done then
  writes = r.cycles - r.output_start;
  end += r.cycles;
}

Segment::Segment(const Plan& plan, const DataPlan& data, const std::string& kernel, TimingCache& timings,
                 const RunMode& mode, Poll poll, uint64_t first_number, int64_t launches, bool one_by_one,
                 CoreState* core)
    : data(data),
      plan_(plan),
      kernel_(kernel),
      timings_(timings),
      mode_(mode),
      poll_(std::move(poll)),
      first_number_(first_number),
      // streams reorder launches: not when a launch's timing key depends on the launch before it
      streams_(mode.streams && !one_by_one && !plan.config.prefetch_launches &&
               !plan.config.resident_program),
      window_limit_(one_by_one ? 1 : kWindowLaunches),
      spare_(spare_for(core)),
      batch_(take_batch(
          spare_, plan.config,
          int(std::max<int64_t>(1, std::min<int64_t>({kBatchLaunches, window_limit_, launches}))))),
      outputs_(std::move(spare_.outputs)) {}

Segment::~Segment() { spare_ = {std::move(batch_), std::move(outputs_)}; }

void Segment::run(size_t first, size_t end, bool keep_tasm, TraceLog* trace, CoreState* core) {
  const std::vector<size_t>& groups = plan_.independent_groups;
  auto from = std::lower_bound(groups.begin(), groups.end(), first);
  auto to = std::lower_bound(from, groups.end(), end);
  const size_t streamed = streams_ && to - from >= 2 ? *from : end;
  for (size_t r = first; r < streamed; ++r) {
    const LaunchRun& run = plan_.runs[r];
    data.start(run);
    current_run_ = &run;
    for (int64_t at = run.first; at < run.first + run.count; ++at)
      run_launch(run, plan_.launches[at], keep_tasm, trace, core);
  }
  if (streamed < end) run_streams(from, to, end, core);
  run_window();
}

void Segment::run_streams(std::vector<size_t>::const_iterator first, std::vector<size_t>::const_iterator last,
                          size_t end, CoreState* core) {
  struct Cursor {
    size_t run = 0, runs_end = 0;
    int64_t at = 0;
    Stream stream{true};
  };
  run_window();  // a stream reads the data plan's kept tiles as the runs before leave them
  const uint64_t before = stats_.launches;
  std::vector<Cursor> cursors(size_t(std::min<ptrdiff_t>(kStreams, last - first)));
  // Groups that run the same launches (their indices shifted: replays) go together, so that streams run
  // them side by side: groups in the order of their first launch, as they were (any order gives the same
  // results).
  std::vector<std::pair<size_t, size_t>> groups;  // first run, end of runs
  for (auto g = first; g != last; ++g) groups.push_back({*g, g + 1 != last ? *(g + 1) : end});
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return plan_.runs[a.first].first < plan_.runs[b.first].first;
  });
  auto next_group = groups.begin();
  auto launch_of = [&](Cursor& c) {  // the group's next launch, false when it has none left
    for (; c.run < c.runs_end; ++c.run)
      if (c.at < plan_.runs[c.run].first + plan_.runs[c.run].count)
        return true;
      else if (c.run + 1 < c.runs_end)
        c.at = plan_.runs[c.run + 1].first;
    return false;
  };
  auto take_group = [&](Cursor& c) {  // false when no group is left
    while (next_group != groups.end()) {
      std::tie(c.run, c.runs_end) = *next_group++;
      c.at = plan_.runs[c.run].first;
      if (launch_of(c)) return true;
    }
    return false;
  };
  std::vector<Cursor*> active;
  for (Cursor& c : cursors)
    if (take_group(c)) active.push_back(&c);
  while (!active.empty()) {
    size_t kept = 0;
    for (Cursor* c : active) {
      const LaunchRun& run = plan_.runs[c->run];
      data.start(run);
      current_run_ = &run;
      stream_ = &c->stream;
      data.use_stream(stream_->kept_apart());
      run_launch(run, plan_.launches[size_t(c->at)], false, nullptr, core);
      ++c->at;
      if (launch_of(*c) || take_group(*c)) active[kept++] = c;
    }
    active.resize(kept);
  }
  run_window();  // before the streams go
  stats_.streamed += stats_.launches - before;
  stream_ = &in_order_;
  data.use_stream(nullptr);
}

LaunchLoad Segment::load_of(const PlanLaunch& l, CoreState* core) const {
  const TensorCoreConfig& cfg = plan_.config;
  const bool prefetch = cfg.prefetch_launches;
  LaunchLoad load;
  bool evicts_last = false;
  if (core && cfg.resident_program)
    load.resident = core->load(l.image, cfg.prog_depth * (prefetch ? 2 : 1), evicts_last);
  if (prefetch && clock_.last && !evicts_last && !data.reads_output_of(l, *clock_.last, clock_.last_swap))
    load.ahead = clock_.ahead();
  if (load.ahead && loader_facts(cfg).shares_channels) load.writes_before = clock_.writes;
  if (cfg.sparse_core) load.table_rows = &l.image->table_rows;
  return load;
}

void Segment::run_launch(const LaunchRun& run, const PlanLaunch& l, bool keep_tasm, TraceLog* trace,
                         CoreState* core) {
  if (keep_tasm) stats_.tasm.push_back(listing(data.bundle(l), l.image->fill_dtypes));
  const uint64_t launch_begin = trace ? trace->base : 0;
  const LaunchLoad load = load_of(l, core);
  // A trace that records sees every cycle ticked; one paused or past its window only moves on
  const bool ticks_only = !mode_.functional || (trace && trace->recording());
  const TimingCache::Key timing_key{l.image.get(), load.ahead, load.resident, load.writes_before};
  KeyRuns& key = keys_[timing_key];
  if (!key.timing && !ticks_only) key.timing = timings_.find(timing_key);
  RunResult res;
  const uint64_t number = first_number_ + stats_.launches;
  if (!ticks_only && key.timing && key.timing->in_order) {
    if (!key.runner) key.runner = std::make_unique<BatchRunner>(l.image->bundle, plan_.config);
    const uint64_t runs = ++key.timing->runs;
    add_to_window({&l, &run, &key, load, number, mode_.verify || runs % kSampleEvery == 1});
    res = key.timing->counters;
    if (trace) trace->skip(res.cycles);
    ++stats_.in_order;
  } else {
    run_window();  // the launches before it first
    try {  // a compiled launch that fails is the compiler's or the model's error, shown with its program
      res = run_validated(l.image->bundle, fill(l), plan_.config, trace, poll_, load);
    } catch (const std::exception& e) {
      throw launch_error(l, e);
    }
    if (!ticks_only && !key.timing) key.timing = timings_.add(timing_key, l.image, res);
    data.drain(l, res.vmem_results);
  }
  clock_.ran(l, data.swap(), res);
  if (trace)
    trace->span(Track::kKernel, 1, launch_begin, trace->base,
                trace->intern("launch " + std::to_string(number)));
  count(l, load, res);
  launches_done.store(stats_.launches, std::memory_order_relaxed);
  cycles_done.store(stats_.cycles, std::memory_order_relaxed);
  poll_();
}

void Segment::count(const PlanLaunch& l, const LaunchLoad& load, const RunResult& res) {
  ++stats_.launches;
  stats_.add(res);
  stats_.activity += l.image->activity;
  if (load.resident) {  // its program and output list are not sent again
    stats_.activity.program_writes -= l.image->activity.program_writes;
    stats_.activity.program_bytes -= l.image->activity.program_bytes;
  }
}

SimError Segment::launch_error(const PlanLaunch& l, const std::exception& e) const {
  return SimError(std::string("internal error in kernel ") + kernel_ + ": " + e.what() + "\n" +
                  disassemble(data.bundle(l)));
}

void Segment::add_to_window(Windowed w) {
  const PlanLaunch& l = *w.launch;
  if (window_stores_memo_ && data.reads_memo(l)) run_window();
  w.level = 0;
  w.stream = stream_;
  w.renames_first = int(renames_.size());
  data.for_each_kept_read(l, [&](int place) {
    const auto [keeper, output] = stream_->keeper[place];
    if (keeper < 0) return;
    renames_.push_back({place, keeper, output});
    w.level = std::max(w.level, window_[size_t(keeper)].level + 1);
  });
  w.renames_end = int(renames_.size());
  for (const Keep& k : l.keeps) stream_->keeper.at(data.kept_place(k)) = {int(window_.size()), k.output};
  window_stores_memo_ |= data.stores_memo(l);
  w.outputs = window_tiles_;
  window_tiles_ += w.key->runner->outputs().size();
  window_.push_back(w);
  if (int(window_.size()) >= window_limit_ || window_tiles_ >= kWindowTiles) run_window();
}

void Segment::gathering(const Windowed& w) {
  data.start(*w.run);
  data.use_stream(w.stream->kept_apart());
  unrename();
  for (int r = w.renames_first; r < w.renames_end; ++r) {
    const Rename& x = renames_[size_t(r)];
    data.rename(x.place, &outputs_[window_[size_t(x.keeper)].outputs + size_t(x.output)]);
    renamed_.push_back(x.place);
  }
}

void Segment::unrename() {
  for (int place : renamed_) data.rename(place, nullptr);
  renamed_.clear();
}

void Segment::run_window() {
  if (window_.empty()) return;
  outputs_.resize(window_tiles_);
  std::vector<int> order(window_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Windowed &x = window_[size_t(a)], &y = window_[size_t(b)];
    return x.level != y.level ? x.level < y.level : std::less<const KeyRuns*>()(x.key, y.key);
  });
  for (size_t first = 0; first < order.size();) {
    size_t end = first + 1;
    const Windowed& head = window_[size_t(order[first])];
    while (end < order.size() && int(end - first) < batch_->capacity() &&
           window_[size_t(order[end])].level == head.level && window_[size_t(order[end])].key == head.key)
      ++end;
    run_batch(&order[first], int(end - first));
    first = end;
  }
  unrename();
  for (const Windowed& w : window_) {
    data.start(*w.run);
    data.use_stream(w.stream->kept_apart());
    data.drain(*w.launch, &outputs_[w.outputs]);
    for (const Keep& k : w.launch->keeps) w.stream->keeper.at(data.kept_place(k)) = {-1, 0};
  }
  data.start(*current_run_);
  data.use_stream(stream_->kept_apart());
  window_.clear();
  window_tiles_ = 0;
  renames_.clear();
  window_stores_memo_ = false;
}

const std::vector<int>& Segment::filled_by_all(const int* launches, int n) {
  filled_.clear();
  const PlanLaunch& first = *window_[size_t(launches[0])].launch;
  auto same_records = [&](const PlanLaunch& l) {
    return std::equal(
        l.fills.begin(), l.fills.end(), first.fills.begin(), first.fills.end(),
        [](const PlanLaunch::Fill& a, const PlanLaunch::Fill& b) { return a.record == b.record; });
  };
  for (int i = 1; i < n; ++i)
    if (!same_records(*window_[size_t(launches[i])].launch)) return filled_;
  for (const PlanLaunch::Fill& f : first.fills) filled_.push_back(first.image->bundle.records[f.record].addr);
  return filled_;
}

void Segment::run_batch(const int* launches, int n) {
  const KeyRuns& key = *window_[size_t(launches[0])].key;
  BatchDatapath& b = *batch_;
  try {
    key.runner->start(b, n, filled_by_all(launches, n));
    for (int i = 0; i < n; ++i) {
      const Windowed& w = window_[size_t(launches[i])];
      gathering(w);
      data.fill_vmem(*w.launch, [&](int addr) -> Tile& { return b.vmem.mem[addr][i]; });
      data.fill_mxu(*w.launch, b.mxu(i).wsram, b.mxu(i).asram);
    }
    key.runner->run(b, poll_);
    ++stats_.batches;
    const std::vector<int>& outputs = key.runner->outputs();
    for (int i = 0; i < n; ++i) {
      const Windowed& w = window_[size_t(launches[i])];
      for (size_t k = 0; k < outputs.size(); ++k) outputs_[w.outputs + k] = b.vmem.mem[outputs[k]][i];
      if (!w.check) continue;
      RunResult in_order = key.timing->counters;
      in_order.vmem_results.assign(outputs_.begin() + ptrdiff_t(w.outputs),
                                   outputs_.begin() + ptrdiff_t(w.outputs + outputs.size()));
      key.runner->more_results(b, i, in_order);
      gathering(w);
      check_same(
          in_order,
          run_validated(w.launch->image->bundle, fill(*w.launch), plan_.config, nullptr, poll_, w.load),
          w.number);
      ++stats_.checked;
    }
  } catch (const std::exception& e) {
    throw launch_error(*window_[size_t(launches[0])].launch, e);
  }
}

}  // namespace tinytpu::runtime
