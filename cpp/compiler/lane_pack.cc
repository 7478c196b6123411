#include "compiler/lane_pack.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/cost.h"
#include "compiler/op_table.h"
#include "isa/instr_builders.h"

namespace tinytpu::compiler {

namespace {

constexpr int kMaxTree = 48;   // nodes of a packed tree, repeats counted: bounds what packing recomputes
constexpr int kMaxDag = 1024;  // distinct nodes of a tree packed whole (stores, replicated values)

using LaneSet = std::array<bool, kLanes>;
struct LaneSrc {
  int src = -1;  // which source tree feeds the packed lane; -1: padding
  int lane = 0;  // and from which of its lanes
};
using LaneMap = std::array<LaneSrc, kLanes>;

// Whether a node may be computed in other lanes than its own: a lane-wise op or a plain gather.
bool movable(const TileNode& n) {
  return n.op != Op::MXU_DOT && n.op != Op::LANE_REDUCE && n.op != Op::LANE_BROADCAST &&
         !(n.op == Op::LOAD && (n.dynamic || n.pinned >= 0));
}

// Rebuilds a program into `out`: nodes copied one by one in program order (operands remapped), plus
// packed trees made from the input's nodes. A pass first looks for what to pack and calls begin() only when
// it found something: a pass with nothing to pack leaves the program as it is, without copying it.
class Builder {
 public:
  explicit Builder(const TileProgram& in) : in_(in), remap_(in.nodes.size(), -1) {}
  void begin() {
    out.mxu = in_.mxu;
    out.leaves = in_.leaves;              // copied nodes keep their leaves; packed ones add theirs
    out.nodes.reserve(in_.nodes.size());  // nodes are large: one allocation, not log n copies
  }
  TileProgram out;

  int add(const TileNode& t) {
    out.nodes.push_back(t);
    return int(out.nodes.size()) - 1;
  }
  void copy(int i) {             // operands come earlier in program order, so they are already copied
    if (remap_[i] >= 0) return;  // a constant leaf a packed tree made first
    TileNode t = in_.nodes[i];
    for (int* o : {&t.a, &t.b, &t.c})
      if (*o >= 0) *o = remap_[*o];
    remap_[i] = add(t);
  }
  void set(int i, int node) { remap_[i] = node; }
  int at(int i) const { return remap_[i]; }
  TileStore copy_store(TileStore s) const {
    for (int* o : {&s.value, &s.gate, &s.index_node})
      if (*o >= 0) *o = remap_[*o];
    return s;
  }

  bool movable(int i) const { return compiler::movable(in_.nodes[i]); }
  // Same ops on the same operand positions down to the leaves, within `budget` nodes.
  bool isomorphic(int x, int y, int& budget) const {
    if (--budget < 0 || !movable(x) || !movable(y)) return false;
    const TileNode &a = in_.nodes[x], &b = in_.nodes[y];
    if (a.op != b.op || a.dtype != b.dtype || a.from != b.from) return false;
    if (a.op == Op::LOAD) return true;
    for (auto [p, q] : {std::pair{a.a, b.a}, {a.b, b.b}, {a.c, b.c}})
      if ((p < 0) != (q < 0) || (p >= 0 && !isomorphic(p, q, budget))) return false;
    return true;
  }
  // The same, for graphs that share nodes: each pair of positions is compared once, and `budget` bounds
  // the distinct pairs.
  bool isomorphic_dag(int x, int y, int budget) const {
    std::set<std::pair<int, int>> seen;
    std::vector<std::pair<int, int>> todo{{x, y}};
    while (!todo.empty()) {
      auto [p, q] = todo.back();
      todo.pop_back();
      if (!seen.insert({p, q}).second) continue;
      if (int(seen.size()) > budget || !movable(p) || !movable(q)) return false;
      const TileNode &a = in_.nodes[p], &b = in_.nodes[q];
      if (a.op != b.op || a.dtype != b.dtype || a.from != b.from) return false;
      if (a.op == Op::LOAD) continue;
      for (auto [u, v] : {std::pair{a.a, b.a}, {a.b, b.b}, {a.c, b.c}}) {
        if ((u < 0) != (v < 0)) return false;
        if (u >= 0) todo.push_back({u, v});
      }
    }
    return true;
  }
  // Nodes of the tree under x counted with repeats, or kMaxTree + 1 when it is larger or not movable.
  int tree_size(int x) const {
    int budget = kMaxTree;
    return isomorphic(x, x, budget) ? kMaxTree - budget : kMaxTree + 1;
  }

  // The isomorphic trees `roots` computed side by side: packed lane l is lane map[l].lane of
  // roots[map[l].src]. Leaves gather accordingly (padding lanes hold `pad`); ops are rebuilt on top.
  // `pad`: what padding lanes must hold (a reduction's identity), or nothing when no one reads them.
  int pack(const std::vector<int>& roots, const LaneMap& map, std::optional<uint32_t> pad) {
    std::map<std::vector<int>, int> memo;
    return pack(roots, map, pad, memo);
  }
  int constant(DType d, const LaneSet& lanes, uint32_t on, uint32_t off) {
    TileNode t{Op::LOAD, d};
    LeafLanes& bits = out.lanes(t);
    for (int l = 0; l < kLanes; ++l) bits[l].bits = lanes[l] ? on : off;
    return add(t);
  }

