#include "sim/dma_engine.h"

#include <algorithm>
#include <limits>

namespace tinytpu {

namespace {
constexpr int kInstrBytes = 8;    // opcode and eight fields: 57 bits on the wire (hardware.md §4.2)
constexpr int kRequestBytes = 4;  // an output request's or the OUTPUT_MXU flag's one word
}  // namespace

int output_bytes(RecordType type) {
  constexpr int kRows = TensorCoreConfig::kRows;
  switch (type) {
    case RecordType::kOutputVmem:
      return 4 * TensorCoreConfig::kTileElems;
    case RecordType::kOutputAsram:
      return kRows;
    default:  // kOutputMxu
      return 4 * kRows;
  }
}

int record_bytes(const Record& r) {
  switch (r.type) {
    case RecordType::kVmemTile:
      return 4 * TensorCoreConfig::kTileElems;
    case RecordType::kWeightTile:
      return TensorCoreConfig::kTileElems;
    case RecordType::kActTile:
      return TensorCoreConfig::kRows;
    case RecordType::kWeightWords:
      return 4 * TensorCoreConfig::kTileElems;
    case RecordType::kActWords:
      return 4 * TensorCoreConfig::kRows;
    case RecordType::kInstr:
      return kInstrBytes;
    default:
      return kRequestBytes;
  }
}

DmaEngine::DmaEngine(const TensorCoreConfig& cfg, int64_t paused)
    : channels_(cfg.hbm_channels),
      bytes_per_cycle_(cfg.hbm_bytes_per_cycle),
      latency_(cfg.hbm_latency),
      slot_cycles_(cfg.hbm_shared ? cfg.cores : 1),
      paused_(paused) {
  free_.fill(std::numeric_limits<int64_t>::min());
}

namespace {
int64_t beats(int bytes, int bytes_per_cycle) { return (bytes + bytes_per_cycle - 1) / bytes_per_cycle; }
}  // namespace

int64_t DmaEngine::channel_cycles(int bytes) const { return beats(bytes, bytes_per_cycle_) * slot_cycles_; }

int64_t DmaEngine::begin(int64_t cycles, int64_t issue) const {
  const int64_t at = std::max(issue, free_[size_t(next_)]);
  return at < 0 && at + cycles > -paused_ ? 0 : at;  // the previous launch's writes hold the channel
}

int64_t DmaEngine::transfer(int n, int64_t issue) {
  const int64_t cycles = channel_cycles(n);
  const int64_t at = begin(cycles, issue);
  free_[size_t(next_)] = at + cycles;
  next_ = (next_ + 1) % channels_;
  bytes += uint64_t(n);
  return at + cycles;
}

int64_t DmaEngine::read(int n, int64_t issue) { return transfer(n, issue) + latency_; }

int64_t DmaEngine::would_read(int n, int64_t issue) const {
  return begin(channel_cycles(n), issue) + read_cycles(n);
}

int64_t DmaEngine::read_cycles(int n) const { return channel_cycles(n) + latency_; }

int64_t DmaEngine::write(int n, int64_t issue) { return transfer(n, issue); }

SparseCoreLookups::SparseCoreLookups(const TensorCoreConfig& cfg)
    : bytes_per_cycle_(cfg.hbm_bytes_per_cycle), latency_(cfg.hbm_latency) {}

int64_t SparseCoreLookups::would_look_up(int n, int64_t issue) const {
  return std::max(issue, free_) + lookup_cycles(n);
}

int64_t SparseCoreLookups::lookup_cycles(int n) const {
  return beats(n, bytes_per_cycle_) + latency_ + 2;  // done the cycle after the data, in VMEM the cycle after
}

int64_t SparseCoreLookups::look_up(int n, int64_t issue) {
  free_ = would_look_up(n, issue);
  ++lookups;
  bytes += uint64_t(n);
  return free_;
}

}  // namespace tinytpu
