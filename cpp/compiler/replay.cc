#include "compiler/replay.h"

#include <array>
#include <cstring>
#include <limits>

namespace tinytpu::compiler {

namespace {

// Writes words into a shape's storage through a pointer (the words of a batch are millions, and a
// push_back per word was most of this pass's time), and element indices relative to their buffer's base (set
// by the first index seen).
class ShapeWriter {
 public:
  ShapeWriter(BatchShape& s, size_t max_words) : s_(s) {
    if (s.code.size() < max_words) s.code.resize(max_words);
    at_ = s.code.data();
  }
  size_t size() const { return size_t(at_ - s_.code.data()); }
  void put(int64_t v) { *at_++ = int32_t(v); }
  // False when an index is too far from its base to encode.
  bool index(int buf, int64_t index) {
    const int64_t rel = relative(buf, index);
    return fits(rel) && (put(rel), true);
  }
  // Lanes whose indices form a strided pattern, index(l) = i0 + (l % kRows) * col + (l / kRows) * row (16
  // consecutive elements, a 4x4 block, one repeated element): kStrided and its three numbers, else
  // kEachLane and each lane's index. indices(l) gives lane l's index.
  template <class Index>
  bool lanes(int buf, Index indices) {
    const int64_t i0 = indices(0), col = indices(1) - i0, row = indices(kRows) - i0;
    bool strided = fits(col) && fits(row);
    for (int l = 0; strided && l < kLanes; ++l)
      strided = indices(l) == i0 + (l % kRows) * col + (l / kRows) * row;
    if (strided) {
      put(kStrided);
      put(col);
      put(row);
      return index(buf, i0);
    }
    put(kEachLane);
    for (int l = 0; l < kLanes; ++l)
      if (!index(buf, indices(l))) return false;
    return true;
  }
  // Markers (a buffer slot is >= 0): a leaf of one constant, a leaf mixing constants and buffers; a lane
  // pattern.
  static constexpr int32_t kUniform = -2, kMixed = -3, kStrided = -4, kEachLane = -5;

 private:
  BatchShape& s_;
  int32_t* at_;
  int64_t relative(int buf, int64_t index) {
    if (buf < 0) return index;  // a constant lane's index (0), or a pin's store
    if (size_t(buf) >= s_.base.size()) s_.base.resize(buf + 1, BatchShape::kNoBase);
    if (s_.base[buf] == BatchShape::kNoBase) s_.base[buf] = index;
    return index - s_.base[buf];
  }
  static bool fits(int64_t v) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  }
};

// Two code words to a 64-bit word, in four independent streams: a batch's code is millions of words, and
// one multiply chain over them was most of this pass's time.
uint64_t hash_words(const int32_t* code, size_t size) {
  std::array<uint64_t, 4> h{0x9e3779b97f4a7c15ull ^ size, 1, 2, 3};
  auto mix = [](uint64_t& x, uint64_t w) {
    x = (x ^ w) * 0xff51afd7ed558ccdull;
    x ^= x >> 29;
  };
  const size_t words = size / 2;
  size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (size_t j = 0; j < 4; ++j) {
      uint64_t w;
      std::memcpy(&w, &code[2 * (i + j)], 8);
      mix(h[j], w);
    }
  for (size_t k = 2 * i; k < size; ++k) mix(h[0], uint32_t(code[k]));
  for (size_t j = 1; j < 4; ++j) mix(h[0], h[j]);
  return h[0];
}

// A kept shape's words as LEB128 bytes of their zigzag values. Most words are small (operands counted back
// from their node, markers, strides), so the budget keeps more of a kernel's large shapes: as words it kept
// too few of them, and equal ones were compiled twice.
std::vector<uint8_t> pack_words(const int32_t* code, size_t size) {
  std::vector<uint8_t> out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    uint32_t z = uint32_t(code[i]) << 1 ^ uint32_t(code[i] >> 31);
    for (; z >= 0x80; z >>= 7) out.push_back(uint8_t(z | 0x80));
    out.push_back(uint8_t(z));
  }
  out.shrink_to_fit();
  return out;
}
bool packed_equal(const std::vector<uint8_t>& packed, const int32_t* code, size_t size) {
  const uint8_t *at = packed.data(), *end = at + packed.size();
  for (size_t i = 0; i < size; ++i) {
    uint32_t z = 0;
    for (int shift = 0;; shift += 7) {
      if (at == end) return false;
      const uint8_t b = *at++;
      z |= uint32_t(b & 0x7F) << shift;
      if (b < 0x80) break;
    }
    if (int32_t(z >> 1 ^ (0u - (z & 1))) != code[i]) return false;
  }
  return at == end;
}

// Whether a batch fills bank 1, or else reads bank 2 (a part reads the pins of the cut before it, first).
bool fills_bank_1(const TileProgram& p) {
  for (const TileStore& st : p.stores)
    if (st.pin >= 0 && pin_bank(st.pin) != 0) return pin_bank(st.pin) == 1;
  for (const TileNode& n : p.nodes)
    if (n.pinned >= 0 && pin_bank(n.pinned) != 0) return pin_bank(n.pinned) == 2;
  return false;
}

}  // namespace

