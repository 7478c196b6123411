#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/config.h"
#include "sim/trace.h"

namespace tinytpu {

// The chip's elapsed cycles when its cores (tinygrad's TINYTPU:0..cores-1) run kernels and copy data between
// them. Each core runs its kernels one after another, each as long as its own cycles (its launches, as the
// core's simulation counts them). A copy between two cores travels the ring NoC of the configuration
// (config_fields.def): it starts once the source core's work before it, the destination core's and the
// source's last copy out have ended; the destination core waits for it, the source core works on. Copies
// between the host and a core take no chip cycles (as loading a launch's records is part of its cycles).
// The ring's links are shared: each direction of each link carries one packet a cycle, so a copy whose way
// crosses a link another copy is still using starts late enough that its packets follow the other's (back-
// pressure, where the reference ChipNoC drops a packet for a full inbox). With noc_hop_cycles 0 the NoC is
// the reference's: one ring FIFO for the whole chip, one packet a cycle, each in its inbox the cycle after,
// so every copy takes turns with every other. Calls from several threads are safe.
class ChipTimeline {
 public:
  explicit ChipTimeline(const TensorCoreConfig& cfg);
  int cores() const { return int(clock_.size()); }

  // A kernel of `cycles` on `core`, after its work so far: returns the cycle it starts in.
  uint64_t run(int core, uint64_t cycles);
  // A copy of `bytes` from core `src` to core `dst`: returns the cycle it ends in. With a trace, the copy is
  // a slice on the destination core's NoC track.
  uint64_t copy(int src, int dst, uint64_t bytes, TraceLog* trace = nullptr);
  // Cycles a copy of `bytes` takes on an idle NoC: its packets sent one a cycle, the first reaching `dst`
  // after the send's cycle and noc_hop_cycles for each hop of the shorter way round, each taken in the cycle
  // it arrives. For one hop of one cycle that is the reference ChipNoC's: a packet readable two cycles after
  // its send.
  uint64_t copy_cycles(int src, int dst, uint64_t bytes) const;
  int hops(int src, int dst) const;
  // The way a copy goes: the shorter way round, clockwise (to higher core numbers) on a tie.
  bool clockwise(int src, int dst) const;

  uint64_t core_cycles(int core) const;  // when its work so far ends
  uint64_t chip_cycles() const;          // when every core's work so far ends
  uint64_t noc_bytes() const { return noc_bytes_; }
  void reset();  // every clock back to 0

 private:
  int core(int c, const char* what) const;
  uint64_t packets(uint64_t bytes) const;  // a copy's: noc_link_bytes each, at least one

  const int link_bytes_, hop_cycles_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> clock_, sending_;  // per core: its work's end, its last copy out's end
  // per link from core i: the first cycle it is free clockwise (i to i + 1) and counter-clockwise (to i - 1)
  std::vector<uint64_t> free_cw_, free_ccw_;
  uint64_t ring_free_ = 0;  // noc_hop_cycles 0: the reference's one ring FIFO
  uint64_t noc_bytes_ = 0;
};

}  // namespace tinytpu
