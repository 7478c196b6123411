#include "compiler/element_memo.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tinytpu::compiler {

ElementMemos::ElementMemos(const std::vector<int64_t>& sizes, std::set<int> written,
                           KeepDotOperands dot_operands, DotFactors dot_factors)
    : sizes_(sizes),
      written_(std::move(written)),
      dot_operands_(dot_operands),
      dot_factors_(dot_factors),
      slot_sizes_(sizes) {
  slot_sizes_.push_back(0);  // the counter slot (counter_slot): not gathered from as a buffer
  bfloat16_slots_.assign(slot_sizes_.size(), false);  // the kernel's buffers may hold anything
}

int ElementMemos::append(TileProgram& out, const TileNode& given) {
  if (derived_.size() > out.nodes.size()) {  // a compiled batch emptied `out`
    derived_.clear();
    derivations_.clear();
  }
  derived_.resize(out.nodes.size(), -1);  // and a resumed part added pinned leaves
  auto derived = [&](int o) { return o >= 0 && derived_[o] >= 0; };
  auto made = [&](const TileNode& t, const std::optional<Derivation>& d) {
    out.nodes.push_back(t);
    derived_.push_back(d ? int(derivations_.size()) : -1);
    if (d) derivations_.push_back(*d);
    return int(out.nodes.size()) - 1;
  };
  if (given.op == Op::LOAD || (!derived(given.a) && !derived(given.b) && !derived(given.c))) {
    // a leaf, or (most nodes) an operation with no element's function in sight
    return made(given, given.op == Op::LOAD ? derive(out, given) : std::nullopt);
  }
  TileNode t = given;
  for (int* o : {&t.a, &t.b, &t.c})
    if (derived(*o) && derivations_[derived_[*o]].memo_leaf >= 0) *o = derivations_[derived_[*o]].memo_leaf;
  const std::optional<Derivation> d = derive(out, t);
  if (!d)  // the operands meet other data here: those worth keeping are kept
    for (int* o : {&t.a, &t.b, &t.c})
      if (derived(*o)) *o = memoize(out, *o, t);
  return made(t, d);
}

int ElementMemos::FunctionTable::number(const Function& f) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t v : f) {
    h = (h ^ uint64_t(v)) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  if (2 * (functions_.size() + 1) > slots_.size()) {  // at most half full: grow and place them again
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), 0);
    std::vector<Function> all = std::move(functions_);
    functions_.clear();
    for (const Function& g : all) number(g);
  }
  const size_t mask = slots_.size() - 1;
  for (size_t at = h & mask;; at = (at + 1) & mask) {
    if (slots_[at] == 0) {
      functions_.push_back(f);
      return slots_[at] = int(functions_.size());
    }
    if (functions_[slots_[at] - 1] == f) return slots_[at];
  }
}

std::optional<ElementMemos::Derivation> ElementMemos::derive(const TileProgram& out, const TileNode& t) {
  if (t.op == Op::LOAD) {  // one element of a buffer the kernel does not write, in every lane (or per lane)
    if (t.dynamic || t.gated || t.pinned >= 0) return std::nullopt;
    const LeafLanes& lanes = out.lanes(t);
    const LeafLane& first = lanes[0];
    if (first.buf < 0 || first.buf >= counter_slot(sizes_) || written_.count(first.buf)) return std::nullopt;
    const int64_t key = functions_.number({int64_t(Op::LOAD), int64_t(t.dtype), first.buf});
    if (std::all_of(lanes.begin(), lanes.end(), [&](const LeafLane& l) { return l == first; }))
      return Derivation{key, first};
    if (dot_operands_ == KeepDotOperands::kNo ||
        !std::all_of(lanes.begin(), lanes.end(), [&](const LeafLane& l) { return l.buf == first.buf; }))
      return std::nullopt;
    return Derivation{key, {}, t.leaf};
  }
  FunctionTable::Function f{int64_t(t.op), int64_t(t.dtype), int64_t(t.from), 0, 0, 0};
  Derivation d;
  int i = 3;
  for (int o : {t.a, t.b, t.c}) {
    if (o < 0) continue;
    if (derived_[o] < 0) {  // a constant, or other data
      const auto bits = uniform_bits(out, out.nodes[o]);
      if (!bits) return std::nullopt;
      f[i++] = kConstant | int64_t(out.nodes[o].dtype) << 32 | *bits;
      continue;
    }
    const Derivation& od = derivations_[derived_[o]];
    if (d.key != 0 && !same_elements(out, d, od)) return std::nullopt;  // another element
    d.element = od.element;
    d.leaf = od.leaf;
    d.cost = std::min(d.cost + od.cost, 1 << 20);
    d.key = 1;
    f[i++] = od.key;
  }
  if (d.key == 0) return std::nullopt;  // constants alone (an operand read from a memo buffer is data)
  d.cost += 1;
  d.key = functions_.number(f);
  return d;
}

bool ElementMemos::same_elements(const TileProgram& out, const Derivation& x, const Derivation& y) {
  if (x.leaf < 0 || y.leaf < 0) return x.leaf == y.leaf && x.element == y.element;
  return x.leaf == y.leaf || out.leaves[size_t(x.leaf)] == out.leaves[size_t(y.leaf)];
}

ElementMemos::Memo& ElementMemos::memo(int64_t key, int buf) {
  Memo& m = memos_[key];
  if (m.buf < 0) {
    m.buf = buf;
    const size_t elements = size_t(sizes_[m.buf]);
    m.seen.assign(elements, false);
    m.stored.assign(elements, false);
    m.ready.assign(elements, false);
  }
  return m;
}

