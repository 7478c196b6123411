#include "compiler/mxu_dot.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/cost.h"
#include "compiler/op_table.h"
#include "isa/instr_builders.h"
#include "isa/vpu_ops.h"
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

struct Term {
  int mul;               // the MUL node
  int x, y;              // its factors' leaves
  std::vector<int> via;  // CAST nodes between the MUL and the leaves
  bool negated;          // under an odd number of NEGs / SUB right-hand sides
};

class Fuser {
 public:
  Fuser(TileProgram& p, const TensorCoreConfig& cfg, int first_chain, const Choices& choices)
      : p_(p),
        max_slices_(max_slices(cfg)),
        os_fits_(cfg.depth > kSliceTerms),
        next_chain_(first_chain),
        choices_(choices),
        uses_(node_uses(p)) {}

  int run() {
    std::vector<bool> absorbed(p_.nodes.size(), false);
    const std::vector<bool> flat = flattens();
    for (int root = int(p_.nodes.size()) - 1; root >= 0; --root) {
      if (absorbed[root] || !flat[root]) continue;  // a sum that does not flatten may hold one that does
      std::vector<int> adds;
      std::vector<Term> terms;
      collect(root, adds, terms);
      for (int a : adds) absorbed[a] = true;  // its inner sums have the same lanes and fewer terms
      auto values = terms.size() < 2 ? std::nullopt : read(terms, uses_.live[root]);
      if (!values) continue;
      int chain = next_chain_++;
      if (!choices_.veto.count(chain)) rewrite(root, adds, terms, *values, chain);
    }
    return next_chain_;
  }

 private:
  TileProgram& p_;
  const int max_slices_;
  // MXU_OS's kLen reaches the Controller as UInt#(TLog#(depth)): a slice of `depth` terms reads as 0, so a
  // core whose depth is only the array's rows takes weight-stationary dispatches.
  const bool os_fits_;
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

  struct Values {
    std::vector<MxuTile> x, y;  // per term, its factors' lanes
  };
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
  // dispatch per live row, for a read-back of the matrix rows (cost() decides).
  // It needs every term to have a factor that depends only on the lane's row and one only on its
  // column. Returns, per term, whether x is the row factor.
  std::optional<std::vector<bool>> os_orientation(const Values& v,
                                                  const std::array<bool, kLanes>& live) const {
    int groups = 0;
    for (int g = 0; g < kGroups; ++g) groups += live_group(live, g);
    if (groups < 2 || !os_fits_) return std::nullopt;
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
  MxuDot os_dot(size_t first, size_t last, const Values& v, const std::array<bool, kLanes>& live,
                const std::vector<bool>& x_is_row) const {
    MxuDot dot;
    dot.os = true;
    for (int g = 0; g < kGroups; ++g) dot.live_rows[g] = live_group(live, g);
    std::map<MxuTile, int> weight_ids, act_ids;
    for (size_t s = first; s < last; s += kSliceTerms) {
      MxuTile w{}, a{};
      size_t end = std::min(last, s + kSliceTerms);
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
                                s != first, int(end - s)});
    }
    return dot;
  }

  // A block's estimated cycles (compiler/cost.h): its data records (WMEM tiles, AMEM rows) and instructions.
  static int cost(const MxuDot& m) {
    int64_t records = int64_t(m.weights.size());
    if (m.os)
      for (const auto& d : m.dispatches) records += d.k;
    else
      records += int64_t(m.acts.size());
    const MxuDotPlaces at{std::vector<int>(m.weights.size()), std::vector<int>(m.dispatches.size())};
    std::vector<Instr> program = mxu_dot_dispatches(m, at);
    const std::vector<Instr> readback = mxu_dot_readback(m, at);
    program.insert(program.end(), readback.begin(), readback.end());
    return int(estimated_cycles(records, program));
  }
  // OS is taken over WS only when it is estimated faster by more than a WAIT_MXU: the margin the plans were
  // made with (an earlier estimate charged the OS read-back a WAIT_MXU it does not have), kept so that no
  // plan changes.
  static inline const int kOsMargin = instr_cycles(SxuOpcode::kWaitMxu);

  // One MXU_DOT per block of up to max_slices_ K-slices, summed by ADDs; the new nodes reuse the
  // absorbed nodes' positions (all before the root), so program order and every reference stay valid.
  void rewrite(int root, const std::vector<int>& adds, const std::vector<Term>& terms, const Values& v,
               int chain) {
    std::vector<int> slots;  // absorbed node positions, ascending; the root last
    for (const Term& t : terms) {
      slots.push_back(t.mul);
      slots.insert(slots.end(), t.via.begin(), t.via.end());
    }
    for (int a : adds)
      if (a != root) slots.push_back(a);
    std::sort(slots.begin(), slots.end());
    slots.push_back(root);
    const auto& live = uses_.live[root];
    size_t block_terms = size_t(kSliceTerms * max_slices_);
    std::vector<int> blocks;
    size_t next_slot = 0;
    auto os = os_orientation(v, live);
    for (size_t first = 0; first < terms.size(); first += block_terms) {
      size_t last = std::min(terms.size(), first + block_terms);
      MxuDot dot = ws_dot(first, last, v, live);
      if (os) {
        MxuDot alt = os_dot(first, last, v, live, *os);
        if (cost(alt) + kOsMargin < cost(dot)) dot = std::move(alt);
      }
      dot.chain = chain;
      p_.mxu.push_back(std::move(dot));
      TileNode n{Op::MXU_DOT, node(root).dtype};
      n.mxu = int(p_.mxu.size()) - 1;
      // A block sits where its first term's product was: in a kernel traced K-outermost, the blocks of
      // one K-range of chains that share activation rows are then neighbours in program order, and one
      // launch can load those rows once for all of them.
      int at = last == terms.size() && blocks.empty() ? root : terms[first].mul;
      p_.nodes[at] = n;
      blocks.push_back(at);
    }
    if (blocks.size() == 1) fold_epilogue(root);
    // Partial sums of the blocks, left to right, ending at the root, each after its operands.
    slots.erase(
        std::remove_if(slots.begin(), slots.end(),
                       [&](int s) { return std::find(blocks.begin(), blocks.end(), s) != blocks.end(); }),
        slots.end());
    int acc = blocks[0];
    for (size_t b = 1; b < blocks.size(); ++b) {
      while (b + 1 < blocks.size() && slots[next_slot] < blocks[b]) ++next_slot;
      int at = b + 1 == blocks.size() ? root : slots[next_slot++];
      p_.nodes[at] = TileNode{Op::ADD, node(root).dtype, node(root).dtype, acc, blocks[b]};
      acc = at;
    }
  }
};

}  // namespace

