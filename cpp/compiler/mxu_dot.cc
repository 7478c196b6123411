#include "compiler/mxu_dot.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/cost.h"
#include "compiler/op_table.h"
#include "isa/instr_builders.h"
#include "isa/vpu_ops.h"
#include "sim/controller.h"
#include "sim/timing.h"

namespace tinytpu::compiler {

namespace {

constexpr int kGroupLanes = kRows;  // lanes sharing one activation row: one PSUM row, one MXU column each
constexpr int kGroups = kLanes / kGroupLanes;
constexpr int kSliceTerms = kRows;  // terms per dispatch: the array's rows
// K-slices per MXU_DOT node: a slice takes a weight tile per group (WS) or an activation row per term
// (OS), so any node fits the WMEM and AMEM of one launch (the reference: 4 x 8 = 32 entries each).
int max_slices(const TensorCoreConfig& cfg) { return cfg.depth / std::max(kGroups, kSliceTerms); }

bool fits_int8(int32_t v) { return v >= -128 && v <= 127; }

constexpr int kPositiveZero = -1, kNegativeZero = -2;  // Chain::start but a node

struct Term {
  int mul;               // the MUL node
  int x, y;              // its factors' leaves
  std::vector<int> via;  // CAST nodes between the MUL and the leaves
  bool negated;          // under an odd number of NEGs / SUB right-hand sides
};

class Fuser {
 public:
  Fuser(TileProgram& p, const TensorCoreConfig& cfg, int first_chain, const Choices& choices,
        const std::vector<bool>& bfloat16_slots)
      : p_(p),
        max_slices_(max_slices(cfg)),
        os_fits_(cfg.depth > kSliceTerms),
        float_mxu_(cfg.mxu_dtype == 2 ||
                   (cfg.mxu_dtype == 1 &&
                    std::find(bfloat16_slots.begin(), bfloat16_slots.end(), true) != bfloat16_slots.end())),
        bfloat16_pe_(cfg.mxu_dtype == 1),
        bfloat16_slots_(bfloat16_slots),
        next_chain_(first_chain),
        choices_(choices),
        uses_(node_uses(p)) {}

  int run() {
    std::vector<Chain> chains = candidates();
    std::vector<bool> grouped(chains.size(), false);
    for (const std::vector<int>& group : across_groups(chains)) {
      for (int c : group) grouped[c] = true;
      rewrite_across(chains, group);
    }
    for (size_t c = 0; c < chains.size(); ++c)
      if (!grouped[c]) chains[c].group > 0 ? rewrite_float(chains[c]) : rewrite(chains[c]);
    return next_chain_;
  }

