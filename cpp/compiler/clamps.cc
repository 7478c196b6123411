#include "compiler/clamps.h"

#include <map>
#include <optional>

#include "compiler/op_table.h"
#include "compiler/value_ranges.h"

namespace tinytpu::compiler {

namespace {

bool signed_int(DType d) { return d == DType::kI8 || d == DType::kI16 || d == DType::kI32; }

class ClampFolder {
 public:
  explicit ClampFolder(TileProgram& p)
      : p_(p), uses_(node_uses(p).count), narrowing_of_(p.nodes.size(), -1) {}

  void run() {
    ranges_.emplace(p_);  // the selects' shifts: none may overflow
    for (int i = 0; i < int(p_.nodes.size()); ++i)
      if (p_.nodes[i].op == Op::WHERE && uses_[i] > 0) select(i);
    ranges_.emplace(p_);  // a bound moved past a narrowing MIN needs its operand within the narrow range
    for (int i = 0; i < int(p_.nodes.size()); ++i) {  // (casts after the selects: the selects match them)
      if (p_.nodes[i].op == Op::MAX && uses_[i] > 0) max_of_min(i);
      if (p_.nodes[i].op == Op::CAST && uses_[i] > 0) narrowed_sum(i);
    }
  }

 private:
  TileProgram& p_;
  std::vector<int> uses_;  // live readers (nodes and stores), kept as nodes are rewritten
  std::optional<ValueRanges> ranges_;
  std::vector<int> narrowing_of_;  // a select that is another node narrowed to its dtype: that node, else -1
  // Selects c ? K : v with a constant K, by (c, v): (the select, K).
  std::map<std::pair<int, int>, std::vector<std::pair<int, int64_t>>> selects_;

  const TileNode& node(int i) const { return p_.nodes[i]; }
  std::optional<int64_t> constant(int i) const { return int_constant(p_, i); }
  // Lanes that hold their node's values read as signed: a signed dtype, or values below 2^31 (tinygrad's
  // casts between int32 and uint32 keep the lanes' node).
  bool signed_lanes(int i) const {
    const auto& r = ranges_->range[i];
    return signed_int(node(i).dtype) || (r && r->lo >= 0 && r->hi <= INT32_MAX);
  }

  // Node i becomes `to`: its new operands are read, the old ones released (and theirs, when left unread).
  void rewrite(int i, const TileNode& to) {
    for (int o : {to.a, to.b, to.c})
      if (o >= 0) ++uses_[o];
    const TileNode old = p_.nodes[i];
    p_.nodes[i] = to;
    std::vector<int> unread;
    for (int o : {old.a, old.b, old.c})
      if (o >= 0 && --uses_[o] == 0) unread.push_back(o);
    while (!unread.empty()) {
      const TileNode& n = node(unread.back());
      unread.pop_back();
      for (int o : {n.a, n.b, n.c})
        if (o >= 0 && --uses_[o] == 0) unread.push_back(o);
    }
  }

  // v as u moved by a constant C, on the select's lanes of dtype `d`: (C, the node a MAX or MIN reads for
  // it). v is u (0, v); both constants (their difference, v); an ADD of u and a constant that cannot overflow
  // (C, v); or u narrowed to d (0, u: the MAX or MIN narrows its result the same way).
  struct Moved {
    int64_t by;
    int node;
  };
  std::optional<Moved> moved(int v, int u, DType d) const {
    if (v == u) return Moved{0, v};
    const auto cv = constant(v), cu = constant(u);
    if (cv && cu) return Moved{*cv - *cu, v};
    const TileNode& n = node(v);
    if (narrowing_of_[v] == u || (n.op == Op::CAST && n.a == u && n.dtype == d && signed_int(n.from)))
      return Moved{0, u};
    if (n.op == Op::ADD && signed_lanes(v) && ranges_->in_range[v])
      for (auto [x, c] : {std::pair{n.a, n.b}, {n.b, n.a}})
        if (x == u)
          if (auto k = constant(c)) return Moved{*k, v};
    return std::nullopt;
  }