 private:
  const TileProgram& in_;
  std::vector<int> remap_;

  int pack(const std::vector<int>& ids, const LaneMap& map, std::optional<uint32_t> pad,
           std::map<std::vector<int>, int>& memo) {
    if (auto it = memo.find(ids); it != memo.end()) return it->second;
    const TileNode& first = in_.nodes[ids[0]];
    int made;
    if (first.op == Op::LOAD) {
      bool shared = std::all_of(ids.begin(), ids.end(), [&](int i) { return i == ids[0]; });
      auto bits = uniform_bits(in_, in_.nodes[ids[0]]);
      bool padded = std::any_of(map.begin(), map.end(), [](const LaneSrc& s) { return s.src < 0; });
      if (shared && bits && (!pad || !padded || *bits == *pad)) {  // the same in every lane, padding included
        copy(ids[0]);
        return memo[ids] = remap_[ids[0]];
      }
      TileNode t{Op::LOAD, first.dtype};
      LeafLanes& leaf = out.lanes(t);
      for (int l = 0; l < kLanes; ++l) {
        if (map[l].src < 0) {
          leaf[l].bits = pad.value_or(0);
          continue;
        }
        const TileNode& s = in_.nodes[ids[map[l].src]];
        leaf[l] = in_.lanes(s)[map[l].lane];
        t.gated = t.gated || s.gated;
      }
      made = add(t);
    } else {
      TileNode t = first;
      for (int TileNode::*operand : {&TileNode::a, &TileNode::b, &TileNode::c}) {
        if (first.*operand < 0) continue;
        std::vector<int> sub;
        for (int i : ids) sub.push_back(in_.nodes[i].*operand);
        t.*operand = pack(sub, map, pad, memo);
      }
      made = add(t);
    }
    return memo[ids] = made;
  }
};

std::vector<int> lanes_of(const LaneSet& s) {
  std::vector<int> v;
  for (int l = 0; l < kLanes; ++l)
    if (s[l]) v.push_back(l);
  return v;
}

// Consecutive stores to one buffer with equal live lanes and isomorphic values, at distinct elements,
// become one store at the position of the group's last (their values read only leaves and tiles).
std::optional<TileProgram> pack_stores(const TileProgram& p) {
  Builder b(p);
  auto plain = [&](const TileStore& s) { return s.gate < 0 && s.index_node < 0 && s.pin < 0 && s.buf >= 0; };
  std::vector<size_t> ends;  // the groups of stores, [previous end, end)
  for (size_t s = 0; s < p.stores.size();) {
    const TileStore& head = p.stores[s];
    std::vector<int> lanes = lanes_of(head.active);
    size_t e = s + 1;
    if (plain(head) && !lanes.empty() && 2 * lanes.size() <= kLanes &&
        b.isomorphic_dag(head.value, head.value, kMaxDag)) {
      std::set<int64_t> elements;
      for (int l : lanes) elements.insert(head.index[l]);
      for (; e < p.stores.size() && (e - s + 1) * lanes.size() <= kLanes; ++e) {
        const TileStore& st = p.stores[e];
        if (!plain(st) || st.buf != head.buf || st.active != head.active ||
            !b.isomorphic_dag(head.value, st.value, kMaxDag))
          break;
        bool distinct = true;
        for (int l : lanes) distinct = elements.insert(st.index[l]).second && distinct;
        if (!distinct) break;
      }
    }
    ends.push_back(e);
    s = e;
  }
  if (ends.size() == p.stores.size()) return std::nullopt;  // every group a single store
  b.begin();
  for (size_t i = 0; i < p.nodes.size(); ++i) b.copy(int(i));
  size_t s = 0;
  for (size_t e : ends) {
    const TileStore& head = p.stores[s];
    if (e == s + 1) {
      b.out.stores.push_back(b.copy_store(head));
      ++s;
      continue;
    }
    std::vector<int> lanes = lanes_of(head.active);
    TileStore packed{head.buf, {}, {}, -1};
    LaneMap map;
    std::vector<int> roots;
    for (size_t j = 0; j < e - s; ++j) {
      roots.push_back(p.stores[s + j].value);
      for (size_t i = 0; i < lanes.size(); ++i) {
        size_t l = j * lanes.size() + i;
        map[l] = {int(j), lanes[i]};
        packed.index[l] = p.stores[s + j].index[lanes[i]];
        packed.active[l] = true;
      }
    }
    packed.value = b.pack(roots, map, std::nullopt);  // padding lanes are not stored
    b.out.stores.push_back(packed);
    s = e;
  }
  return std::move(b.out);
}

// A value replicated across lanes: the same in every live lane of the tile, of each row, or of each
// column (a matmul's row operand in a 4x4 output block, a broadcast scalar). nullopt: none of these.
using Replication = std::optional<LaneAxis>;

Replication leaf_replication(const LeafLanes& lanes, const LaneSet& live) {
  bool tile = true, row = true, col = true;
  std::array<int, kLanes> first;  // per row / column / tile: its first live lane
  first.fill(-1);
  for (int l = 0; l < kLanes; ++l) {
    if (!live[l]) continue;
    int r = l / kRows, c = l % kRows;
    auto same = [&](int& f) { return f < 0 ? (f = l, true) : lanes[f] == lanes[l]; };
    row = same(first[r]) && row;
    col = same(first[kRows + c]) && col;
    tile = same(first[2 * kRows]) && tile;
  }
  if (tile) return LaneAxis::kTile;
  if (row) return LaneAxis::kRow;
  if (col) return LaneAxis::kCol;
  return std::nullopt;
}

// A lane-wise op's replication: what all its operands share.
Replication meet(Replication x, Replication y) {
  if (!x || !y) return std::nullopt;
  if (*x == LaneAxis::kTile) return y;
  if (*y == LaneAxis::kTile || *x == *y) return x;
  return std::nullopt;
}

// Every node's replication: a leaf's from its lanes, a lane-wise op's from its operands; none for what
// cannot move between lanes.
std::vector<Replication> replication(const TileProgram& p, const NodeUses& uses) {
  std::vector<Replication> rep(p.nodes.size());
  for (int i = 0; i < int(p.nodes.size()); ++i) {
    const TileNode& n = p.nodes[i];
    if (!movable(n)) continue;
    if (n.op == Op::LOAD) {
      rep[i] = leaf_replication(p.lanes(n), uses.live[i]);
      continue;
    }
    Replication r = LaneAxis::kTile;
    for (int o : {n.a, n.b, n.c})
      if (o >= 0) r = meet(r, rep[o]);
    rep[i] = r;
  }
  return rep;
}

// What both packers read of a program: found once, and again only for a program one of them packed.
struct LaneFacts {
  NodeUses uses;
  std::vector<Replication> rep;
  explicit LaneFacts(const TileProgram& p) : uses(node_uses(p)), rep(replication(p, uses)) {}
};

// Reductions the VPU's cross-lane ops do exactly (the op table's reduce columns).
bool reducible(Op op, DType d) {
  const OpInfo& o = op_info(op);
  if (d == DType::kF32) return o.f32_reduce.has_value();
  return is_lane_int(d) && o.int_reduce && !(o.signed_reduce && d == DType::kU32);
}
uint32_t identity(Op op, DType d) { return op_info(op).identity(d); }

struct Reduction {
  std::vector<int> terms;  // isomorphic: packed
  std::vector<int> rest;   // the others (a bias added to a sum, say): combined after the reduce
  // A float MAX is a fold in order, max(...max(max(init, t_0), t_1)..., t_{n-1}): its start (-1: the
  // identity), combined before the terms.
  int init = -1;
  bool ordered = false;
  LaneAxis axis;
  std::vector<std::vector<int>> groups;  // output lanes, one group per cross-lane reduce
  // kPair: the one store of the result, whose j-th output lane moves to lane 2j (two lanes an output)
  int store = -1;
};

class ReductionPacker {
 public:
  ReductionPacker(const TileProgram& p, const LaneFacts& facts)
      : p_(p), b_(p), uses_(facts.uses), rep_(facts.rep) {}

