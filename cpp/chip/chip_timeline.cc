#include "chip/chip_timeline.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/errors.h"

namespace tinytpu {

ChipTimeline::ChipTimeline(const TensorCoreConfig& cfg)
    : link_bytes_(cfg.noc_link_bytes),
      hop_cycles_(cfg.noc_hop_cycles),
      clock_(size_t(cfg.cores), 0),
      sending_(size_t(cfg.cores), 0),
      free_cw_(size_t(cfg.cores), 0),
      free_ccw_(size_t(cfg.cores), 0) {
  cfg.check();
}

int ChipTimeline::core(int c, const char* what) const {
  if (c < 0 || c >= cores())
    throw SimError(std::string("chip: ") + what + " on core " + std::to_string(c) + " of a chip of " +
                   std::to_string(cores()) + " cores");
  return c;
}

int ChipTimeline::hops(int src, int dst) const {
  const int d = std::abs(core(src, "a copy") - core(dst, "a copy"));
  return std::min(d, cores() - d);
}

bool ChipTimeline::clockwise(int src, int dst) const {
  const int ahead = ((core(dst, "a copy") - core(src, "a copy")) % cores() + cores()) % cores();
  return 2 * ahead <= cores();
}

uint64_t ChipTimeline::packets(uint64_t bytes) const {
  return std::max<uint64_t>(1, (bytes + uint64_t(link_bytes_) - 1) / uint64_t(link_bytes_));
}

uint64_t ChipTimeline::copy_cycles(int src, int dst, uint64_t bytes) const {
  return packets(bytes) + 1 + uint64_t(hops(src, dst)) * uint64_t(hop_cycles_);
}

uint64_t ChipTimeline::run(int c, uint64_t cycles) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t start = clock_[size_t(core(c, "a kernel"))];
  clock_[size_t(c)] = start + cycles;
  return start;
}

uint64_t ChipTimeline::copy(int src, int dst, uint64_t bytes, TraceLog* trace) {
  const uint64_t cycles = copy_cycles(src, dst, bytes), sent = packets(bytes);
  const int step = clockwise(src, dst) ? 1 : -1;
  std::vector<uint64_t>& free = step > 0 ? free_cw_ : free_ccw_;
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t start = std::max({clock_[size_t(src)], clock_[size_t(dst)], sending_[size_t(src)]});
  // the packets enter the way's j-th link j hops after their send: each link must be free by then
  auto link = [&](int j) { return size_t(((src + j * step) % cores() + cores()) % cores()); };
  const uint64_t h = uint64_t(hop_cycles_);
  if (h == 0) {  // the reference's ring FIFO carries every packet of the chip
    start = std::max(start, ring_free_);
    ring_free_ = start + sent;
  }
  for (int j = 0; h > 0 && j < hops(src, dst); ++j)
    start = std::max(start, free[link(j)] - std::min(free[link(j)], j * h));
  for (int j = 0; h > 0 && j < hops(src, dst); ++j) free[link(j)] = start + j * h + sent;
  clock_[size_t(dst)] = sending_[size_t(src)] = start + cycles;
  noc_bytes_ += bytes;
  if (trace) {
    const uint16_t running = trace->core;
    trace->core = uint16_t(dst);
    trace->span(Track::kNoc, 0, start, start + cycles,
                trace->intern("copy " + std::to_string(bytes) + " B from core " + std::to_string(src)));
    trace->core = running;
  }
  return start + cycles;
}

uint64_t ChipTimeline::core_cycles(int c) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return clock_[size_t(core(c, "a clock"))];
}

uint64_t ChipTimeline::chip_cycles() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return *std::max_element(clock_.begin(), clock_.end());
}

void ChipTimeline::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::fill(clock_.begin(), clock_.end(), 0);
  std::fill(sending_.begin(), sending_.end(), 0);
  std::fill(free_cw_.begin(), free_cw_.end(), 0);
  std::fill(free_ccw_.begin(), free_ccw_.end(), 0);
  ring_free_ = 0;
  noc_bytes_ = 0;
}

}  // namespace tinytpu
