#pragma once
#include <array>
#include <cstdint>
#include <limits>

#include "base/config.h"
#include "isa/bundle.h"

namespace tinytpu {

// Bytes a record moves between HBM and the core: a VMEM tile of Int32 words, a WeightSRAM tile and an
// ActivationSRAM row of int8, an instruction in its 8-byte wire form, an output request's 4-byte address.
int record_bytes(const Record& r);
// Bytes an output line moves: a VMEM tile, an ActivationSRAM row, the MXU's result row of Int32.
int output_bytes(RecordType type);

// The DMA engine of a chip configuration's core (config.h hbm_channels): it moves a launch's records from
// HBM into the core and its output lines back. Its transfers go round-robin over the channels, one request
// a cycle from the engine; a channel takes one request a cycle, read or write, each moving
// hbm_bytes_per_cycle, and queues the rest. A read's data arrives hbm_latency cycles after its last
// request (HBMModel's readReq to readResp, hardware.md §6) and is visible the cycle after; a write is done
// with its last request (HBMModel's write is immediate). With hbm_shared a request holds its channel `cores`
// cycles: the core's slot in the chip's time-division arbiter and the other cores' (config_fields.def). Times
// are a launch's cycles; a prefetched launch's loading starts before its cycle 0, at negative times.
class DmaEngine {
 public:
  // `paused`: the last cycles before cycle 0 that the channels spend on the previous launch's writes
  // (LaunchLoad::writes_before): no read of this launch takes a channel then.
  explicit DmaEngine(const TensorCoreConfig& cfg, int64_t paused = 0);
  // A read of `bytes` requested at `issue`: the first cycle its data is visible.
  int64_t read(int bytes, int64_t issue);
  // The same, without taking the channel: when it would be visible.
  int64_t would_read(int bytes, int64_t issue) const;
  // A read's cycles from its first request to its data visible, when no transfer is in its way.
  int64_t read_cycles(int bytes) const;
  // A write of `bytes` requested at `issue`: the first cycle it is done.
  int64_t write(int bytes, int64_t issue);
  uint64_t bytes = 0;  // moved, both ways

 private:
  int64_t transfer(int bytes, int64_t issue);
  int64_t begin(int64_t cycles, int64_t issue) const;  // of a transfer of `cycles` on the next channel
  int64_t channel_cycles(int bytes) const;             // a transfer's hold of its channel
  const int channels_, bytes_per_cycle_, latency_;
  const int64_t slot_cycles_;  // a request's: 1, or the chip's cores when they share the channels
  const int64_t paused_;
  std::array<int64_t, TensorCoreConfig::kMaxHbmChannels> free_;  // per channel, its first free cycle
  int next_ = 0;                                                 // the next transfer's channel
};

// The SparseCore's lookups of table rows (config.h sparse_core): bags of one index, one at a time. A bag
// submitted in cycle T reads its row from HBM on the SparseCore's own port, requests in T+1.., and is done
// the cycle after the data; the row is in VMEM the cycle after that, when the next bag can be submitted.
class SparseCoreLookups {
 public:
  explicit SparseCoreLookups(const TensorCoreConfig& cfg);
  // When a row of `bytes` handed over at `issue` would be in VMEM.
  int64_t would_look_up(int bytes, int64_t issue) const;
  int64_t look_up(int bytes, int64_t issue);  // the same, submitting it
  int64_t lookup_cycles(int bytes) const;     // from a bag's submission to its row in VMEM
  uint64_t lookups = 0, bytes = 0;

 private:
  const int bytes_per_cycle_, latency_;
  int64_t free_ = std::numeric_limits<int64_t>::min();  // the first cycle a bag can be submitted
};

}  // namespace tinytpu