  std::optional<TileProgram> run() {
    std::map<int, Reduction> plans;
    std::vector<bool> absorbed(p_.nodes.size(), false);
    for (int root = int(p_.nodes.size()) - 1; root >= 0; --root)
      if (!absorbed[root] && reducible(p_.nodes[root].op, p_.nodes[root].dtype))
        if (auto r = plan(root, absorbed)) plans[root] = *r;
    if (plans.empty()) return std::nullopt;
    b_.begin();
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      auto it = plans.find(i);
      if (it == plans.end())
        b_.copy(i);
      else
        b_.set(i, emit(p_.nodes[i], it->second));
    }
    for (const auto& s : p_.stores) b_.out.stores.push_back(b_.copy_store(s));
    for (const auto& [root, red] : plans) {
      if (red.store < 0) continue;
      TileStore& st = b_.out.stores[red.store];
      const TileStore was = st;
      st.active.fill(false);
      const std::vector<int>& out = red.groups[0];
      for (size_t j = 0; j < out.size(); ++j) {
        st.index[2 * j] = was.index[out[j]];
        st.active[2 * j] = true;
      }
    }
    return std::move(b_.out);
  }

 private:
  const TileProgram& p_;
  Builder b_;
  const NodeUses& uses_;
  const std::vector<Replication>& rep_;
  // Nodes plan() has counted in the current chain's term trees (cleared after each: a set per chain
  // allocated a node per element and dominated packing of large batches).
  std::vector<bool> walked_ = std::vector<bool>(p_.nodes.size(), false);

