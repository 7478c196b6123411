#include "compiler/chunk_period.h"

#include <numeric>
#include <optional>

#include "compiler/kernel_buffers.h"
#include "compiler/op_table.h"

namespace tinytpu::compiler {

namespace {

// Sources of these ops only order the graph (a loop's parents, an AFTER's dependencies): no value flows
// through them.
bool orders_only(const Node& n, size_t src) {
  switch (n.op) {
    case Op::RANGE:
    case Op::AFTER:
      return src > 0;
    case Op::END:
    case Op::SINK:
    case Op::GROUP:
    case Op::NOOP:
    case Op::BARRIER:
    case Op::STACK:
      return true;
    default:
      return false;
  }
}

// Integer arithmetic that wraps at 32 bits or more: an element index it gives, moved by a shift that keeps it
// inside a buffer of fewer than 2^31 elements, is the index the wrapped arithmetic gives for the moved
// operands.
bool wide_int(DType d) { return d == DType::kI32 || d == DType::kU32 || d == DType::kIndex; }

// Per node, what the index arithmetic is before tracing: an integer known in every lane (folded while
// tracing, never a tile), and a value the same in every lane of every chunk.
struct IndexFacts {
  std::vector<bool> known;
  std::vector<std::optional<int64_t>> fixed;
};

IndexFacts index_facts(const Kernel& k, const std::vector<int64_t>& vals) {
  const auto& nodes = k.nodes;
  IndexFacts f{std::vector<bool>(nodes.size(), false), std::vector<std::optional<int64_t>>(nodes.size())};
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (!is_int_like(n.dtype)) continue;
    bool srcs_known = true, srcs_fixed = true;
    for (int s : n.src) {
      srcs_known = srcs_known && f.known[s];
      srcs_fixed = srcs_fixed && f.fixed[s].has_value();
    }
    const bool cast = n.op == Op::CAST && !n.src.empty() && is_int_like(nodes[n.src[0]].dtype);
    const Fold fold = op_info(n.op).fold;  // an integer ALU op's
    f.known[i] = n.op == Op::CONST || n.op == Op::RANGE || (n.op == Op::PARAM && !n.global) ||
                 ((cast || fold) && srcs_known);
    if (n.op == Op::CONST) f.fixed[i] = n.ivalue;
    if (n.op == Op::PARAM && !n.global) f.fixed[i] = vals[n.ivalue];
    if (cast && srcs_fixed) f.fixed[i] = wrap(n.dtype, *f.fixed[n.src[0]]);
    if (fold && srcs_fixed && !n.src.empty())
      f.fixed[i] = fold.one(n.dtype, *f.fixed[n.src[0]], n.src.size() > 1 ? *f.fixed[n.src[1]] : 0,
                            n.src.size() > 2 ? *f.fixed[n.src[2]] : 0);
  }
  return f;
}

// How far a lane-parallel range moves each buffer's element indices when it advances by one: the range's
// value followed through the nodes after it, as an index moved by a step or a pointer to a moved element.
class AffineSteps {
 public:
  AffineSteps(const Kernel& k, const IndexFacts& facts, const std::vector<int64_t>& sizes)
      : k_(k), facts_(facts), sizes_(sizes) {}
  // Per buffer slot, the step of `range`: none when the range is not affine, or when two INDEX nodes of one
  // buffer move differently.
  std::optional<std::vector<int64_t>> of(int range) {
    const size_t nodes = k_.nodes.size();
    moved_.assign(nodes, kNot);
    step_.assign(nodes, 0);
    slot_step_.assign(sizes_.size(), 0);
    indexed_.assign(sizes_.size(), false);
    for (int i = 0; i < int(nodes); ++i) {
      if (i == range) {
        moved_[i] = kIndex;
        step_[i] = 1;
      } else if (!follow(i)) {
        return std::nullopt;
      }
    }
    return slot_step_;
  }

 private:
  enum Moved : uint8_t { kNot, kIndex, kPointer };
  const Kernel& k_;
  const IndexFacts& facts_;
  const std::vector<int64_t>& sizes_;
  std::vector<uint8_t> moved_;
  std::vector<int64_t> step_;  // of a kIndex node
  std::vector<int64_t> slot_step_;
  std::vector<bool> indexed_;

  // Node i, given its sources: false when the range's value reaches it other than affinely.
  bool follow(int i) {
    const Node& n = k_.nodes[i];
    std::vector<size_t> from;  // source positions the range's value flows through
    for (size_t j = 0; j < n.src.size(); ++j)
      if (!orders_only(n, j) && moved_[n.src[j]] != kNot) from.push_back(j);
    if (n.op == Op::INDEX) return index(i, from);
    if (from.empty()) return true;
    switch (n.op) {
      case Op::AFTER:
        moved_[i] = moved_[n.src[0]];
        step_[i] = step_[n.src[0]];
        return true;
      case Op::LOAD:
      case Op::STORE:  // through the pointer only: what is loaded is data
        return from == std::vector<size_t>{0};
      default:
        return arithmetic(i, from);
    }
  }