bool ElementMemos::add_slot(Memo& m, const TileProgram& out, int node) {
  if (m.slot >= 0) return true;
  const int64_t kept =
      std::accumulate(slot_sizes_.begin() + memo_slot(sizes_, 0), slot_sizes_.end(), int64_t(0));
  if (kept + int64_t(m.seen.size()) > kMaxElements) return false;
  m.slot = int(slot_sizes_.size());
  slot_sizes_.push_back(int64_t(m.seen.size()));
  // the slot holds one function's values: bfloat16s for every element when the function's are
  bfloat16_slots_.push_back(dot_factors_ == DotFactors::kBfloat16 && low_zero_bits(out, node) >= 16);
  return true;
}

int ElementMemos::memoize(TileProgram& out, int node, const TileNode& reader) {
  Derivation& d = derivations_[derived_[node]];
  const DType dtype = out.nodes[node].dtype;  // (a reference would not outlive the leaf pushed below)
  if (out.nodes[node].op == Op::LOAD) return node;
  // A float product's factor on a float MXU's core, else no element's value: a float32 (DotFactors::kFloat32)
  // or a bfloat16, whose bits may be an integer's (a BITCAST is no operation on lanes, and a bfloat16's
  // decoding ends in one).
  const bool bfloat16 = dot_factors_ == DotFactors::kBfloat16;
  const bool factor =
      dot_operands_ != KeepDotOperands::kNo && reader.op == Op::MUL && reader.dtype == DType::kF32 &&
      d.cost > 0 &&
      (bfloat16 ? dtype_bytes(dtype) == 4 && low_zero_bits(out, node) >= 16 : dtype == DType::kF32);
  if (d.leaf >= 0) return factor ? memoize_lanes(out, node) : node;
  // A bfloat16 factor the same in every lane (a matmul's row operand on a wide MXU) is kept from its first
  // sight too, whatever it costs.
  if (factor && bfloat16) return memoize_lanes(out, node);
  if (dtype != DType::kF32) return node;
  if (d.cost < kMinCost) return node;
  if (d.memo_leaf >= 0) return d.memo_leaf;
  ++uses_;
  Memo& m = memo(d.key, d.element.buf);
  const int64_t e = d.element.index;
  if (m.ready[e]) {  // one gather in place of the operations
    Lanes index;
    index.fill(e);
    return kept_leaf(out, d, m.slot, index);
  }
  d.cost = 0;  // decided for this node: computed here, and stored below when seen before
  const bool again = m.seen[e] && !m.stored[e];
  m.seen[e] = true;
  if (!again || !add_slot(m, out, node)) return node;
  TileStore keep{m.slot, {}, {}, node};
  keep.index.fill(e);
  keep.active[0] = true;  // the element is in every lane: one stores it
  m.stored[e] = true;
  if (m.pending.empty()) pending_memos_.push_back(&m);
  m.pending.push_back(e);
  out.stores.push_back(keep);
  return node;
}

// Read from the memo buffer when every lane's element was kept by an earlier batch (or kept is assumed); else
// computed here, and the elements not kept yet stored, each by one lane.
int ElementMemos::memoize_lanes(TileProgram& out, int node) {
  Derivation& d = derivations_[derived_[node]];
  if (d.memo_leaf >= 0) return d.memo_leaf;
  ++uses_;
  Lanes index;  // (a copy: making a leaf below may move the leaves)
  int buf = d.element.buf;
  if (d.leaf >= 0) {
    const LeafLanes& elements = out.leaves[size_t(d.leaf)];
    for (int l = 0; l < kLanes; ++l) index[l] = elements[l].index;
    buf = elements[0].buf;
  } else {
    index.fill(d.element.index);
  }
  Memo& m = memo(d.key, buf);
  const bool assumed = dot_operands_ == KeepDotOperands::kAssumed && add_slot(m, out, node);
  if (assumed || (m.slot >= 0 && std::all_of(index.begin(), index.end(),
                                             [&](int64_t e) { return bool(m.ready[size_t(e)]); })))
    return kept_leaf(out, d, m.slot, index);
  if (!add_slot(m, out, node)) return node;
  d.cost = 0;  // decided for this node: computed here (memoize() asks no more)
  TileStore keep{m.slot, index, {}, node};
  for (int l = 0; l < kLanes; ++l) {
    const int64_t e = index[l];
    if (m.stored[e]) continue;
    keep.active[l] = m.stored[e] = true;
    if (m.pending.empty()) pending_memos_.push_back(&m);
    m.pending.push_back(e);
  }
  if (std::find(keep.active.begin(), keep.active.end(), true) != keep.active.end()) {
    out.stores.push_back(keep);
    operands_stored_ = true;
  }
  return node;
}

// A leaf reading the node's kept value: lane l gathers element index[l] of the memo buffer in `slot`.
int ElementMemos::kept_leaf(TileProgram& out, Derivation& d, int slot, const Lanes& index) {
  TileNode leaf{Op::LOAD, DType::kF32};
  LeafLanes& lanes = out.lanes(leaf);
  for (int l = 0; l < kLanes; ++l) lanes[l] = LeafLane(slot, index[l]);
  out.nodes.push_back(leaf);
  derived_.push_back(-1);
  ++reads_;
  return d.memo_leaf = int(out.nodes.size()) - 1;
}

int64_t ElementMemos::batch_compiled() {
  operands_stored_ = false;
  for (Memo* m : pending_memos_) {
    for (int64_t e : m->pending) m->ready[e] = true;
    m->pending.clear();
  }
  pending_memos_.clear();
  return std::exchange(uses_, 0);
}

}  // namespace tinytpu::compiler