  // The store that alone reads `root`, as its plain value (its lanes can be moved), or -1.
  int sole_store(int root) const {
    if (uses_.count[root] != 1) return -1;
    for (int s = 0; s < int(p_.stores.size()); ++s) {
      const TileStore& st = p_.stores[s];
      if (st.value == root && st.gate < 0 && st.index_node < 0 && st.pin < 0 && st.buf >= 0) return s;
    }
    return -1;
  }

  // A chain of `r`'s op, flattened left to right, without recursion (chains can be long). An inner chain has
  // the same lanes and fewer terms: absorbed. A float sum or product links only ops from a REDUCE
  // (TileNode::reassociable): one the user wrote keeps tinygrad's order, so it is its root's two terms.
  void flatten(int root, Reduction& red, std::vector<bool>& absorbed) const {
    const TileNode& r = p_.nodes[root];
    const bool float_sum = is_float(r.dtype) && (r.op == Op::ADD || r.op == Op::MUL);
    auto link = [&](int i) {
      const TileNode& n = p_.nodes[i];
      return i == root || (n.op == r.op && n.dtype == r.dtype && uses_.count[i] == 1 &&
                           (!float_sum || (r.reassociable && n.reassociable)));
    };
    if (red.ordered) {  // along the left operands: max(acc, t) keeps acc unless t is greater (a NaN t is not)
      int i = root;
      for (; link(i); i = p_.nodes[i].a) {
        absorbed[i] = true;
        red.terms.push_back(p_.nodes[i].b);
      }
      std::reverse(red.terms.begin(), red.terms.end());
      red.init = i;
      return;
    }
    std::vector<int> todo{root};
    while (!todo.empty()) {
      int i = todo.back();
      todo.pop_back();
      if (link(i)) {
        absorbed[i] = true;
        todo.push_back(p_.nodes[i].b);
        todo.push_back(p_.nodes[i].a);
      } else {
        red.terms.push_back(i);
      }
    }
  }

  std::optional<Reduction> plan(int root, std::vector<bool>& absorbed) {
    const TileNode& r = p_.nodes[root];
    Reduction red;
    red.ordered = r.op == Op::MAX && is_float(r.dtype);
    flatten(root, red, absorbed);
    std::vector<int> out = lanes_of(uses_.live[root]);
    drop_identities(r, out, red);
    if (out.empty() || red.terms.size() < 2) return std::nullopt;
    int ref = red.terms[red.terms.size() / 2], size = b_.tree_size(ref);
    if (size > kMaxTree) return std::nullopt;
    auto odd = std::stable_partition(red.terms.begin(), red.terms.end(), [&](int t) {
      int budget = kMaxTree;
      return b_.isomorphic(ref, t, budget);
    });
    red.rest.assign(odd, red.terms.end());
    red.terms.erase(odd, red.terms.end());
    if (red.terms.size() < 2 || (red.ordered && !red.rest.empty())) return std::nullopt;
    if (!lay_out(r, out, red) || !saves_nodes(root, out, size, red)) return std::nullopt;
    return red;
  }

  // Drops the terms (and the start) that are the identity in every output lane.
  void drop_identities(const TileNode& r, const std::vector<int>& out, Reduction& red) const {
    const uint32_t id = identity(r.op, r.dtype);
    auto is_identity = [&](int i) {
      const TileNode& n = p_.nodes[i];
      if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0) return false;
      const LeafLanes& leaf = p_.lanes(n);
      for (int l : out)
        if (leaf[l].buf >= 0 || leaf[l].bits != id) return false;
      return true;
    };
    red.terms.erase(std::remove_if(red.terms.begin(), red.terms.end(), is_identity), red.terms.end());
    if (red.init >= 0 && is_identity(red.init)) red.init = -1;
  }

  // Layout: one output takes all sixteen lanes; several take a column (row) each, grouped by the row
  // (column) they occupy, whichever makes fewer groups. A float reduction takes the whole-tile reduce (on
  // the FpReducer, many cycles) only for more than 16 terms; a float sum never the column one, which starts
  // from +0.0 (so -0.0 + -0.0 would give +0.0). False when no layout pays (a float max of few terms).
  bool lay_out(const TileNode& r, std::vector<int>& out, Reduction& red) const {
    // Terms the same in every live lane (a whole-tensor reduce broadcast to the tile) make one output:
    // the whole-tile reduce gives every lane the result.
    const bool fp = is_float(r.dtype);
    const bool replicated =
        std::all_of(red.terms.begin(), red.terms.end(), [&](int t) { return rep_[t] == LaneAxis::kTile; }) &&
        (!fp || red.terms.size() > kLanes);
    if (replicated) out.resize(1);
    if (out.size() == 1 && (!fp || red.terms.size() > kLanes)) {
      red.axis = LaneAxis::kTile;
      red.groups = {out};
      return true;
    }
    std::map<int, std::vector<int>> by_row, by_col;
    for (int l : out) {
      by_row[l / kRows].push_back(l);
      by_col[l % kRows].push_back(l);
    }
    const bool float_sum = fp && !red.ordered;
    bool col = by_row.size() <= by_col.size() && !float_sum;
    red.axis = col ? LaneAxis::kCol : LaneAxis::kRow;
    // a float max: more terms than an output's four lanes (a chain of fewer costs less than its reduce)
    if (red.ordered && red.terms.size() <= size_t(kRows)) return false;
    for (auto& [k, g] : col ? by_row : by_col) red.groups.push_back(g);
    return true;
  }

