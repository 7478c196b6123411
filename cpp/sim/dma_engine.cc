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
      paused_(paused) {
  free_.fill(std::numeric_limits<int64_t>::min());
}

namespace {
int64_t beats(int bytes, int bytes_per_cycle) { return (bytes + bytes_per_cycle - 1) / bytes_per_cycle; }
}  // namespace

int64_t hbm_beats(const TensorCoreConfig& cfg, int bytes) { return beats(bytes, cfg.hbm_bytes_per_cycle); }

int64_t DmaEngine::transfer(int n, int64_t issue) {
  const int64_t cycles = beats(n, bytes_per_cycle_);
  int64_t& free = free_[size_t(next_)];
  next_ = (next_ + 1) % channels_;
  int64_t begin = std::max(issue, free);
  if (begin < 0 && begin + cycles > -paused_) begin = 0;  // the previous launch's writes hold the channel
  free = begin + cycles;
  bytes += uint64_t(n);
  return free;
}

int64_t DmaEngine::read(int n, int64_t issue) { return transfer(n, issue) + latency_; }

int64_t DmaEngine::write(int n, int64_t issue) { return transfer(n, issue); }

}  // namespace tinytpu
