#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// A kernel's chunks mostly trace to the same tile program with each buffer's element indices moved by
// one amount (a shift per buffer: the next 16 points of an elementwise op, the next output row of a
// convolution). fuse_mxu, pack and lower compare element indices only for equality or order and
// otherwise copy them, so such a batch compiles to an earlier batch's launches with its indices
// shifted: it is replayed, not compiled again. Its plan runs the earlier batch's launches with its
// indices shifted (Plan::runs), which is exactly what compiling it would give.

// A batch's program with every element index taken relative to the first index of its buffer in the
// program (`base`): equal shapes differ only by a shift per buffer. No shape for batches whose compilation
// may depend on more than that: data-dependent gathers or scatters, and indices too far apart to encode.
// A leaf's or a store's lanes are written as a strided pattern (plan.h's StridedGather) when they form one.
struct BatchShape {
  std::vector<int32_t> code;  // the first `size` words (the rest is capacity kept for the next batch)
  size_t size = 0;
  std::vector<int64_t> base;  // per buffer slot; kNoBase where the buffer is not read or written
  // Pinned tile numbers are written as if the batch read bank 1 and filled bank 2 (tile_program.h
  // other_bank): true when it does the opposite, and its numbers were written exchanged.
  bool swapped = false;
  uint64_t hash = 0;
  static constexpr int64_t kNoBase = INT64_MIN;
};
// Writes p's shape into `s`, reusing its storage (a batch's shape is written for every batch, and most are
// replayed: the shape is then dropped). False when p has none.
[[nodiscard]] bool batch_shape(const TileProgram& p, BatchShape& s);

// What compiling a batch gave: its launches in the plan, and what the decision log counts of it.
struct CompiledBatch {
  int64_t first = 0, count = 0;  // Plan::launches
  // Per buffer slot, the least and greatest element a static gather reads (lanes not gated); empty when
  // none. A replayed batch's gathers are checked by them, as compiling would check its own.
  std::vector<std::pair<int64_t, int64_t>> bounds;
  int64_t stores = 0, packed_stores = 0, lane_reduces = 0, broadcasts = 0, spills = 0;
  std::map<std::string, int64_t> cuts;  // launches ended early, by the limit reached
};

// Compiled batches by shape.
class ReplayCache {
 public:
  struct Hit {
    const CompiledBatch* batch;
    std::vector<int64_t> shift;  // per buffer slot: this batch's indices minus the cached batch's
    bool swap_banks;             // this batch reads and fills the other banks
  };
  std::optional<Hit> find(const BatchShape& s) const;
  // Keeps a copy of s's words; the batch as kept, or null when the cache is full.
  const CompiledBatch* add(const BatchShape& s, CompiledBatch b);
  int64_t hits = 0;

 private:
  struct Entry {
    std::vector<uint8_t> code;  // the shape's words, packed (replay.cc pack_words)
    size_t words;
    std::vector<int64_t> base;
    bool swapped;
    CompiledBatch batch;
  };
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Entry>>> entries_;
  size_t bytes_ = 0;
  static constexpr size_t kBudgetBytes = size_t(256) << 20;  // shapes past it are compiled, not kept
};

}  // namespace tinytpu::compiler