  // Whether packing takes fewer nodes than the chain as it is (its terms' distinct nodes and the combining
  // ops): the packed tiles (each recomputes a term tree of `size` nodes, padded ones add a select), their
  // combining ops, one cross-lane reduce per group and a select with its mask per extra group. Takes the
  // layout of two lanes an output instead (kPair) when that costs fewer.
  bool saves_nodes(int root, const std::vector<int>& out, int size, Reduction& red) {
    std::vector<int> walk(red.terms), distinct;
    while (!walk.empty()) {  // term trees are small: at most kMaxTree nodes each
      int i = walk.back();
      walk.pop_back();
      if (walked_[i]) continue;
      walked_[i] = true;
      distinct.push_back(i);
      for (int o : {p_.nodes[i].a, p_.nodes[i].b, p_.nodes[i].c})
        if (o >= 0) walk.push_back(o);
    }
    for (int i : distinct) walked_[i] = false;
    size_t n = red.terms.size(), per = red.axis == LaneAxis::kTile ? kLanes : kRows,
           tiles = (n + per - 1) / per;
    bool leaf_terms = p_.nodes[red.terms[0]].op == Op::LOAD;
    size_t pad = n % per && !leaf_terms ? 2 : 0;
    size_t unpacked = distinct.size() + n - 1;
    size_t packed = red.groups.size() * (tiles * (size + 1) + pad) + 2 * (red.groups.size() - 1) +
                    red.rest.size() + (red.init >= 0);
    // Up to eight outputs read by one store alone can instead take two lanes each: lanes 2j, 2j+1 hold
    // terms of output j, and a rotate and one op finish all of them at once in lane 2j, which the store
    // then reads (one group: no selects between groups).
    if (int st = sole_store(root);
        st >= 0 && red.rest.empty() && !red.ordered && red.groups.size() > 1 && out.size() * 2 <= kLanes) {
      size_t pairs = (n + 1) / 2, pair_cost = pairs * (size + 1) + (n % 2 && !leaf_terms ? 2 : 0) + 1;
      if (pair_cost < packed) {
        red.axis = LaneAxis::kPair;
        red.groups = {out};
        red.store = st;
        packed = pair_cost;
      }
    }
    return packed < unpacked;
  }

  // The lane of a packed tile holding its k-th term for the group's j-th output, in lane `o`: kTile lane k;
  // kCol (output in column o%4) row k; kRow (output in row o/4) column k; kPair lane 2j + k.
  static int packed_lane(LaneAxis axis, int k, int j, int o) {
    return axis == LaneAxis::kTile   ? k
           : axis == LaneAxis::kPair ? 2 * j + k
           : axis == LaneAxis::kCol  ? kRows * k + o % kRows
                                     : o / kRows * kRows + k;
  }
  // A group's packed accumulator `acc` reduced across lanes, its outputs' lanes then selected into the
  // groups' `result` so far (-1: none yet).
  int finish_group(const TileNode& root, LaneAxis axis, int acc, const std::vector<int>& group, int result) {
    TileNode reduce{Op::LANE_REDUCE, root.dtype, root.dtype, acc};
    reduce.reduce = root.op;
    reduce.axis = axis;
    const int r = b_.add(reduce);
    if (result < 0) return r;
    LaneSet lanes{};
    for (int o : group) lanes[o] = true;
    int mask = b_.constant(DType::kBool, lanes, 1, 0);
    return b_.add(TileNode{Op::WHERE, root.dtype, DType::kBool, mask, r, result});
  }
  // Packed tile t holds terms t*per .. t*per + per-1 (per = 16, 4 or 2 by the axis).
  int emit(const TileNode& root, const Reduction& red) {
    if (red.ordered) return emit_ordered(root, red);
    size_t n = red.terms.size(), per = red.axis == LaneAxis::kTile   ? kLanes
                                       : red.axis == LaneAxis::kPair ? 2
                                                                     : kRows;
    bool leaf_terms = p_.nodes[red.terms[0]].op == Op::LOAD;
    uint32_t id = identity(root.op, root.dtype);
    int result = -1;
    for (const auto& group : red.groups) {
      int acc = -1;
      for (size_t first = 0; first < n; first += per) {
        std::vector<int> roots(red.terms.begin() + first, red.terms.begin() + std::min(n, first + per));
        LaneMap map;
        LaneSet real{};
        for (size_t j = 0; j < group.size(); ++j) {
          int o = group[j];
          for (size_t k = 0; k < roots.size(); ++k) {
            int l = packed_lane(red.axis, int(k), int(j), o);
            map[l] = {int(k), o};
            real[l] = true;
          }
        }
        // padding lanes of leaf terms hold the identity; other terms are padded by a select below
        int tile = b_.pack(roots, map, leaf_terms ? std::optional(id) : std::nullopt);
        if (!leaf_terms && roots.size() < per) {  // padding lanes must hold the identity
          LaneSet all;
          all.fill(true);
          int mask = b_.constant(DType::kBool, real, 1, 0), ident = b_.constant(root.dtype, all, id, id);
          tile = b_.add(TileNode{Op::WHERE, root.dtype, DType::kBool, mask, tile, ident});
        }
        acc = acc < 0 ? tile : b_.add(TileNode{root.op, root.dtype, root.dtype, acc, tile});
      }
      result = finish_group(root, red.axis, acc, group, result);
    }
    for (int t : red.rest) result = b_.add(TileNode{root.op, root.dtype, root.dtype, result, b_.at(t)});
    return result;
  }