bool batch_shape(const TileProgram& p, BatchShape& s) {
  if (!p.mxu.empty()) return false;
  s.base.clear();
  // at most: a node's five words and a leaf's marker and three words per lane; a store's four words, its
  // active words, a marker and an index per lane
  constexpr size_t kActiveWords = (kLanes + 31) / 32;
  ShapeWriter w(s, p.nodes.size() * (5 + 1 + 3 * kLanes) + p.stores.size() * (4 + kActiveWords + 1 + kLanes));
  s.swapped = fills_bank_1(p);
  auto pin = [&](int number) { return s.swapped && number >= 0 ? other_bank(number) : number; };
  // Operands as their distance back from the node (0: none), which a kept shape packs in a byte or two.
  int64_t node = 0;
  auto back = [&](int operand) { return operand < 0 ? 0 : node - operand; };
  for (const TileNode& n : p.nodes) {  // every field of TileNode; the small ones in one word
    if (n.dynamic || n.mxu >= 0) return false;
    static_assert(int(Op::kCount) <= 64 && int(DType::kOther) < 16, "the packed word's field widths");
    w.put(int64_t(n.op) | int64_t(n.dtype) << 6 | int64_t(n.from) << 10 | int64_t(n.gated) << 14 |
          int64_t(n.reduce) << 15 | int64_t(n.axis) << 21 | int64_t(n.lane) << 23);
    for (int64_t v : {back(n.a), back(n.b), back(n.c), int64_t(pin(n.pinned))}) w.put(v);
    ++node;
    if (n.op != Op::LOAD) continue;
    const LeafLanes& lanes = p.lanes(n);
    const LeafLane& first = lanes[0];
    bool same = true;  // every lane of one buffer (or a constant), with equal bits
    for (const LeafLane& l : lanes) same = same && l.buf == first.buf && l.bits == first.bits;
    if (same && first.buf >= 0) {
      w.put(first.buf);
      w.put(int32_t(first.bits));
      if (!w.lanes(first.buf, [&](int l) { return lanes[l].index; })) return false;
      continue;
    }
    if (same) {  // one constant
      w.put(ShapeWriter::kUniform);
      w.put(int32_t(first.bits));
      continue;
    }
    w.put(ShapeWriter::kMixed);
    for (const LeafLane& l : lanes) {
      w.put(l.buf);
      w.put(int32_t(l.bits));
      if (l.buf >= 0 && !w.index(l.buf, l.index)) return false;  // a constant lane has no index
    }
  }
  for (const TileStore& st : p.stores) {  // every field of TileStore
    if (st.index_node >= 0) return false;
    for (int64_t v : {int64_t(st.buf), int64_t(st.value), int64_t(st.gate), int64_t(pin(st.pin))}) w.put(v);
    for (int l = 0; l < kLanes; l += 32) {  // the active lanes, 32 to a word
      uint32_t active = 0;
      for (int k = l; k < std::min(l + 32, kLanes); ++k) active |= uint32_t(st.active[k]) << (k - l);
      w.put(int32_t(active));
    }
    if (!w.lanes(st.buf, [&](int l) { return st.index[l]; })) return false;
  }
  s.size = w.size();
  s.hash = hash_words(s.code.data(), s.size);
  return true;
}

std::optional<ReplayCache::Hit> ReplayCache::find(const BatchShape& s) const {
  auto it = entries_.find(s.hash);
  if (it == entries_.end()) return std::nullopt;
  for (const auto& e : it->second) {
    if (e->words != s.size || e->base.size() != s.base.size() ||
        !packed_equal(e->code, s.code.data(), s.size))
      continue;
    std::vector<int64_t> shift(s.base.size(), 0);
    for (size_t b = 0; b < s.base.size(); ++b)
      if (s.base[b] != BatchShape::kNoBase) shift[b] = s.base[b] - e->base[b];
    return Hit{&e->batch, std::move(shift), s.swapped != e->swapped};
  }
  return std::nullopt;
}

const CompiledBatch* ReplayCache::add(const BatchShape& s, CompiledBatch b) {
  if (bytes_ + s.size + b.bounds.size() * sizeof(b.bounds[0]) > kBudgetBytes)
    return nullptr;  // a byte a word at least: not packed to find out
  std::vector<uint8_t> code = pack_words(s.code.data(), s.size);
  size_t bytes = code.size() + b.bounds.size() * sizeof(b.bounds[0]);
  if (bytes_ + bytes > kBudgetBytes) return nullptr;
  bytes_ += bytes;
  uint64_t h = s.hash;
  entries_[h].push_back(
      std::make_unique<Entry>(Entry{std::move(code), s.size, s.base, s.swapped, std::move(b)}));
  return &entries_[h].back()->batch;
}

}  // namespace tinytpu::compiler