 private:
  struct Values {
    std::vector<MxuTile> x, y;  // per term, its factors' lanes
  };
  // A dot-product chain the MXU may take (fuse_mxu_dots numbers them), as found.
  struct Chain {
    int root;
    std::vector<int> adds;
    std::vector<Term> terms;
    Values v;
    int number;
    std::optional<std::vector<bool>> os;  // os_orientation()
    int group = 0;              // a float32 chain's products per group (float_chain()); 0: an integer chain
    int start = kPositiveZero;  // a float32 chain's initial value: +0.0, -0.0 (none) or a node's
  };
  // The chains, from the last root back (numbered in that order), without the vetoed ones.
  std::vector<Chain> candidates() {
    std::vector<Chain> out;
    std::vector<bool> absorbed(p_.nodes.size(), false);
    const std::vector<bool> flat = flattens();
    for (int root = int(p_.nodes.size()) - 1; root >= 0; --root) {
      if (absorbed[root]) continue;
      if (float_mxu_ && is_float_add(root)) {
        std::vector<int> adds;  // a sum's inner sums are not tried again: a prefix of one that fails fails
        std::optional<Chain> c = float_chain(root, adds);
        for (int a : c ? c->adds : adds) absorbed[a] = true;
        if (c) {
          c->number = next_chain_++;
          out.push_back(std::move(*c));
        }
        continue;
      }
      if (!flat[root]) continue;  // a sum that does not flatten may hold one that does
      Chain c{root, {}, {}, {}, -1};
      collect(root, c.adds, c.terms);
      for (int a : c.adds) absorbed[a] = true;  // its inner sums have the same lanes and fewer terms
      auto values = c.terms.size() < 2 ? std::nullopt : read(c.terms, uses_.live[root]);
      if (!values) continue;
      c.number = next_chain_++;
      c.v = std::move(*values);
      c.os = os_orientation(c.v, uses_.live[root]);
      if (!choices_.veto.count(c.number)) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  TileProgram& p_;
  const int max_slices_;
  // MXU_OS's kLen reaches the Controller as UInt#(TLog#(depth)): a slice of `depth` terms reads as 0, so a
  // core whose depth is only the array's rows takes weight-stationary dispatches.
  const bool os_fits_;
  const bool float_mxu_;  // the float PEs take float32 chains (config mxu_dtype 2; 1: with bfloat16 factors)
  const bool bfloat16_pe_;                   // of bfloat16 factors only (mxu_dtype 1)
  const std::vector<bool>& bfloat16_slots_;  // by slot: every value a bfloat16 (ElementMemos::bfloat16_slots)
  int next_chain_;
  const Choices& choices_;
  const NodeUses uses_;

  const TileNode& node(int i) const { return p_.nodes[i]; }
  // A factor the loader can fill from its lane sources: not data-indexed, gated or a pinned tile.
  bool is_leaf(int i) const {
    const TileNode& n = node(i);
    return n.op == Op::LOAD && !n.dynamic && !n.gated && n.pinned < 0;
  }
  bool is_zero(int i) const { return is_leaf(i) && uniform_bits(p_, node(i)) == 0u; }
  bool is_sum(int i) const {  // ADD, SUB, NEG: a signed sum of its terms
    Op op = node(i).op;
    return (op == Op::ADD || op == Op::SUB || op == Op::NEG) &&
           (node(i).dtype == DType::kI32 || node(i).dtype == DType::kU32);
  }

  // The leaf under an optional integer CAST to 32 bits (the leaf's lanes are already widened, so the
  // bits are unchanged); a CAST only this chain uses is absorbed, a shared one is read through.
  std::optional<int> factor(int i, std::vector<int>& via) const {
    if (is_leaf(i)) return i;
    const TileNode& n = node(i);
    if (n.op == Op::CAST && is_lane_int(n.from) && (n.dtype == DType::kI32 || n.dtype == DType::kU32) &&
        is_leaf(n.a)) {
      if (uses_.count[i] == 1) via.push_back(i);
      return n.a;
    }
    return std::nullopt;
  }

  // Whether collect() succeeds at each node, bottom-up in program order (operands come first), so
  // finding the roots is linear: retrying every inner sum of a failed chain would be quadratic.
  std::vector<bool> flattens() const {
    std::vector<bool> flat(p_.nodes.size(), false);
    std::vector<int> via;  // unused here
    auto part = [&](int parent, int c) {
      if (is_sum(c) && uses_.count[c] == 1) return bool(flat[c]) && node(c).dtype == node(parent).dtype;
      if (is_zero(c)) return true;
      const TileNode& n = node(c);
      return n.op == Op::MUL && n.dtype == node(parent).dtype && uses_.count[c] == 1 && factor(n.a, via) &&
             factor(n.b, via);
    };
    for (int i = 0; i < int(p_.nodes.size()); ++i)
      if (is_sum(i)) flat[i] = part(i, node(i).a) && (node(i).op == Op::NEG || part(i, node(i).b));
    return flat;
  }

  // Flattens the ADD tree under a root that flattens() accepts into product terms, left to right.
  // (tinygrad writes b - x@y as b + (-(x0*y0) - x1*y1 - ...), so SUB and NEG carry a sign.)
  // An explicit stack: a reduce of n terms is a chain n deep.
  void collect(int root, std::vector<int>& adds, std::vector<Term>& terms) const {
    std::vector<std::pair<int, bool>> todo{{root, false}};  // (node, negated)
    while (!todo.empty()) {
      auto [i, negated] = todo.back();
      todo.pop_back();
      const TileNode& n = node(i);
      if (is_sum(i) && (i == root || uses_.count[i] == 1)) {
        adds.push_back(i);
        if (n.op == Op::NEG) {
          todo.push_back({n.a, !negated});
        } else {
          todo.push_back({n.b, n.op == Op::SUB ? !negated : negated});
          todo.push_back({n.a, negated});
        }
      } else if (!is_zero(i)) {  // a reduce's initial value adds nothing; else a MUL term
        Term t{i, -1, -1, {}, negated};
        t.x = *factor(n.a, t.via);
        t.y = *factor(n.b, t.via);
        terms.push_back(t);
      }
    }
  }

  bool is_float_add(int i) const { return node(i).op == Op::ADD && node(i).dtype == DType::kF32; }
  // A product of two leaves that only its sum reads.
  bool is_float_term(int i) const {
    const TileNode& n = node(i);
    return n.op == Op::MUL && n.dtype == DType::kF32 && uses_.count[i] == 1 && is_leaf(n.a) && is_leaf(n.b) &&
           (!bfloat16_pe_ || (is_bfloat16(n.a) && is_bfloat16(n.b)));
  }
  // A leaf whose every lane is a bfloat16: read from a slot of them, or a constant with its low 16 bits zero.
  bool is_bfloat16(int leaf) const {
    const LeafLanes& lanes = p_.lanes(node(leaf));
    return std::all_of(lanes.begin(), lanes.end(), [&](const LeafLane& l) {
      return l.buf >= 0 ? size_t(l.buf) < bfloat16_slots_.size() && bfloat16_slots_[size_t(l.buf)]
                        : (l.bits & 0xFFFFu) == 0;
    });
  }
  // A float32 sum the float PEs compute bit for bit: tinygrad's reduce `((s + g1) + g2) + ... + gn`, each g a
  // left fold `((t1 + t2) + t3) ...` of G products (G the same for all: the unrolled loop's), from s: a
  // stored +0.0, where a PE's accumulator starts; any other value (the sum so far of a chunk traced in
  // parts, or the VPU's sum up to a group the PEs cannot take: a computed factor, a group of another size,
  // whose own sum below it may be a chain again), which seeds the accumulators; or none, a sum tinygrad
  // unrolled whole, `((t1 + t2) + t3) ...`, which is G = 1 from -0.0 (x + -0.0 is x for every x, so a sum of
  // -0.0 products stays -0.0). Each product's first factor must be the row factor (the PE multiplies
  // activation by weight, and NaN operands propagate by their order: base/fp32.h). Nothing is reassociated.
  // `adds`: the sums walked, whose own chains would fail likewise.
  std::optional<Chain> float_chain(int root, std::vector<int>& adds) const {
    Chain c{root, {}, {}, {}, -1};
    std::vector<std::vector<int>> groups;  // their products, the last group first
    for (int i = root; !is_zero(i); i = node(i).a) {
      const bool inner = i != root && (!is_float_add(i) || uses_.count[i] != 1);
      if (inner && is_float_term(i) && groups[0].size() == 1) {  // the first product: no initial value
        groups.push_back({i});
        c.start = kNegativeZero;
        break;
      }
      if (inner) {  // the sum so far
        c.start = i;
        break;
      }
      std::vector<int> products, group_adds;  // the group's, the last first
      int f = node(i).b;
      for (; is_float_add(f) && uses_.count[f] == 1; f = node(f).a) {
        group_adds.push_back(f);
        products.push_back(node(f).b);
      }
      products.push_back(f);
      if ((!groups.empty() && products.size() != groups[0].size()) ||
          !std::all_of(products.begin(), products.end(), [&](int t) { return is_float_term(t); })) {
        if (i == root) {
          adds.push_back(i);
          return std::nullopt;
        }
        c.start =
            i;  // the VPU's sum up to this group (a computed factor, another G) seeds the groups after it
        break;
      }
      adds.push_back(i);
      c.adds.push_back(i);
      c.adds.insert(c.adds.end(), group_adds.begin(), group_adds.end());
      groups.push_back(std::move(products));
    }
    for (auto g = groups.rbegin(); g != groups.rend(); ++g)
      for (auto t = g->rbegin(); t != g->rend(); ++t)
        c.terms.push_back({*t, node(*t).a, node(*t).b, {}, false});
    if (c.terms.size() < 2) return std::nullopt;
    const auto& live = uses_.live[root];
    for (const Term& t : c.terms) {
      c.v.x.push_back(lanes(t.x, false));
      c.v.y.push_back(lanes(t.y, false));
    }
    c.os = os_orientation(c.v, live, 1);
    if (!c.os || std::find(c.os->begin(), c.os->end(), false) != c.os->end()) return std::nullopt;
    c.group = int(groups[0].size());
    return c;
  }

  // A factor's lanes as the loader fills them; a constant is negated here, an element when loaded.
  MxuTile lanes(int leaf, bool negate) const {
    MxuTile t;
    for (int l = 0; l < kLanes; ++l) {
      const LeafLane& s = p_.lanes(node(leaf))[l];
      if (s.buf >= 0)
        t[l] = {s, negate};
      else
        t[l].src.bits = negate ? 0u - s.bits : s.bits;
    }
    return t;
  }
  // A constant lane must fit int8 now; an element is checked when the loader fills it.
  static bool may_fit(const MxuLane& m) { return m.src.buf >= 0 || fits_int8(int32_t(m.src.bits)); }
  // The terms' factor lanes, when every live lane may fit int8 and each live group shares one factor of
  // every term across its live lanes (the same element or constant: a decision that holds for any data).
  std::optional<Values> read(const std::vector<Term>& terms, const std::array<bool, kLanes>& live) const {
    Values v;
    for (const Term& t : terms) {
      v.x.push_back(lanes(t.x, t.negated));
      v.y.push_back(lanes(t.y, false));
      for (int l = 0; l < kLanes; ++l)
        if (live[l] && !(may_fit(v.x.back()[l]) && may_fit(v.y.back()[l]))) return std::nullopt;
    }
    for (int g = 0; g < kGroups; ++g)
      for (size_t k = 0; k < terms.size(); ++k)
        if (!shared(v.x[k], live, g) && !shared(v.y[k], live, g)) return std::nullopt;
    return v;
  }
  static bool shared(const MxuTile& v, const std::array<bool, kLanes>& live, int g) {
    std::optional<MxuLane> first;
    for (int l = g * kGroupLanes; l < (g + 1) * kGroupLanes; ++l) {
      if (!live[l]) continue;
      if (first && !(*first == v[l])) return false;
      first = v[l];
    }
    return true;
  }

  // The MXU's generic epilogue (46) computes ADD, SUB, MUL, MAX of the column sums and another tile's
  // row 0 with int32 wrap, exactly as the VPU would: when a lone row-0 dispatch's only reader is such an
  // op, the reader becomes the dispatch (bias add, ReLU) and saves the VPU instruction.
  void fold_epilogue(int root) {
    MxuDot& dot = p_.mxu[node(root).mxu];
    if (dot.os || dot.dispatches.size() != 1 || dot.dispatches[0].row != 0 || uses_.count[root] != 1) return;
    for (int u = root + 1; u < int(p_.nodes.size()); ++u) {
      const TileNode& n = node(u);
      if (n.a != root && n.b != root && n.c != root) continue;
      const OpInfo& op = op_info(n.op);  // its int_op is what the epilogue computes
      bool first = n.a == root;
      int other = first ? n.b : n.a;
      if (!op.mxu_epilogue || n.dtype != node(root).dtype || n.c >= 0 || other == root ||
          (n.op == Op::SUB && !first))
        return;
      dot.epilogue_op = op.int_op;
      TileNode fused = node(root);
      fused.a = other;
      p_.nodes[u] = fused;  // the root is left without readers
      return;
    }
  }

  // An operand's index in `out`, adding it unless one with the same values is there.
  static int intern(std::map<MxuTile, int>& ids, std::vector<MxuTile>& out, const MxuTile& key,
                    const MxuTile& t) {
    auto [it, fresh] = ids.emplace(key, int(out.size()));
    if (fresh) out.push_back(t);
    return it->second;
  }
  static bool live_group(const std::array<bool, kLanes>& live, int g) {
    for (int l = g * kGroupLanes; l < (g + 1) * kGroupLanes; ++l)
      if (live[l]) return true;
    return false;
  }

  // Weight-stationary: per live group and K-slice one dispatch of the group's shared row against a
  // weight tile of its lanes' other factors, summed in the group's PSUM row.
  MxuDot ws_dot(size_t first, size_t last, const Values& v, const std::array<bool, kLanes>& live) const {
    MxuDot dot;
    std::map<MxuTile, int> weight_ids, act_ids;
    for (int g = 0; g < kGroups; ++g) {
      if (!live_group(live, g)) continue;  // nothing reads this PSUM row
      for (size_t s = first; s < last; s += kSliceTerms) {
        MxuTile w{}, a{};
        for (size_t k = s; k < std::min(last, s + kSliceTerms); ++k) {
          int r = int(k - s);
          bool x_shared = shared(v.x[k], live, g);
          const MxuTile& act = x_shared ? v.x[k] : v.y[k];
          const MxuTile& other = x_shared ? v.y[k] : v.x[k];
          for (int c = 0; c < kGroupLanes; ++c) {
            int l = g * kGroupLanes + c;
            if (!live[l]) continue;
            a[r] = act[l];
            w[r * kGroupLanes + c] = other[l];
          }
        }
        dot.dispatches.push_back({intern(weight_ids, dot.weights, choices_.canonical(w), w),
                                  intern(act_ids, dot.acts, choices_.canonical(a), a), g, s != first});
      }
    }
    return dot;
  }

  // Output-stationary can pay when at least two rows are live: one MXU_OS dispatch does the work of a WS
  // dispatch per live row, for a read-back of the matrix rows (cost() decides). (A float chain, which has no
  // weight-stationary way, takes one live row: `min_groups`.)
  // It needs every term to have a factor that depends only on the lane's row and one only on its
  // column. Returns, per term, whether x is the row factor.
  std::optional<std::vector<bool>> os_orientation(const Values& v, const std::array<bool, kLanes>& live,
                                                  int min_groups = 2) const {
    int groups = 0;
    for (int g = 0; g < kGroups; ++g) groups += live_group(live, g);
    if (groups < min_groups || !os_fits_) return std::nullopt;
    auto by_row = [&](const MxuTile& f) {
      for (int g = 0; g < kGroups; ++g)
        if (!shared(f, live, g)) return false;
      return true;
    };
    auto by_col = [&](const MxuTile& f) {
      for (int c = 0; c < kGroupLanes; ++c) {
        std::optional<MxuLane> first;
        for (int l = c; l < kLanes; l += kGroupLanes) {
          if (!live[l]) continue;
          if (first && !(*first == f[l])) return false;
          first = f[l];
        }
      }
      return true;
    };
    std::vector<bool> x_is_row;
    for (size_t k = 0; k < v.x.size(); ++k) {
      if (by_row(v.x[k]) && by_col(v.y[k]))
        x_is_row.push_back(true);
      else if (by_row(v.y[k]) && by_col(v.x[k]))
        x_is_row.push_back(false);
      else
        return std::nullopt;
    }
    return x_is_row;
  }
  struct Slice {
    size_t first, end;  // its terms
    int group = 0;      // MxuDot::Dispatch::group
  };
  MxuDot os_dot(size_t first, size_t last, const Values& v, const std::array<bool, kLanes>& live,
                const std::vector<bool>& x_is_row) const {
    std::vector<Slice> slices;
    for (size_t s = first; s < last; s += kSliceTerms) slices.push_back({s, std::min(last, s + kSliceTerms)});
    return os_dot(slices, v, live, x_is_row);
  }
  // One dispatch per slice, the first clearing the accumulators.
  MxuDot os_dot(const std::vector<Slice>& slices, const Values& v, const std::array<bool, kLanes>& live,
                const std::vector<bool>& x_is_row) const {
    MxuDot dot;
    dot.os = true;
    for (int g = 0; g < kGroups; ++g) dot.live_rows[g] = live_group(live, g);
    std::map<MxuTile, int> weight_ids, act_ids;
    for (const auto& [s, end, group] : slices) {
      MxuTile w{}, a{};
      for (size_t k = s; k < end; ++k) {
        int kk = int(k - s);
        const MxuTile& row = x_is_row[k] ? v.x[k] : v.y[k];
        const MxuTile& col = x_is_row[k] ? v.y[k] : v.x[k];
        for (int l = 0; l < kLanes; ++l) {
          if (!live[l]) continue;
          a[kk * kGroupLanes + l / kGroupLanes] = row[l];  // X[r][k]
          w[kk * kGroupLanes + l % kGroupLanes] = col[l];  // W[k][c]
        }
      }
      dot.dispatches.push_back({intern(weight_ids, dot.weights, choices_.canonical(w), w),
                                intern(act_ids, dot.acts, choices_.canonical_rows(a, int(end - s)), a), 0,
                                s != slices[0].first, int(end - s), group});
    }
    return dot;
  }

  // A float chain's dispatches: slices that end where its groups do, so that a run of the float PEs is a
  // group (up to R/G groups a dispatch; a group longer than R in dispatches of R whose run goes on, G = 0,
  // ended by one of the rest).
  static std::vector<Slice> float_slices(size_t terms, int group) {
    std::vector<Slice> out;
    const size_t g = size_t(group);
    if (g <= size_t(kSliceTerms)) {
      const size_t per = size_t(kSliceTerms) / g * g;
      for (size_t s = 0; s < terms; s += per) out.push_back({s, std::min(terms, s + per), group});
      return out;
    }
    for (size_t first = 0; first < terms; first += g)
      for (size_t s = first; s < first + g; s += kSliceTerms) {
        const size_t end = std::min(first + g, s + kSliceTerms);
        out.push_back({s, end, end == first + g ? int(end - s) : 0});
      }
    return out;
  }
  // Blocks of the whole groups a launch's WMEM and AMEM hold, each after the first seeded with
  // the sums of the block before.
  void rewrite_float(const Chain& c) {
    const std::vector<Slice> slices = float_slices(c.terms.size(), c.group);
    std::vector<size_t> firsts;
    std::vector<MxuDot> blocks;
    for (size_t s = 0, end = 0; s < slices.size(); s = end) {
      // the most whole groups from slice s on whose slices a launch's AMEM rows and WMEM tiles hold: a seed
      // starts with no run open, so a block ends where a group does
      size_t rows = 0;
      for (size_t e = s; e < slices.size(); ++e) {
        rows += slices[e].end - slices[e].first;
        if (rows > slots() || e - s >= slots()) break;
        if (slices[e].end % size_t(c.group) == 0) end = e + 1;
      }
      if (end <= s) return;  // a group longer than a launch holds: the chain stays on the VPU
      MxuDot& dot = blocks.emplace_back(
          os_dot({slices.begin() + long(s), slices.begin() + long(end)}, c.v, uses_.live[c.root], *c.os));
      dot.float32 = true;
      dot.seeded = s > 0 || c.start != kPositiveZero;
      dot.chains = {c.number};
      firsts.push_back(slices[s].first);
    }
    add_blocks(std::move(blocks), firsts, {&c});
  }

  // A block's estimated cycles (compiler/cost.h): its data records (WMEM tiles, AMEM rows) and instructions,
  // as lowering emits them alone.
  static int cost(const MxuDot& m) {
    int64_t records = int64_t(m.weights.size());
    if (m.os)
      for (const auto& d : m.dispatches) records += d.k;
    else
      records += int64_t(m.acts.size());
    const MxuDotPlaces at{std::vector<int>(m.weights.size()), std::vector<int>(m.dispatches.size())};
    return int(estimated_cycles(records, mxu_dot_program(m, at)));
  }
  // OS is taken over WS only when it is estimated faster by more than a WAIT_MXU: the margin the plans were
  // made with (an earlier estimate charged the OS read-back a WAIT_MXU it does not have), kept so that no
  // plan changes.
  static inline const int kOsMargin = instr_cycles(SxuOpcode::kWaitMxu);

  // The block of terms [first, last) weight- or output-stationary, whichever is estimated cheaper.
  MxuDot best_block(const Chain& c, size_t first, size_t last) const {
    const auto& live = uses_.live[c.root];
    MxuDot dot = ws_dot(first, last, c.v, live);
    if (c.os) {
      MxuDot alt = os_dot(first, last, c.v, live, *c.os);
      if (cost(alt) + kOsMargin < cost(dot)) dot = std::move(alt);
    }
    dot.chains = {c.number};
    return dot;
  }

  // One MXU_DOT per block of up to max_slices_ K-slices, summed by ADDs.
  void rewrite(const Chain& c) {
    const size_t block_terms = size_t(kSliceTerms * max_slices_);
    std::vector<size_t> firsts;
    std::vector<MxuDot> blocks;
    for (size_t first = 0; first < c.terms.size(); first += block_terms) {
      blocks.push_back(best_block(c, first, std::min(c.terms.size(), first + block_terms)));
      firsts.push_back(first);
    }
    add_blocks(std::move(blocks), firsts, {&c});
  }

  // Where place() puts a chain's new nodes, all at absorbed positions (before the root, or the root).
  struct Placement {
    std::vector<int> blocks;  // each block's
    std::vector<int> sums;  // an integer chain's partial sums of the blocks, left to right, the last the root
    int seed = -1;          // a float chain's initial value (-1: +0.0)
    bool made_seed = false;  // the seed is a -0.0 leaf made there (a sum with no initial value)
  };
  // A block sits where its first term's product was (in a kernel traced K-outermost, the blocks of one
  // K-range of chains that share activation rows are then neighbours in program order, and one launch can
  // load those rows once for all of them); a lone block, and a float chain's last, at the root. Each partial
  // sum of an integer chain needs an absorbed position after its block: without one (few products between two
  // blocks), nullopt, and the chain stays on the VPU.
  std::optional<Placement> placement(const Chain& c, const std::vector<size_t>& firsts) const {
    if (c.group > 0) return float_placement(c, firsts);
    Placement out;
    const size_t n = firsts.size();
    for (size_t b = 0; b < n; ++b) out.blocks.push_back(n == 1 ? c.root : c.terms[firsts[b]].mul);
    std::vector<int> slots;  // the absorbed positions no block takes, ascending
    for (const Term& t : c.terms) {
      slots.push_back(t.mul);
      slots.insert(slots.end(), t.via.begin(), t.via.end());
    }
    for (int a : c.adds)
      if (a != c.root) slots.push_back(a);
    std::sort(slots.begin(), slots.end());
    slots.erase(
        std::remove_if(
            slots.begin(), slots.end(),
            [&](int s) { return std::find(out.blocks.begin(), out.blocks.end(), s) != out.blocks.end(); }),
        slots.end());
    size_t next = 0;
    for (size_t b = 1; b < n; ++b) {
      if (b + 1 == n) {
        out.sums.push_back(c.root);
        break;
      }
      while (next < slots.size() && slots[next] < out.blocks[b]) ++next;
      if (next == slots.size()) return std::nullopt;
      out.sums.push_back(slots[next++]);
    }
    return out;
  }

  // A float chain's blocks each where the first in program order of its products was, the last at the root, a
  // -0.0 seed where the first block's first was (the block at its second), each after the one it goes on
  // from.
  std::optional<Placement> float_placement(const Chain& c, const std::vector<size_t>& firsts) const {
    Placement out;
    out.seed = c.start >= 0 ? c.start : -1;
    for (size_t b = 0; b < firsts.size(); ++b) {
      std::vector<int> at;  // its products' positions, ascending
      for (size_t t = firsts[b]; t < (b + 1 < firsts.size() ? firsts[b + 1] : c.terms.size()); ++t)
        at.push_back(c.terms[t].mul);
      std::sort(at.begin(), at.end());
      const bool made_seed = b == 0 && c.start == kNegativeZero;
      if (made_seed) {
        out.seed = at[0];
        out.made_seed = true;
      }
      if (size_t(made_seed) >= at.size()) return std::nullopt;
      out.blocks.push_back(b + 1 == firsts.size() ? c.root : at[made_seed]);
      if (out.blocks[b] <= (b > 0 ? out.blocks[b - 1] : out.seed)) return std::nullopt;
    }
    return out;
  }

  // The blocks added to the program and placed in each chain (outputs[r] takes output r), unless one of the
  // chains cannot take them: then none does.
  void add_blocks(std::vector<MxuDot> blocks, const std::vector<size_t>& firsts,
                  const std::vector<const Chain*>& outputs) {
    std::vector<Placement> at;
    for (const Chain* c : outputs) {
      std::optional<Placement> p = placement(*c, firsts);
      if (!p) return;
      at.push_back(std::move(*p));
    }
    std::vector<int> dots;
    for (MxuDot& m : blocks) {
      p_.mxu.push_back(std::move(m));
      dots.push_back(int(p_.mxu.size()) - 1);
    }
    for (size_t r = 0; r < outputs.size(); ++r) place(*outputs[r], at[r], dots, int(r));
  }

  // The chain's blocks, one MXU_DOT node each (output `output` of p_.mxu[dots[b]]), summed by ADDs or a float
  // chain's seeded each by the one before, where its nodes were (placement()): program order and every
  // reference stay valid.
  void place(const Chain& c, const Placement& at, const std::vector<int>& dots, int output) {
    const DType dtype = node(c.root).dtype;
    if (at.made_seed) p_.nodes[at.seed] = negative_zeros();
    for (size_t b = 0; b < dots.size(); ++b) {
      TileNode n{Op::MXU_DOT, dtype};
      n.mxu = dots[b];
      n.lane = uint8_t(output);
      if (c.group > 0) n.a = b > 0 ? at.blocks[b - 1] : at.seed;  // -1: from +0.0
      p_.nodes[at.blocks[b]] = n;
    }
    if (c.group > 0) return;
    if (dots.size() == 1) fold_epilogue(c.root);
    int acc = at.blocks[0];
    for (size_t b = 1; b < dots.size(); ++b) {
      p_.nodes[at.sums[b - 1]] = TileNode{Op::ADD, dtype, dtype, acc, at.blocks[b]};
      acc = at.sums[b - 1];
    }
  }

  TileNode negative_zeros() {
    TileNode z{Op::LOAD, DType::kF32};
    for (LeafLane& l : p_.lanes(z)) l.bits = 0x80000000u;
    return z;
  }

  // OS across chains (MxuDot::across), for chains that cannot go output-stationary alone. Chains go together
  // when their lane groups have the same weight-stationary weight tiles, slice by slice (the same other
  // factor in every lane and term: a convolution's pixels, against each chain's channel), and the same live
  // lanes; up to four a group, in program order. A group is taken when its blocks are estimated cheaper than
  // its chains' own.
  std::vector<std::vector<int>> across_groups(const std::vector<Chain>& chains) const {
    if (!os_fits_ || chains.size() < 2) return {};
    // by a hash of the other factors of every term (of the first term first: most chains differ there);
    // chains alike hash alike, and each group is checked
    std::map<uint64_t, std::vector<int>> first, alike;
    for (size_t c = 0; c < chains.size(); ++c)
      if (!chains[c].os) first[other_factors_hash(chains[c], 1)].push_back(int(c));
    for (const auto& [hash, members] : first)
      if (members.size() > 1)
        for (int c : members) alike[other_factors_hash(chains[c], chains[c].terms.size())].push_back(c);
    std::vector<std::vector<int>> groups;
    for (auto& [hash, members] : alike) {
      std::sort(members.begin(), members.end(),
                [&](int a, int b) { return chains[a].root < chains[b].root; });
      std::vector<int> group;
      for (size_t i = 0; i < members.size(); ++i) {
        if (group.empty() || same_other_factors(chains[group[0]], chains[members[i]]))
          group.push_back(members[i]);
        if (group.size() == size_t(kRows) || i + 1 == members.size()) {
          if (group.size() > 1 && across_pays(chains, group)) groups.push_back(group);
          group.clear();
        }
      }
    }
    return groups;
  }
  // Of the first `terms` terms.
  uint64_t other_factors_hash(const Chain& c, size_t terms) const {
    const auto& live = uses_.live[c.root];
    uint64_t h = c.terms.size();
    auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
    for (int l = 0; l < kLanes; ++l) mix(live[l]);
    for (int g = 0; g < kGroups; ++g)
      for (size_t k = 0; live_group(live, g) && k < terms; ++k)
        for (const MxuLane& m : group_factors(c.v, live, g, k).second)
          mix(uint64_t(m.src.buf) ^ uint64_t(m.src.index) << 8 ^ uint64_t(m.src.bits) << 40 ^ m.negate);
    return h;
  }
  bool same_other_factors(const Chain& a, const Chain& b) const {
    const auto& live = uses_.live[a.root];
    if (a.terms.size() != b.terms.size() || live != uses_.live[b.root]) return false;
    for (int g = 0; g < kGroups; ++g)
      for (size_t k = 0; live_group(live, g) && k < a.terms.size(); ++k)
        if (group_factors(a.v, live, g, k).second != group_factors(b.v, live, g, k).second) return false;
    return true;
  }

  // A lane group's factors of term k: the one its live lanes share (the WS activation) and each lane's other.
  static std::pair<MxuLane, std::array<MxuLane, kGroupLanes>> group_factors(
      const Values& v, const std::array<bool, kLanes>& live, int g, size_t k) {
    const bool x_shared = shared(v.x[k], live, g);
    const MxuTile& act = x_shared ? v.x[k] : v.y[k];
    const MxuTile& other = x_shared ? v.y[k] : v.x[k];
    std::pair<MxuLane, std::array<MxuLane, kGroupLanes>> out{};
    for (int c = 0; c < kGroupLanes; ++c) {
      const int l = g * kGroupLanes + c;
      if (!live[l]) continue;
      out.first = act[l];
      out.second[c] = other[l];
    }
    return out;
  }

  size_t slots() const { return size_t(max_slices_) * std::max(kGroups, kSliceTerms); }  // WMEM / AMEM
  // The group's K-block from `first` on: the most slices a launch's WMEM and AMEM hold (the dot of the most
  // slices it might take, its dispatches counted slice by slice).
  size_t across_block_end(const std::vector<Chain>& chains, const std::vector<int>& group,
                          size_t first) const {
    const size_t terms = chains[group[0]].terms.size();
    const size_t most = std::min(terms, first + size_t(max_slices_) * kSliceTerms);
    const MxuDot dot = across_dot(chains, group, first, most);
    for (size_t slices = size_t(max_slices_); slices > 1; --slices) {
      std::set<int> weights, acts;  // the distinct operands of the dispatches of the first `slices` slices
      for (size_t i = 0, slice = 0; i < dot.dispatches.size(); ++i, ++slice) {
        if (!dot.dispatches[i].accumulate) slice = 0;
        if (slice >= slices) continue;
        weights.insert(dot.dispatches[i].weight);
        acts.insert(dot.dispatches[i].act);
      }
      if (weights.size() <= slots() && acts.size() * kSliceTerms <= slots())  // acts: blocks of up to k rows
        return std::min(terms, first + slices * kSliceTerms);
    }
    return std::min(terms, first + kSliceTerms);
  }

  MxuDot across_dot(const std::vector<Chain>& chains, const std::vector<int>& group, size_t first,
                    size_t last) const {
    MxuDot dot;
    dot.os = dot.across = true;
    const auto& live = uses_.live[chains[group[0]].root];
    std::map<MxuTile, int> weight_ids, act_ids;
    for (size_t r = 0; r < group.size(); ++r) {
      dot.live_rows[r] = true;
      dot.chains.push_back(chains[group[r]].number);
    }
    for (int g = 0; g < kGroups; ++g) {
      if (!live_group(live, g)) continue;
      for (size_t s = first; s < last; s += kSliceTerms) {
        const size_t end = std::min(last, s + kSliceTerms);
        MxuTile w{}, a{};
        for (size_t k = s; k < end; ++k) {
          const int kk = int(k - s);
          for (size_t r = 0; r < group.size(); ++r) {
            const auto [act, other] = group_factors(chains[group[r]].v, live, g, k);
            a[kk * kGroupLanes + int(r)] = act;  // X[r][k]: output r's shared factor
            for (int c = 0; c < kGroupLanes; ++c) w[kk * kGroupLanes + c] = other[c];  // W[k][c]
          }
        }
        dot.dispatches.push_back({intern(weight_ids, dot.weights, choices_.canonical(w), w),
                                  intern(act_ids, dot.acts, choices_.canonical_rows(a, int(end - s)), a), g,
                                  s != first, int(end - s)});
      }
    }
    return dot;
  }

  bool across_pays(const std::vector<Chain>& chains, const std::vector<int>& group) const {
    int64_t alone = 0, together = 0;
    const size_t terms = chains[group[0]].terms.size();
    const size_t block_terms = size_t(kSliceTerms * max_slices_);
    for (int c : group)
      for (size_t first = 0; first < terms; first += block_terms)
        alone += cost(best_block(chains[c], first, std::min(terms, first + block_terms)));
    for (size_t first = 0; first < terms;) {
      const size_t last = across_block_end(chains, group, first);
      together += cost(across_dot(chains, group, first, last));
      first = last;
    }
    return together < alone;
  }

  // The group's K-blocks, each an MxuDot across its chains, placed in each chain as its blocks.
  void rewrite_across(const std::vector<Chain>& chains, const std::vector<int>& group) {
    std::vector<size_t> firsts;
    std::vector<MxuDot> blocks;
    const size_t terms = chains[group[0]].terms.size();
    for (size_t first = 0; first < terms;) {
      const size_t last = across_block_end(chains, group, first);
      blocks.push_back(across_dot(chains, group, first, last));
      firsts.push_back(first);
      first = last;
    }
    std::vector<const Chain*> outputs;
    for (int c : group) outputs.push_back(&chains[size_t(c)]);
    add_blocks(std::move(blocks), firsts, outputs);
  }
};

}  // namespace

const MxuTile& Choices::canonical(const MxuTile& t) const {
  auto it = same_values.find(t);
  return it == same_values.end() ? t : it->second;
}
MxuTile Choices::canonical_rows(const MxuTile& block, int k) const {
  MxuTile out{};
  for (int r = 0; r < k; ++r) {
    MxuTile row{};
    for (int i = 0; i < kGroupLanes; ++i) row[i] = block[r * kGroupLanes + i];
    row = canonical(row);
    for (int i = 0; i < kGroupLanes; ++i) out[r * kGroupLanes + i] = row[i];
  }
  return out;
}

int fuse_mxu_dots(TileProgram& prog, const TensorCoreConfig& cfg, int first_chain, const Choices& choices,
                  const std::vector<bool>& bfloat16_slots) {
  return Fuser(prog, cfg, first_chain, choices, bfloat16_slots).run();
}

}  // namespace tinytpu::compiler