MxuTile Choices::canonical(const MxuTile& t) const {
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

int fuse_mxu_dots(TileProgram& prog, const TensorCoreConfig& cfg, int first_chain, const Choices& choices) {
  return Fuser(prog, cfg, first_chain, choices).run();
}

// WS: one activation row per dispatch, its column sums written or accumulated into a PSUM row of bucket 0.
// OS: MXU_OS, then MXU_OS_ACCUMULATE per slice. A single dispatch is one MXU_VPU_EPILOGUE, synchronous: its
// column sums land in dst (row 0) when it finishes, combined with the epilogue's operand or, by an op the
// Controller does not wire (hardware.md §2.3), unchanged.
std::vector<Instr> mxu_dot_dispatches(const MxuDot& m, const MxuDotPlaces& at) {
  if (m.single_dispatch()) {
    constexpr VpuOpcode kPassThrough = VpuOpcode::kOr;
    const MxuDot::Dispatch& ds = m.dispatches[0];
    const bool to_vmem = at.out_slot >= 0;
    const int src2 = to_vmem ? 0 : m.epilogue_op ? at.epilogue_src : at.dst;
    return {instr::mxu_vpu_epilogue(to_vmem ? 0 : at.dst, at.weights[ds.weight], at.acts[0], /*tiles*/ 1,
                                    src2, m.epilogue_op.value_or(kPassThrough), to_vmem,
                                    to_vmem ? at.out_slot : 0)};
  }
  std::vector<Instr> out;
  for (size_t i = 0; i < m.dispatches.size(); ++i) {
    const MxuDot::Dispatch& ds = m.dispatches[i];
    const int w = at.weights[ds.weight], a = at.acts[i];
    if (m.os)
      out.push_back(ds.accumulate ? instr::mxu_os_accumulate(w, a, ds.k) : instr::mxu_os(w, a, ds.k));
    else
      out.push_back(instr::mxu(w, a, /*tiles*/ 1, ds.accumulate ? PsumMode::kAccumulate : PsumMode::kWrite,
                               /*bucket*/ 0, ds.row));
  }
  return out;
}

// WS: once the MXU is done, the whole bucket read (bucket 0 is free again after the read), or its row 0 alone
// when no other row holds a result. OS: the live matrix rows one LOAD_MXU_MATRIX_ROW each (row 0 of the
// scratch vreg), stacked in bucket 0 (the first by PSUM_WRITE when it is row 0, else after PSUM_CLEAR), then
// read as one tile.
std::vector<Instr> mxu_dot_readback(const MxuDot& m, const MxuDotPlaces& at) {
  if (m.single_dispatch()) return {};
  if (!m.os) {
    const bool row0_only =
        std::all_of(m.dispatches.begin(), m.dispatches.end(), [](const auto& ds) { return ds.row == 0; });
    return {instr::wait_mxu(), row0_only ? instr::psum_read_row(at.dst, /*bucket*/ 0, /*row*/ 0)
                                         : instr::psum_read(at.dst, /*bucket*/ 0)};
  }
  std::vector<Instr> out;
  if (!m.live_rows[0]) out.push_back(instr::psum_clear(/*bucket*/ 0));
  for (int r = 0; r < kRows; ++r) {
    if (!m.live_rows[r]) continue;
    out.push_back(instr::load_mxu_matrix_row(at.scratch, r));
    out.push_back(r == 0
                      ? instr::psum_write(/*bucket*/ 0, at.scratch)  // its other rows zero: the whole bucket
                      : instr::psum_accumulate_row(/*bucket*/ 0, r, at.scratch));
  }
  out.push_back(instr::psum_read(at.dst, /*bucket*/ 0));
  return out;
}

}  // namespace tinytpu::compiler
