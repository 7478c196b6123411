#include "compiler/node_facts.h"

#include <algorithm>

namespace tinytpu::compiler {

namespace {

// The signed values a signed integer lane may hold ([lo, hi]); unsigned and float nodes are not bounded.
struct ValueRange {
  int64_t lo, hi;
  bool within(const ValueRange& r) const { return lo >= r.lo && hi <= r.hi; }
};
using Ranges = std::vector<std::optional<ValueRange>>;

std::optional<ValueRange> dtype_range(DType d) {
  switch (d) {
    case DType::kI8:
      return ValueRange{INT8_MIN, INT8_MAX};
    case DType::kI16:
      return ValueRange{INT16_MIN, INT16_MAX};
    case DType::kI32:
      return ValueRange{INT32_MIN, INT32_MAX};
    default:
      return std::nullopt;
  }
}

// A leaf of constants in every lane: their least and greatest (lanes hold values sign-extended).
std::optional<ValueRange> constant_range(const TileProgram& p, const TileNode& n) {
  if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0 || !is_signed(n.dtype)) return std::nullopt;
  std::optional<ValueRange> r;
  for (const auto& l : p.lanes(n)) {
    if (l.buf >= 0) return std::nullopt;
    const int64_t v = int32_t(l.bits);
    r = r ? ValueRange{std::min(r->lo, v), std::max(r->hi, v)} : ValueRange{v, v};
  }
  return r;
}

// A select's value from its operands' b (taken where the condition holds) and c: p < q ? p : q is the
// smaller of the two, q < p ? p : q the larger, and any other select one of them.
ValueRange select_range(const TileProgram& p, const TileNode& n, const ValueRange& b, const ValueRange& c) {
  const TileNode& cond = p.nodes[n.a];
  if (cond.op == Op::CMPLT && cond.a == n.b && cond.b == n.c)
    return {std::min(b.lo, c.lo), std::min(b.hi, c.hi)};
  if (cond.op == Op::CMPLT && cond.a == n.c && cond.b == n.b)
    return {std::max(b.lo, c.lo), std::max(b.hi, c.hi)};
  return {std::min(b.lo, c.lo), std::max(b.hi, c.hi)};
}

// A signed integer node's value before any wrap, from its operands' ranges (`range`, in program order), or
// none where the op can leave its dtype's range.
std::optional<ValueRange> value_range(const TileProgram& p, const TileNode& n, const Ranges& range) {
  auto of = [&](int i) { return i >= 0 ? range[i] : std::nullopt; };
  const auto a = of(n.a), b = of(n.b), c = of(n.c);
  if (n.op == Op::LOAD) return constant_range(p, n);
  if (n.op == Op::CAST && a && is_signed(n.from)) return a;
  if (n.op == Op::MAX && a && b) return ValueRange{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
  if (n.op == Op::WHERE && b && c) return select_range(p, n, *b, *c);
  return std::nullopt;
}

// A cast read only by a select that takes it where its operand is within constant bounds, and the bounds
// otherwise (tinygrad writes x.clip(lo, hi).cast(int8) as WHERE(hi < y, hi, CAST(y)) with y = MAX(x, lo)):
// in range when its operand is, where the select takes it.
void guarded_casts(const TileProgram& p, const Ranges& range, std::vector<bool>& in_range) {
  std::optional<std::vector<int>> reads;
  for (const TileNode& w : p.nodes) {
    if (w.op != Op::WHERE || p.nodes[w.a].op != Op::CMPLT) continue;
    const TileNode &cond = p.nodes[w.a], &cast = p.nodes[w.c];
    const auto full = dtype_range(cast.dtype);
    if (cast.op != Op::CAST || !full || in_range[w.c] || !range[cast.a]) continue;
    const bool upper = cond.b == cast.a;  // hi < y ? .. : CAST(y); else y < lo ? .. : CAST(y)
    if (!upper && cond.a != cast.a) continue;
    const auto bound = constant_range(p, p.nodes[upper ? cond.a : cond.b]);
    if (!bound) continue;
    if (!reads) reads = node_uses(p).count;
    if ((*reads)[w.c] != 1) continue;
    const ValueRange& y = *range[cast.a];
    const ValueRange taken =
        upper ? ValueRange{y.lo, std::min(y.hi, bound->hi)} : ValueRange{std::max(y.lo, bound->lo), y.hi};
    in_range[w.c] = taken.within(*full);
  }
}

// The values of signed integer nodes, in program order (operands first), and in_range from them.
std::vector<bool> bound_values(const TileProgram& p) {
  std::vector<bool> in_range(p.nodes.size(), false);
  Ranges range(p.nodes.size());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const std::optional<ValueRange> full = dtype_range(p.nodes[i].dtype);
    if (!full) continue;
    const std::optional<ValueRange> r = value_range(p, p.nodes[i], range);
    in_range[i] = r && r->within(*full);
    range[i] = in_range[i] ? r : full;
  }
  guarded_casts(p, range, in_range);
  return in_range;
}

}  // namespace

NodeFacts::NodeFacts(const TileProgram& p) : to_vmem(p.nodes.size(), false), in_range(bound_values(p)) {
  uniform.reserve(p.nodes.size());
  for (const TileNode& n : p.nodes) uniform.push_back(uniform_bits(p, n));
  if (p.mxu.empty()) return;  // no MXU results (counting uses is a pass over a whole batch)
  const std::vector<int> reads = node_uses(p).count;
  for (const TileStore& st : p.stores) {
    const TileNode& n = p.nodes[st.value];
    if (n.op != Op::MXU_DOT || reads[st.value] != 1 || n.a >= 0) continue;
    const MxuDot& m = p.mxu[n.mxu];
    to_vmem[st.value] = m.single_dispatch() && !m.epilogue_op;
  }
}

}  // namespace tinytpu::compiler
