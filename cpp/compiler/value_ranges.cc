#include "compiler/value_ranges.h"

#include <algorithm>

namespace tinytpu::compiler {

namespace {

using Ranges = std::vector<std::optional<ValueRange>>;

// The values of an integer dtype; unsigned lanes hold them zero-extended, signed ones sign-extended.
std::optional<ValueRange> dtype_range(DType d) {
  switch (d) {
    case DType::kI8:
      return ValueRange{INT8_MIN, INT8_MAX};
    case DType::kI16:
      return ValueRange{INT16_MIN, INT16_MAX};
    case DType::kI32:
      return ValueRange{INT32_MIN, INT32_MAX};
    case DType::kU8:
      return ValueRange{0, UINT8_MAX};
    case DType::kU16:
      return ValueRange{0, UINT16_MAX};
    case DType::kU32:
      return ValueRange{0, UINT32_MAX};
    default:
      return std::nullopt;
  }
}

// A leaf of constants in every lane: their least and greatest.
std::optional<ValueRange> constant_range(const TileProgram& p, const TileNode& n) {
  if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0 || !dtype_range(n.dtype)) return std::nullopt;
  std::optional<ValueRange> r;
  for (const auto& l : p.lanes(n)) {
    if (l.buf >= 0) return std::nullopt;
    const int64_t v = is_signed(n.dtype) ? int64_t(int32_t(l.bits)) : int64_t(l.bits);
    r = r ? ValueRange{std::min(r->lo, v), std::max(r->hi, v)} : ValueRange{v, v};
  }
  return r;
}

// An operand's range as the node reading it reads its lanes: signed or unsigned as the node's dtype is. Lanes
// are 32 bits: ranges within [0, 2^31) read alike either way, and any lanes read as a 32-bit dtype are within
// its range. (ADD, SUB, MUL and casts need no such care: their value is the lanes' modulo 2^32 however read,
// and a result is in range only within a window of its dtype, of at most 2^32 values.)
std::optional<ValueRange> read_as(const std::optional<ValueRange>& r, DType operand, DType reader) {
  if (r && (is_signed(operand) == is_signed(reader) || (r->lo >= 0 && r->hi <= INT32_MAX))) return r;
  return reader == DType::kI32 || reader == DType::kU32 ? dtype_range(reader) : std::nullopt;
}

// A select's value from its operands' b (taken where the condition holds) and c: p < q ? p : q is the
// smaller of the two, q < p ? p : q the larger (the comparison reading the lanes as the select does), and any
// other select one of them.
ValueRange select_range(const TileProgram& p, const TileNode& n, const ValueRange& b, const ValueRange& c) {
  const TileNode& cond = p.nodes[n.a];
  const ValueRange either{std::min(b.lo, c.lo), std::max(b.hi, c.hi)};
  if (cond.op != Op::CMPLT || !read_as(either, cond.from, n.dtype)) return either;
  if (cond.a == n.b && cond.b == n.c) return {std::min(b.lo, c.lo), std::min(b.hi, c.hi)};
  if (cond.a == n.c && cond.b == n.b) return {std::max(b.lo, c.lo), std::max(b.hi, c.hi)};
  return either;
}

// The extremes of a * b over the two ranges, when no factor exceeds 2^31 in magnitude (products within
// int64).
std::optional<ValueRange> product_range(const ValueRange& a, const ValueRange& b) {
  constexpr int64_t kBound = int64_t(1) << 31;
  for (int64_t v : {a.lo, a.hi, b.lo, b.hi})
    if (v < -kBound || v > kBound) return std::nullopt;
  const int64_t p[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return ValueRange{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

// A right shift by a constant amount of a value known not negative (a logical shift of unsigned lanes, or an
// arithmetic one of signed lanes: monotonic either way).
std::optional<ValueRange> shift_range(const std::optional<ValueRange>& a,
                                      const std::optional<ValueRange>& b) {
  if (!a || !b || a->lo < 0 || b->lo != b->hi || b->lo < 0 || b->lo > 31) return std::nullopt;
  return ValueRange{a->lo >> b->lo, a->hi >> b->lo};
}

// An integer node's value before any wrap to its dtype, from its operands' ranges (`range`, in program
// order), or none where the analysis cannot follow it. A value whose range fits its dtype is what the lane
// holds.
std::optional<ValueRange> value_range(const TileProgram& p, const TileNode& n, const Ranges& range) {
  auto of = [&](int i) { return i >= 0 ? range[i] : std::nullopt; };
  auto as_read = [&](int i) { return i >= 0 ? read_as(range[i], p.nodes[i].dtype, n.dtype) : std::nullopt; };
  const auto a = of(n.a), b = of(n.b);
  switch (n.op) {
    case Op::LOAD:
      return constant_range(p, n);
    case Op::CAST:
      return dtype_range(n.from) ? a : std::nullopt;
    case Op::ADD:
      return a && b ? std::optional(ValueRange{a->lo + b->lo, a->hi + b->hi}) : std::nullopt;
    case Op::SUB:
      return a && b ? std::optional(ValueRange{a->lo - b->hi, a->hi - b->lo}) : std::nullopt;
    case Op::MUL:
      return a && b ? product_range(*a, *b) : std::nullopt;
    default:
      break;
  }
  // ops that compare or shift lanes: their operands as this node reads them
  const auto ra = as_read(n.a), rb = as_read(n.b), rc = as_read(n.c);
  switch (n.op) {
    case Op::MAX:  // (unsigned lanes: MAX_U32)
      return ra && rb ? std::optional(ValueRange{std::max(ra->lo, rb->lo), std::max(ra->hi, rb->hi)})
                      : std::nullopt;
    case Op::MIN:
      return ra && rb ? std::optional(ValueRange{std::min(ra->lo, rb->lo), std::min(ra->hi, rb->hi)})
                      : std::nullopt;
    case Op::WHERE:
      return rb && rc ? std::optional(select_range(p, n, *rb, *rc)) : std::nullopt;
    case Op::SHR:
      return shift_range(ra, b);
    default:
      return std::nullopt;
  }
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

}  // namespace

ValueRanges::ValueRanges(const TileProgram& p) : range(p.nodes.size()), in_range(p.nodes.size(), false) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const std::optional<ValueRange> full = dtype_range(p.nodes[i].dtype);
    if (!full) continue;
    const std::optional<ValueRange> r = value_range(p, p.nodes[i], range);
    in_range[i] = r && r->within(*full);
    range[i] = in_range[i] ? r : full;
  }
  guarded_casts(p, range, in_range);
}

std::optional<int64_t> int_constant(const TileProgram& p, int node) {
  const TileNode& n = p.nodes[node];
  if (!is_lane_int(n.dtype)) return std::nullopt;
  const auto bits = uniform_bits(p, n);
  if (!bits) return std::nullopt;
  return is_signed(n.dtype) ? int64_t(int32_t(*bits)) : int64_t(*bits);
}

}  // namespace tinytpu::compiler