  // w = c ? p : q. Noted when p is a constant (for a narrowing of it later), and a narrowing when c ? K : v
  // was noted with K narrowed to p; then rewritten as a MAX or MIN when c compares the branches.
  void select(int i) {
    const TileNode w = node(i);
    if (!signed_int(w.dtype)) return;
    if (auto k = constant(w.b)) {
      selects_[{w.a, w.c}].emplace_back(i, *k);
      const TileNode& cast = node(w.c);
      if (cast.op == Op::CAST && cast.dtype == w.dtype && signed_int(cast.from))
        if (auto it = selects_.find({w.a, cast.a}); it != selects_.end())
          for (auto [other, k_wide] : it->second)
            if (node(other).dtype == cast.from && wrap(w.dtype, k_wide) == *k) narrowing_of_[i] = other;
    }
    const TileNode& cond = node(w.a);
    if (cond.op != Op::CMPLT || !signed_int(cond.from)) return;
    for (int o : {cond.a, cond.b, w.b, w.c})
      if (!signed_lanes(o)) return;
    const int l = cond.a, r = cond.b;  // l < r ? p : q
    TileNode to{Op::MAX, w.dtype};
    auto pr = moved(w.b, r, w.dtype), ql = moved(w.c, l, w.dtype);
    if (pr && ql && pr->by == ql->by) {  // l < r ? r' : l'
      to.a = ql->node, to.b = pr->node;
    } else if (auto pl = moved(w.b, l, w.dtype), qr = moved(w.c, r, w.dtype); pl && qr && pl->by == qr->by) {
      to.op = Op::MIN;  // l < r ? l' : r'
      to.a = pl->node, to.b = qr->node;
    } else {
      return;
    }
    if (constant(to.a)) std::swap(to.a, to.b);  // the constant second
    rewrite(i, to);
  }

  // CAST(x + c) to an integer of n bits, c a multiple of 2^n: CAST(x) (x - c alike): the wrap drops c.
  void narrowed_sum(int i) {
    const TileNode cast = node(i);
    const int bits = cast.dtype == DType::kI8 || cast.dtype == DType::kU8     ? 8
                     : cast.dtype == DType::kI16 || cast.dtype == DType::kU16 ? 16
                                                                              : 0;
    const TileNode& sum = node(cast.a);
    if (!bits || !is_lane_int(cast.from) || (sum.op != Op::ADD && sum.op != Op::SUB)) return;
    for (auto [x, c] : {std::pair{sum.a, sum.b}, {sum.b, sum.a}}) {
      if (sum.op == Op::SUB && c == sum.a) continue;
      if (const auto k = constant(c); k && *k % (int64_t(1) << bits) == 0) {  // (x's lanes read as `from`)
        TileNode to = cast;
        to.a = x;
        rewrite(i, to);
        return;
      }
    }
  }

  // The constant operand of a two-operand op, and the other one.
  std::optional<std::pair<int, int>> with_constant(const TileNode& n) const {
    if (constant(n.b)) return std::pair{n.a, n.b};
    if (constant(n.a)) return std::pair{n.b, n.a};
    return std::nullopt;
  }

  // MAX(MIN(MAX(v, a), hi), lo) with a <= lo <= hi -> MAX(MIN(v, hi), lo): the inner MIN read only here and
  // within its dtype (its narrowing changes nothing), the inner MAX read only by it; the MIN then takes v's
  // dtype (it may leave the narrow range, which the outer MAX restores). Every node keeps its place: each
  // operand still comes before its reader.
  void max_of_min(int i) {
    const TileNode u = node(i);
    const auto outer = with_constant(u);
    if (!outer || !signed_int(u.dtype)) return;
    const auto [y, lo] = *outer;
    const TileNode& m = node(y);  // (the ops checked before their operands are read: a leaf has none)
    if (m.op != Op::MIN || uses_[y] != 1 || !ranges_->in_range[y]) return;
    const auto inner = with_constant(m);
    if (!inner) return;
    const auto [x, hi] = *inner;
    const TileNode& v = node(x);
    if (v.op != Op::MAX || uses_[x] != 1 || !signed_lanes(x)) return;
    const auto low = with_constant(v);
    if (!low || !(*constant(low->second) <= *constant(lo) && *constant(lo) <= *constant(hi))) return;
    rewrite(y, TileNode{Op::MIN, v.dtype, DType::kVoid, low->first, hi});
  }
};

}  // namespace

void fold_clamps(TileProgram& p) { ClampFolder(p).run(); }

}  // namespace tinytpu::compiler