  // A float max, exactly as the fold in order: each output's lanes (the tile, its column or its row) take
  // runs of consecutive terms, the k-th lane the k-th run, and fold them from -inf (a NaN term is dropped:
  // max(acc, NaN) is acc); the cross-lane reduce combines the lanes in order, keeping the earlier one on a
  // tie (FMAX_REDUCE_TILE and _COL fold from the first lane, the row reduce is a tree of neighbours). On
  // values that are never NaN this max is associative, and it keeps the earliest of equal values (+0.0 or
  // -0.0), so the result is the fold's, bit for bit. Lanes past the last term repeat it, which changes
  // nothing: a lane's own value is already at least a term it has folded, and so is every later lane's
  // combination.
  int emit_ordered(const TileNode& root, const Reduction& red) {
    const int n = int(red.terms.size()), per = red.axis == LaneAxis::kTile ? kLanes : kRows,
              run = (n + per - 1) / per;
    LaneSet all;
    all.fill(true);
    const uint32_t id = identity(root.op, root.dtype);
    const int start = b_.constant(root.dtype, all, id, id);
    int result = -1;
    for (const auto& group : red.groups) {
      int acc = start;
      for (int t = 0; t < run; ++t) {
        std::vector<int> roots(per);
        LaneMap map;
        for (int k = 0; k < per; ++k) {
          roots[k] = red.terms[std::min(k * run + t, n - 1)];
          for (int o : group) map[packed_lane(red.axis, k, 0, o)] = {k, o};
        }
        acc = b_.add(TileNode{root.op, root.dtype, root.dtype, acc, b_.pack(roots, map, std::nullopt)});
      }
      result = finish_group(root, red.axis, acc, group, result);
    }
    return red.init < 0 ? result : b_.add(TileNode{root.op, root.dtype, root.dtype, b_.at(red.init), result});
  }
};

// Replicated values computed once for several: a tree whose live lanes repeat one value per tile (row,
// column) does the same work as the VPU's sixteen lanes on one (four) distinct values. Up to sixteen
// (four) isomorphic such trees are computed side by side in one tile, lane (column, row) j holding tree
// j's value, and each tree's value is copied back to its lanes by one XLU broadcast (2 cycles). Every
// lane computes the same ops on the same values, so results are bit-identical. Taken when the trees'
// estimated cycles saved exceed the broadcasts'.
class ReplicaPacker {
 public:
  ReplicaPacker(const TileProgram& p, const LaneFacts& facts)
      : p_(p), b_(p), uses_(facts.uses), rep_(facts.rep) {}

