#include "sim/trace.h"

#include <algorithm>

#include "isa/tasm.h"

namespace tinytpu {

uint32_t TraceLog::intern(std::string_view name) {
  auto [it, added] = ids_.try_emplace(std::string(name), uint32_t(names_.size()));
  if (added) names_.emplace_back(name);
  return it->second;
}

uint32_t TraceLog::name(const char* literal, int index) {
  const uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(literal)) << 16 | uint16_t(index + 1);
  auto it = static_ids_.find(key);
  if (it != static_ids_.end()) return it->second;
  std::string full = literal;
  if (index >= 0) full += "[" + std::to_string(index) + "]";
  return static_ids_[key] = intern(full);
}

void TraceLog::record(TraceEvent e, bool may_stop) {
  const uint64_t stop = std::min(window_end, stopped_at_.value_or(UINT64_MAX));
  if (paused || e.begin >= stop || (e.begin < window_begin && e.end <= window_begin)) return;
  if (may_stop && max_events && !stopped_at_ && events_.size() >= max_events) {
    stopped_at_ = e.begin;  // what the run recorded from here on is dropped at end_run
    return;
  }
  e.begin = std::max(e.begin, window_begin);
  e.end = std::min(e.end, stop);
  e.core = core;
  events_.push_back(e);
}

void TraceLog::slice(Track t, int depth, uint64_t begin, uint64_t end, uint32_t name, int pc) {
  record({base + begin, base + end, name, int16_t(pc), uint8_t(t), uint8_t(depth)});
}

void TraceLog::span(Track t, int depth, uint64_t begin, uint64_t end, uint32_t name) {
  record({begin, end, name, -1, uint8_t(t), uint8_t(depth)}, false);
}

void TraceLog::state(Track t, int depth, uint64_t cycle, uint32_t name, int pc) {
  std::optional<TraceEvent>& o = open_[size_t(t)];
  if (o && o->name == name && o->pc == pc && o->depth == depth && o->end == base + cycle) {
    ++o->end;
    return;
  }
  close_state(t);
  o = TraceEvent{base + cycle, base + cycle + 1, name, int16_t(pc), uint8_t(t), uint8_t(depth)};
}

void TraceLog::close_state(Track t) {
  std::optional<TraceEvent>& o = open_[size_t(t)];
  if (o) record(*o);
  o.reset();
}

uint32_t TraceLog::instr_name(int pc, const Instr& in) {
  int64_t& cached = pc_names_[size_t(pc)];
  if (cached < 0) cached = intern(format_instr(in));
  return uint32_t(cached);
}

void TraceLog::begin_run() {
  pc_names_.fill(-1);
  run_first_event_ = events_.size();
}

void TraceLog::mxu_started(uint64_t first_busy_cycle, uint32_t name, int pc) {
  mxu_ = TraceEvent{base + first_busy_cycle, 0, name, int16_t(pc), uint8_t(Track::kMxu), 0};
}

void TraceLog::mxu_done(uint64_t cycle) {
  mxu_->end = base + cycle + 1;
  record(*mxu_);
  mxu_.reset();
}

void TraceLog::end_run(uint64_t cycles) {
  for (int t = 0; t < kNumTracks; ++t) close_state(Track(t));
  if (mxu_) mxu_done(cycles - 1);
  const uint64_t stop = std::min(base + cycles, stopped_at_.value_or(UINT64_MAX));
  // Slices reported before the one that reached the cap (a VPU op at its dispatch, after the FETCH of
  // the instruction that retired later) may begin after the stop.
  if (stopped_at_)
    events_.erase(std::remove_if(events_.begin() + run_first_event_, events_.end(),
                                 [&](const TraceEvent& e) { return e.begin >= stop; }),
                  events_.end());
  for (size_t i = run_first_event_; i < events_.size(); ++i) events_[i].end = std::min(events_[i].end, stop);
  base += cycles;
}

}  // namespace tinytpu