  // An INDEX into a global buffer: its element index moves by the index operand's step (0 when unmoved),
  // the same step as the buffer's other INDEX nodes.
  bool index(int i, const std::vector<size_t>& from) {
    const auto& nodes = k_.nodes;
    const Node& n = nodes[i];
    const int base = pointer_base(k_, n.src[0]);
    if (base < 0 || nodes[base].op != Op::PARAM || !nodes[base].global)
      return from.empty();  // else a register's element
    const int slot = int(nodes[base].ivalue);
    int64_t by = 0;
    if (!from.empty()) {
      const int index = n.src[1];
      if (from != std::vector<size_t>{1} || moved_[index] != kIndex || !wide_int(nodes[index].dtype) ||
          sizes_[slot] > INT32_MAX)
        return false;
      by = step_[index];
      moved_[i] = kPointer;
    }
    if (indexed_[slot] && slot_step_[slot] != by) return false;
    indexed_[slot] = true;
    slot_step_[slot] = by;
    return true;
  }

  // ADD, SUB and NEG of moved indices and fixed values, MUL or SHL of one by a fixed value: a moved index
  // whose step is the operands' steps combined, when the arithmetic wraps no narrower than 32 bits.
  bool arithmetic(int i, const std::vector<size_t>& from) {
    const Node& n = k_.nodes[i];
    for (size_t j : from)
      if (moved_[n.src[j]] != kIndex) return false;
    // MUL, SHL: the other operand, fixed
    const bool has_factor = from.size() == 1 && n.src.size() == 2 && facts_.fixed[n.src[1 - from[0]]];
    const int64_t factor = has_factor ? *facts_.fixed[n.src[1 - from[0]]] : 0;
    int64_t by = 0;
    bool exact = wide_int(n.dtype);
    switch (n.op) {
      case Op::ADD:
      case Op::SUB:
        for (size_t j : {size_t(0), size_t(1)}) {
          const int s = n.src[j];
          exact = exact && (moved_[s] == kIndex || facts_.known[s]) &&
                  !__builtin_add_overflow(by, n.op == Op::SUB && j == 1 ? -step_[s] : step_[s], &by);
        }
        break;
      case Op::NEG:
        by = -step_[n.src[0]];
        break;
      case Op::MUL:
        exact = exact && has_factor && !__builtin_mul_overflow(step_[n.src[from[0]]], factor, &by);
        break;
      case Op::SHL:
        exact = exact && has_factor && from[0] == 0 && factor >= 0 && factor <= 30 &&
                !__builtin_mul_overflow(step_[n.src[0]], int64_t(1) << factor, &by);
        break;
      default:
        exact = false;
    }
    if (!exact) return false;
    moved_[i] = kIndex;
    step_[i] = by;
    return true;
  }
};

}  // namespace

ChunkPeriod chunk_period(const Kernel& k, const Chunking& c, const std::vector<int64_t>& vals,
                         const std::vector<int64_t>& sizes) {
  const int np = int(c.ranges.size());
  if (np == 0 || c.points == 0) return {};
  const IndexFacts facts = index_facts(k, vals);
  AffineSteps affine(k, facts, sizes);
  // The outer ranges are the first `outer` parallel ranges: each affine, and every chunk lies within one of
  // their points (the lanes of a chunk differ only in the other ranges). Failing that, the outermost range
  // alone, when its points do not fill whole chunks: `units` of its points do, and a chunk that many points
  // on has every lane's outermost range moved by `units` and the others' kept.
  std::vector<std::vector<int64_t>> steps;
  const int candidates = c.blocked ? np - 2 : np;
  for (int r = 0; r < candidates; ++r) {
    auto s = affine.of(c.ranges[r]);
    if (!s) break;
    steps.push_back(std::move(*s));
  }
  const auto& bounds = c.bounds;
  ChunkPeriod p;
  for (int outer = int(steps.size()); outer > 0 && p.chunks == 0; --outer) {
    int64_t inner = 1;  // points (linear) or chunks (blocked) per point of the outer ranges
    for (int r = outer; r < candidates; ++r) inner *= bounds[r];
    if (c.blocked)
      p.chunks = inner * c.block_cols() * c.block_rows();
    else if (inner % kLanes == 0)
      p.chunks = inner / kLanes;
    else if (outer == 1 && c.points % kLanes == 0)  // every lane of every chunk a point of the kernel
      p.units = std::lcm(inner, int64_t(kLanes)) / inner, p.chunks = p.units * inner / kLanes;
    if (p.chunks > 0) {
      p.bounds.assign(bounds.begin(), bounds.begin() + outer);
      p.steps.assign(steps.begin(), steps.begin() + outer);
    }
  }
  if (p.chunks == 0 || p.chunks >= c.chunks) return {};
  return p;
}

bool ChunkPeriod::shift(int64_t from, int64_t to, std::vector<int64_t>& by) const {
  by.assign(steps.empty() ? 0 : steps[0].size(), 0);
  int64_t f = from / chunks * units, t = to / chunks * units;
  for (int r = int(bounds.size()) - 1; r >= 0; --r) {
    const int64_t units = t % bounds[r] - f % bounds[r];
    f /= bounds[r];
    t /= bounds[r];
    for (size_t slot = 0; slot < by.size() && units != 0; ++slot) {
      int64_t moved;
      if (__builtin_mul_overflow(steps[r][slot], units, &moved) ||
          __builtin_add_overflow(by[slot], moved, &by[slot]))
        return false;
    }
  }
  return true;
}

}  // namespace tinytpu::compiler