  std::optional<TileProgram> run() {
    classify();
    if (groups_.empty()) return std::nullopt;
    b_.begin();
    std::vector<int> group_of(p_.nodes.size(), -1);  // root -> its group
    for (size_t g = 0; g < groups_.size(); ++g)
      for (int r : groups_[g].roots) group_of[r] = int(g);
    // The packed trees read only leaves: they come first, so that program order computes them ahead
    // of the chains that read them (their tiles then wait in scratch, not in vregs).
    std::vector<int> packed(groups_.size(), -1);
    for (size_t g = 0; g < groups_.size(); ++g)
      packed[g] = b_.pack(groups_[g].roots, lane_map(groups_[g]), std::nullopt);
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      int g = group_of[i];
      if (g < 0) {
        b_.copy(i);
        continue;
      }
      const Group& group = groups_[g];
      int j = int(std::find(group.roots.begin(), group.roots.end(), i) - group.roots.begin());
      TileNode copy{Op::LANE_BROADCAST, p_.nodes[i].dtype, p_.nodes[i].dtype, packed[g]};
      copy.axis = group.axis;
      copy.lane = uint8_t(j);
      b_.set(i, b_.add(copy));
    }
    for (const auto& s : p_.stores) b_.out.stores.push_back(b_.copy_store(s));
    return std::move(b_.out);
  }

 private:
  // Estimated cycles (compiler/cost.h): an op, a gathered leaf (its fill record and a LOAD), a broadcast (the
  // three XLU broadcasts of LANE_BROADCAST cost the same). An op counts as a synchronous DISPATCH_VPU, a
  // cycle more than the background dispatch lowering emits for a combinational op: the figure the packing
  // decisions were made with, kept so that no plan changes.
  static inline const int kOpCycles = int(estimated_cycles(0, {instr::vpu(0, VpuOpcode::kAdd, 0, 0)})),
                          kLeafCycles = int(estimated_cycles(1, {instr::load(0, 0)})),
                          kBroadcastCycles = int(estimated_cycles(0, {instr::broadcast_row(0, 0, 0)}));
  static constexpr size_t kOpenGroups = 8;  // groups taking roots at a time
  struct Group {
    LaneAxis axis;
    std::vector<int> roots;
    int cost = 0;  // one tree's estimated cycles
  };
  const TileProgram& p_;
  Builder b_;
  const NodeUses& uses_;
  const std::vector<Replication>& rep_;
  std::vector<Group> groups_;

  static int capacity(LaneAxis a) { return a == LaneAxis::kTile ? kLanes : kRows; }

  // Packed lane l holds tree map[l].src's value from a live lane of its: lane j (kTile), column j of
  // each row (kRow), row j of each column (kCol). Lanes past the group, or whose row (column) has no
  // live lane, repeat the first tree's first live lane.
  LaneMap lane_map(const Group& g) const {
    LaneMap map;
    const LaneSet& live = uses_.live[g.roots[0]];
    int any = int(std::find(live.begin(), live.end(), true) - live.begin());
    map.fill({0, any});
    for (int j = 0; j < int(g.roots.size()); ++j) {
      const LaneSet& lv = uses_.live[g.roots[j]];
      for (int l = 0; l < kLanes; ++l) {
        if (!lv[l]) continue;
        int r = l / kRows, c = l % kRows;
        int at = g.axis == LaneAxis::kTile ? j : g.axis == LaneAxis::kRow ? r * kRows + j : j * kRows + c;
        map[at] = {j, l};
      }
    }
    return map;
  }

  // The roots (replicated values read by something that is not, or by a store) and their groups:
  // consecutive isomorphic roots of one replication, a few groups open at a time.
  void classify() {
    std::vector<bool> root(p_.nodes.size(), false);
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      const TileNode& n = p_.nodes[i];
      for (int o : {n.a, n.b, n.c})
        if (o >= 0 && (!movable(n) || !rep_[i])) root[o] = true;
    }
    for (const auto& s : p_.stores)
      for (int o : {s.value, s.gate, s.index_node})
        if (o >= 0) root[o] = true;
    std::vector<Group> open;
    auto close = [&](size_t k) {
      Group g = std::move(open[k]);
      open.erase(open.begin() + long(k));
      int n = int(g.roots.size());
      if (n > 1 && (n - 1) * g.cost > n * kBroadcastCycles) groups_.push_back(std::move(g));
    };
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      const LaneSet& live = uses_.live[i];
      // A bare leaf is left alone: the loader refills it in each launch that reads it, holding no
      // register meanwhile, where a packed tile would be held (or spilled) until its last broadcast.
      if (!root[i] || !rep_[i] || std::find(live.begin(), live.end(), true) == live.end() ||
          p_.nodes[i].op == Op::LOAD)
        continue;
      size_t k = 0;
      for (; k < open.size(); ++k)
        if (open[k].axis == *rep_[i] && b_.isomorphic_dag(open[k].roots[0], i, kMaxDag)) break;
      if (k == open.size()) {
        int cost = tree_cost(i);
        if (cost < 0) continue;  // too large to pack
        if (open.size() == kOpenGroups) close(0);
        open.push_back({*rep_[i], {}, cost});
        k = open.size() - 1;
      }
      open[k].roots.push_back(i);
      if (int(open[k].roots.size()) == capacity(open[k].axis)) close(k);
    }
    while (!open.empty()) close(0);
  }

  // One tree's estimated cycles (its distinct nodes; constants are shared when packed), or -1 when it
  // is larger than kMaxDag.
  int tree_cost(int root) const {
    if (!b_.isomorphic_dag(root, root, kMaxDag)) return -1;
    std::set<int> seen;
    std::vector<int> walk{root};
    int cost = 0;
    while (!walk.empty()) {
      int i = walk.back();
      walk.pop_back();
      if (!seen.insert(i).second) continue;
      const TileNode& n = p_.nodes[i];
      if (n.op == Op::LOAD) {
        cost += uniform_bits(p_, n) ? 0 : kLeafCycles;
        continue;
      }
      cost += kOpCycles;
      for (int o : {n.a, n.b, n.c})
        if (o >= 0) walk.push_back(o);
    }
    return cost;
  }
};

