#include "compiler/replay.h"

#include <array>
#include <cstring>
#include <limits>

namespace tinytpu::compiler {

namespace {

// Appends element indices relative to their buffer's base (set by the first index seen); false when
// one is too far from it to encode.
class ShapeWriter {
 public:
  explicit ShapeWriter(BatchShape& s) : s_(s) {}
  void put(int64_t v) { s_.code.push_back(int32_t(v)); }
  bool index(int buf, int64_t index) {
    if (buf < 0) return fits(index) && (put(index), true);  // a constant lane's index (0)
    if (size_t(buf) >= s_.base.size()) s_.base.resize(buf + 1, BatchShape::kNoBase);
    if (s_.base[buf] == BatchShape::kNoBase) s_.base[buf] = index;
    int64_t rel = index - s_.base[buf];
    return fits(rel) && (put(rel), true);
  }

 private:
  BatchShape& s_;
  static bool fits(int64_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  }
};

// Two code words to a 64-bit word, in four independent streams: a batch's code is millions of words, and
// one multiply chain over them was most of this pass's time.
uint64_t hash_words(const std::vector<int32_t>& code) {
  std::array<uint64_t, 4> h{0x9e3779b97f4a7c15ull ^ code.size(), 1, 2, 3};
  auto mix = [](uint64_t& x, uint64_t w) {
    x = (x ^ w) * 0xff51afd7ed558ccdull;
    x ^= x >> 29;
  };
  const size_t words = code.size() / 2;
  size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (size_t j = 0; j < 4; ++j) {
      uint64_t w;
      std::memcpy(&w, &code[2 * (i + j)], 8);
      mix(h[j], w);
    }
  for (size_t k = 2 * i; k < code.size(); ++k) mix(h[0], uint32_t(code[k]));
  for (size_t j = 1; j < 4; ++j) mix(h[0], h[j]);
  return h[0];
}

}  // namespace

std::optional<BatchShape> batch_shape(const TileProgram& p) {
  if (!p.mxu.empty()) return std::nullopt;
  BatchShape s;
  s.code.reserve(p.nodes.size() * 6 + p.leaves.size() * 3 * kLanes);
  ShapeWriter w(s);
  for (const TileNode& n : p.nodes) {  // every field of TileNode; the small ones in one word
    if (n.dynamic || n.mxu >= 0) return std::nullopt;
    static_assert(int(Op::kCount) <= 64 && int(DType::kOther) < 16, "the packed word's field widths");
    w.put(int64_t(n.op) | int64_t(n.dtype) << 6 | int64_t(n.from) << 10 | int64_t(n.gated) << 14 |
          int64_t(n.reduce) << 15 | int64_t(n.axis) << 21 | int64_t(n.lane) << 23);
    for (int64_t v : {int64_t(n.a), int64_t(n.b), int64_t(n.c), int64_t(n.pinned)}) w.put(v);
    if (n.op != Op::LOAD) continue;
    for (const LeafLane& l : p.lanes(n)) {
      w.put(l.buf);
      w.put(int32_t(l.bits));
      if (l.buf >= 0 && !w.index(l.buf, l.index)) return std::nullopt;  // a constant lane has no index
    }
  }
  for (const TileStore& st : p.stores) {  // every field of TileStore
    if (st.index_node >= 0) return std::nullopt;
    for (int64_t v : {int64_t(st.buf), int64_t(st.value), int64_t(st.gate), int64_t(st.pin)}) w.put(v);
    for (int l = 0; l < kLanes; l += 32) {  // the active lanes, 32 to a word
      uint32_t active = 0;
      for (int k = l; k < std::min(l + 32, kLanes); ++k) active |= uint32_t(st.active[k]) << (k - l);
      w.put(int32_t(active));
    }
    for (int64_t i : st.index)
      if (!w.index(st.buf, i)) return std::nullopt;
  }
  s.hash = hash_words(s.code);
  return s;
}

std::optional<ReplayCache::Hit> ReplayCache::find(const BatchShape& s) const {
  auto it = entries_.find(s.hash);
  if (it == entries_.end()) return std::nullopt;
  for (const auto& e : it->second) {
    if (e->shape.code != s.code || e->shape.base.size() != s.base.size()) continue;
    std::vector<int64_t> shift(s.base.size(), 0);
    for (size_t b = 0; b < s.base.size(); ++b)
      if (s.base[b] != BatchShape::kNoBase) shift[b] = s.base[b] - e->shape.base[b];
    return Hit{&e->batch, std::move(shift)};
  }
  return std::nullopt;
}

void ReplayCache::add(BatchShape s, CompiledBatch b) {
  size_t bytes = s.code.size() * sizeof(int32_t) + b.bounds.size() * sizeof(b.bounds[0]);
  if (bytes_ + bytes > kBudgetBytes) return;
  bytes_ += bytes;
  uint64_t h = s.hash;
  entries_[h].push_back(std::make_unique<Entry>(Entry{std::move(s), std::move(b)}));
}

}  // namespace tinytpu::compiler