// Broadcast operands: a gather of data whose live lanes repeat one element (across the tile, along each row,
// along each column: a matmul's row operand, a convolution's filter tap) takes, where a fill record and a
// LOAD of its own would read it, one lane (column, row) of a source gather of up to sixteen (four) such
// elements, copied to its lanes by one XLU broadcast. Sources take the elements in program order, so that
// operands read together share one. The broadcast is a leaf the emitter makes from its source's vreg in each
// launch that reads it (schedule.h): never spilled. Leaves that a store or the loader (a gather's indices)
// reads as they are, and gathers under a data gate, are left alone.
class OperandBroadcaster {
 public:
  explicit OperandBroadcaster(const TileProgram& p) : p_(p), b_(p), facts_(p), kept_(p.nodes.size(), false) {
    for (const TileStore& st : p.stores)
      for (int o : {st.value, st.gate, st.index_node})
        if (o >= 0) kept_[size_t(o)] = true;
    for (const TileNode& n : p.nodes)
      if (n.op == Op::LOAD && n.dynamic) kept_[size_t(n.a)] = true;  // the loader reads its indices from VMEM
  }

  std::optional<TileProgram> run() {
    bool any = false;
    for (int i = 0; i < int(p_.nodes.size()) && !any; ++i) any = broadcastable(i).has_value();
    if (!any) return std::nullopt;
    b_.begin();
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      const std::optional<LaneAxis> axis = broadcastable(i);
      if (!axis) {
        b_.copy(i);
        continue;
      }
      const TileNode& n = p_.nodes[i];
      Source& src = open_source({*axis, n.dtype});
      TileNode copy{Op::LANE_BROADCAST, n.dtype, n.dtype, src.node};
      copy.axis = *axis;
      copy.lane = uint8_t(src.taken);
      take_lanes(b_.out, *axis, src, p_.lanes(n), facts_.uses.live[i]);
      b_.set(i, b_.add(copy));
    }
    for (const TileStore& st : p_.stores) b_.out.stores.push_back(b_.copy_store(st));
    return std::move(b_.out);
  }

 private:
  using SourceKey = std::pair<LaneAxis, DType>;  // what a source's elements share
  struct Source {
    int node = -1;  // its gather in the output
    int taken = 0;  // elements (lanes, columns or rows) given so far
  };
  const TileProgram& p_;
  Builder b_;
  const LaneFacts facts_;
  std::vector<bool> kept_;            // nodes read as they are: by a store, or as a gather's indices
  std::map<SourceKey, Source> open_;  // the source taking elements, by what they share
  static int capacity(LaneAxis a) { return a == LaneAxis::kTile ? kLanes : kRows; }

  std::optional<LaneAxis> broadcastable(int i) const {
    const TileNode& n = p_.nodes[i];
    if (n.op != Op::LOAD || !movable(n) || n.gated || kept_[size_t(i)] || uniform_bits(p_, n))
      return std::nullopt;
    const std::optional<LaneAxis>& rep = facts_.rep[size_t(i)];
    if (!rep || *rep == LaneAxis::kPair) return std::nullopt;
    for (int l = 0; l < kLanes; ++l)
      if (facts_.uses.live[size_t(i)][size_t(l)] && p_.lanes(n)[size_t(l)].buf >= 0) return rep;
    return std::nullopt;  // constants in every live lane
  }

  // The source taking the next element with this key: the open one, or a new one when it is full.
  Source& open_source(const SourceKey& key) {
    Source& src = open_[key];
    if (src.node < 0 || src.taken == capacity(key.first)) {
      TileNode gather{Op::LOAD, key.second};
      b_.out.lanes(gather);
      src = {b_.add(gather), 0};
    }
    return src;
  }

  // The leaf's live lanes into the source's next lane (kTile), or next column of each row (kRow) or row of
  // each column (kCol): what the broadcast copies back to them. Lanes no leaf gives read the constant 0.
  static void take_lanes(TileProgram& out, LaneAxis axis, Source& src, const LeafLanes& lanes,
                         const LaneSet& live) {
    LeafLanes& to = out.leaves[size_t(out.nodes[size_t(src.node)].leaf)];
    const int j = src.taken++;
    for (int l = 0; l < kLanes; ++l) {
      const int r = l / kRows, c = l % kRows;
      if (live[size_t(l)])
        to[size_t(axis == LaneAxis::kTile  ? j
                  : axis == LaneAxis::kRow ? r * kRows + j
                                           : j * kRows + c)] = lanes[size_t(l)];
    }
  }
};

}  // namespace

std::optional<TileProgram> broadcast_operands(const TileProgram& prog) {
  return OperandBroadcaster(prog).run();
}

void pack_lanes(TileProgram& prog) {
  if (auto packed = pack_stores(prog)) prog = std::move(*packed);
  LaneFacts facts(prog);
  if (auto packed = ReductionPacker(prog, facts).run()) {
    prog = std::move(*packed);
    facts = LaneFacts(prog);
  }
  if (auto packed = ReplicaPacker(prog, facts).run()) prog = std::move(*packed);
}

}  // namespace tinytpu::compiler
