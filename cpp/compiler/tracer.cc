#include "compiler/tracer.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "compiler/op_table.h"

namespace tinytpu::compiler {

namespace {

using Value = TraceValue;

bool is_int_like(DType d) { return !is_float(d) && d != DType::kVoid; }

TraceValue uniform(DType d, int64_t x) {  // the same known value in every lane
  TraceValue v;
  v.kind = TraceValue::kConst;
  v.dtype = d;
  v.v.fill(x);
  return v;
}

// `res` becomes a constant of dtype `d` whose lanes the caller writes (not cleared first: they are all
// written).
void set_const(TraceValue& res, DType d) {
  res.kind = TraceValue::kConst;
  res.dtype = d;
  res.tile = res.buf = res.dyn = -1;
  res.reg = res.adds_zero_exactly = false;
}

// Index arithmetic on known lane values: the op table's fold.
auto folder(Op op) {
  auto f = op_info(op).fold;
  if (!f) throw Unsupported(std::string("cannot fold ") + op_name(op));
  return f;
}
int64_t fold(Op op, DType d, int64_t a, int64_t b, int64_t c) { return folder(op).one(d, a, b, c); }

bool is_alu(Op op) { return op >= Op::ADD && op <= Op::TRUNC; }

// The buffer under a pointer: `node` with its INDEX and AFTER wrappers taken off (-1: malformed IR).
int pointer_base(const Kernel& k, int node) {
  while (node >= 0 && (k.nodes[node].op == Op::INDEX || k.nodes[node].op == Op::AFTER))
    node = k.nodes[node].src.empty() ? -1 : k.nodes[node].src[0];
  return node;
}

}  // namespace

BuffersTouched buffers_touched(const Kernel& k) {
  BuffersTouched t;
  for (const Node& n : k.nodes) {
    if (n.op != Op::STORE && n.op != Op::LOAD) continue;
    const int base = n.src.empty() ? -1 : pointer_base(k, n.src[0]);
    const bool global = base >= 0 && k.nodes[base].op == Op::PARAM && k.nodes[base].global;
    if (global) (n.op == Op::STORE ? t.written : t.read).insert(int(k.nodes[base].ivalue));
    if (n.op == Op::LOAD && !global && (base < 0 || k.nodes[base].op != Op::BUFFER))
      t.reads_unknown = true;  // a pointer of another kind: any buffer may be read
  }
  return t;
}

std::set<int> rows_picked_by_variables(const Kernel& k) {
  std::vector<bool> on_variable(k.nodes.size(), false);  // the node's value depends on a scalar variable
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const Node& n = k.nodes[i];
    on_variable[i] = n.op == Op::PARAM && !n.global;
    for (int s : n.src)
      on_variable[i] = on_variable[i] || (s >= 0 && size_t(s) < i && on_variable[size_t(s)]);
  }
  std::set<int> picked, fixed;
  for (const Node& n : k.nodes) {
    if (n.op != Op::LOAD || n.src.empty()) continue;
    const int base = pointer_base(k, n.src[0]);
    if (base < 0 || k.nodes[base].op != Op::PARAM || !k.nodes[base].global) continue;
    const Node& index = k.nodes[n.src[0]];
    const bool by_variable =
        index.op == Op::INDEX && index.src.size() > 1 && on_variable[size_t(index.src[1])];
    (by_variable ? picked : fixed).insert(int(k.nodes[base].ivalue));
  }
  for (int slot : fixed) picked.erase(slot);
  return picked;
}

namespace {

// Every lane of `v` is known to be `x`.
bool all_lanes(const TraceValue& v, int64_t x) {
  return v.kind == TraceValue::kConst &&
         std::all_of(v.v.begin(), v.v.end(), [&](int64_t l) { return l == x; });
}

// A float32 op on known lanes, computed by its VPU instruction: the lanes the hardware would compute.
void vpu_f32(VpuOpcode op, const Lanes& x, const Lanes& y, Lanes& res) {
  Tile a, b, out;
  for (int l = 0; l < kLanes; ++l) {
    a[l] = int32_t(uint32_t(x[l]));
    b[l] = int32_t(uint32_t(y[l]));
  }
  kVpuOps[size_t(op)].fn(a, b, Tile{}, out);
  for (int l = 0; l < kLanes; ++l) res[l] = uint32_t(out[l]);
}

// A float32 value that no lane holds as -0.0: a constant without it, or a tile that adds +0.0 exactly.
bool never_negative_zero(const TraceValue& v) {
  if (v.kind == TraceValue::kTile) return v.adds_zero_exactly;
  if (v.kind != TraceValue::kConst) return false;
  for (int64_t lane : v.v)
    if (uint32_t(lane) == 0x80000000u) return false;
  return true;
}

}  // namespace

std::optional<uint32_t> uniform_bits(const TileProgram& p, const TileNode& n) {
  if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0) return std::nullopt;
  const LeafLanes& lanes = p.lanes(n);
  for (const auto& l : lanes)
    if (l.buf >= 0 || l.bits != lanes[0].bits) return std::nullopt;
  return lanes[0].bits;
}

NodeUses node_uses(const TileProgram& p) {
  int n = int(p.nodes.size());
  NodeUses u{std::vector<int>(n, 0), std::vector<std::array<bool, kLanes>>(n, std::array<bool, kLanes>{})};
  for (const auto& s : p.stores)
    for (int r : {s.value, s.gate, s.index_node})
      if (r >= 0) {
        ++u.count[r];
        for (int l = 0; l < kLanes; ++l) u.live[r][l] |= s.active[l];
      }
  for (int i = n - 1; i >= 0; --i) {  // operands come before their readers
    const TileNode& t = p.nodes[i];
    bool crosses = t.op == Op::LANE_REDUCE || t.op == Op::LANE_BROADCAST;  // reads lanes it does not write
    for (int o : {t.a, t.b, t.c}) {
      if (o < 0) continue;
      ++u.count[o];
      // bitwise, not ||: the lanes then combine as one vector op (this runs over every node of a batch)
      for (int l = 0; l < kLanes; ++l) u.live[o][l] |= u.live[i][l] | crosses;
    }
  }
  return u;
}

int64_t Tracer::uniform_value(int node, const std::vector<int64_t>& known) const {
  const Node& n = k_.nodes[node];
  auto arg = [&](int i) { return uniform_value(n.src[i], known); };
  switch (n.op) {
    case Op::CONST:
      return n.ivalue;
    case Op::CAST:
      return wrap(n.dtype, arg(0));
    case Op::PARAM:
      if (!n.global) return known[n.ivalue];
      break;
    default:
      if (is_alu(n.op) && is_int_like(n.dtype))
        return fold(n.op, n.dtype, arg(0), n.src.size() > 1 ? arg(1) : 0, n.src.size() > 2 ? arg(2) : 0);
  }
  throw Unsupported("loop bound of kernel " + k_.name + " depends on " + op_name(n.op));
}

// The kernel's analyses, in order: who reads each node, the scalar variables' values, the lane-parallel
// ranges (and each loop's end and enclosing loop), the loops guarded before they start, the buffers read and
// written (buffers_touched), the chunking, and the prefix that may be pinned.
Tracer::Tracer(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& buffer_sizes,
               const TraceLimits& limits, ChunkLayout layout)
    : k_(k), sizes_(buffer_sizes), limits_(limits), slot_sizes_(buffer_sizes) {
  slot_sizes_.push_back(0);  // the counter slot (counter_slot): not gathered from as a buffer
  last_reader_.assign(k.nodes.size(), -1);
  for (int i = 0; i < int(k.nodes.size()); ++i)
    for (int s : k.nodes[i].src)
      if (s >= 0 && s < int(k.nodes.size())) last_reader_[s] = i;
  bind_variables(vals);
  find_parallel_ranges();
  find_guarded_loops();
  touched_ = buffers_touched(k);
  choose_chunking(layout);
  find_pinnable_prefix();
}

// Scalar variables arrive in `vals` in PARAM slot order; index them by slot.
void Tracer::bind_variables(const std::vector<int64_t>& vals) {
  std::vector<int64_t> var_slots;
  for (const Node& n : k_.nodes)
    if (n.op == Op::PARAM && !n.global) var_slots.push_back(n.ivalue);
  std::sort(var_slots.begin(), var_slots.end());
  int64_t max_slot = var_slots.empty() ? 0 : var_slots.back();
  vals_.assign(max_slot + 1, 0);
  for (size_t i = 0; i < var_slots.size() && i < vals.size(); ++i) vals_[var_slots[i]] = vals[i];
}

// Lane-parallel ranges: not REDUCE and not inside a REDUCE range; they must nest in one chain. Each loop's
// END, and the innermost loop around each range that is not lane-parallel.
void Tracer::find_parallel_ranges() {
  const Kernel& k = k_;
  enclosing_loop_.assign(k.nodes.size(), -1);
  loop_end_.assign(k.nodes.size(), -1);
  std::vector<int> open;  // RANGE nodes currently open
  int reduce_depth = 0;
  for (int i = 0; i < int(k.nodes.size()); ++i) {
    const Node& n = k.nodes[i];
    if (n.op == Op::RANGE) {
      if (!n.reduce && reduce_depth == 0) {
        for (int p : parallel_)
          if (std::find(open.begin(), open.end(), p) == open.end())
            throw Unsupported("kernel " + k.name + " has sibling loop nests");
        parallel_.push_back(i);
        bounds_.push_back(uniform_value(n.src[0], vals_));
        points_ *= std::max<int64_t>(bounds_.back(), 0);
      }
      reduce_depth += n.reduce || reduce_depth > 0;
      for (auto o = open.rbegin(); o != open.rend() && enclosing_loop_[i] < 0; ++o)
        if (std::find(parallel_.begin(), parallel_.end(), *o) == parallel_.end()) enclosing_loop_[i] = *o;
      open.push_back(i);
    } else if (n.op == Op::END) {
      if (n.src.size() != 2) throw Unsupported("kernel " + k.name + " has a conditional loop back-edge");
      loop_end_[n.src[1]] = i;
      open.erase(std::remove(open.begin(), open.end(), n.src[1]), open.end());
      const Node& r = k.nodes[n.src[1]];
      if (reduce_depth > 0 &&
          (r.reduce || std::find(parallel_.begin(), parallel_.end(), n.src[1]) == parallel_.end()))
        --reduce_depth;
    }
  }
}

// Chunks of kLanes consecutive points, or kRows x kRows blocks of the two innermost parallel ranges for a
// reduction (integer data; a float reduction's layout is the caller's, `layout`).
void Tracer::choose_chunking(ChunkLayout layout) {
  const Kernel& k = k_;
  size_t np = parallel_.size();
  bool reduces = std::any_of(k.nodes.begin(), k.nodes.end(),
                             [](const Node& n) { return n.op == Op::RANGE && n.reduce; });
  bool int_data = std::any_of(k.nodes.begin(), k.nodes.end(), [](const Node& n) {
    return n.op == Op::PARAM && n.global && is_lane_int(n.dtype);
  });
  chunks_ = (points_ + kLanes - 1) / kLanes;
  if (reduces && np >= 2 && bounds_[np - 1] >= kRows && bounds_[np - 2] >= kRows) {
    int64_t blocks = (bounds_[np - 1] + kRows - 1) / kRows * ((bounds_[np - 2] + kRows - 1) / kRows);
    for (size_t r = 0; r + 2 < np; ++r) blocks *= std::max<int64_t>(bounds_[r], 0);
    bool blockable = 4 * blocks <= 5 * chunks_;  // ragged edges may cost at most a quarter more chunks
    blocked_ = blockable && (layout == ChunkLayout::kBlocked || (layout == ChunkLayout::kAuto && int_data));
    if (blocked_) chunks_ = blocks;
    layout_open_ = blockable && !int_data;  // the layout of a float reduction is the caller's to choose
  }
}

// A prefix may be pinned when it writes no global memory and opens no IF (pin_prefix decides whether it is
// worth it).
void Tracer::find_pinnable_prefix() {
  const Kernel& k = k_;
  if (parallel_.empty() || num_chunks() < 2) return;
  int end = *std::min_element(parallel_.begin(), parallel_.end());
  for (int i = 0; i < end; ++i) {
    const Node& n = k.nodes[i];
    prefix_loops_ = prefix_loops_ || n.op == Op::RANGE;
    if (n.op == Op::IF) return;
    if (n.op == Op::STORE) {
      const int base = pointer_base(k, n.src[0]);
      if (base < 0 || k.nodes[base].op == Op::PARAM) return;
    }
  }
  std::vector<bool> used(end, false);
  for (int i = end; i < int(k.nodes.size()); ++i)
    for (int s : k.nodes[i].src)
      if (s < end) used[s] = true;
  for (int s = 0; s < end; ++s)
    if (used[s]) prefix_uses_.push_back(s);
  prefix_end_ = end;
}

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

}  // namespace

ChunkPeriod Tracer::chunk_period() const {
  const auto& nodes = k_.nodes;
  const int n_nodes = int(nodes.size()), np = int(parallel_.size());
  if (np == 0 || points_ == 0) return {};
  // Per node: an integer known in every lane (folded while tracing, never a tile), and a value the same in
  // every lane of every chunk.
  std::vector<bool> known(n_nodes, false);
  std::vector<std::optional<int64_t>> fixed(n_nodes);
  for (int i = 0; i < n_nodes; ++i) {
    const Node& n = nodes[i];
    if (!is_int_like(n.dtype)) continue;
    bool srcs_known = true, srcs_fixed = true;
    for (int s : n.src) {
      srcs_known = srcs_known && known[s];
      srcs_fixed = srcs_fixed && fixed[s].has_value();
    }
    const bool cast = n.op == Op::CAST && !n.src.empty() && is_int_like(nodes[n.src[0]].dtype);
    const bool alu = is_alu(n.op) && op_info(n.op).fold;
    known[i] = n.op == Op::CONST || n.op == Op::RANGE || (n.op == Op::PARAM && !n.global) ||
               ((cast || alu) && srcs_known);
    if (n.op == Op::CONST) fixed[i] = n.ivalue;
    if (n.op == Op::PARAM && !n.global) fixed[i] = vals_[n.ivalue];
    if (cast && srcs_fixed) fixed[i] = wrap(n.dtype, *fixed[n.src[0]]);
    if (alu && srcs_fixed && !n.src.empty())
      fixed[i] = fold(n.op, n.dtype, *fixed[n.src[0]], n.src.size() > 1 ? *fixed[n.src[1]] : 0,
                      n.src.size() > 2 ? *fixed[n.src[2]] : 0);
  }
  // Per buffer slot, how far parallel range `r` moves its element indices per unit: none when the range's
  // value reaches anything but element indices of global buffers through ADD, SUB, NEG, and MUL or SHL by a
  // fixed value, or when two INDEX nodes of one buffer move differently.
  auto steps_of = [&](int r) -> std::optional<std::vector<int64_t>> {
    enum : uint8_t { kNot, kIndex, kPointer };
    std::vector<uint8_t> moved(n_nodes, kNot);
    std::vector<int64_t> step(n_nodes, 0);  // of a kIndex node
    std::vector<int64_t> slot_step(sizes_.size(), 0);
    std::vector<bool> indexed(sizes_.size(), false);
    for (int i = 0; i < n_nodes; ++i) {
      const Node& n = nodes[i];
      if (i == parallel_[r]) {
        moved[i] = kIndex;
        step[i] = 1;
        continue;
      }
      std::vector<size_t> from;  // source positions the range's value flows through
      for (size_t j = 0; j < n.src.size(); ++j)
        if (!orders_only(n, j) && moved[n.src[j]] != kNot) from.push_back(j);
      if (n.op == Op::INDEX) {
        const int base = pointer_base(k_, n.src[0]);
        if (base < 0 || nodes[base].op != Op::PARAM || !nodes[base].global) {
          if (!from.empty()) return std::nullopt;  // a register's element
          continue;
        }
        const int slot = int(nodes[base].ivalue);
        int64_t by = 0;
        if (!from.empty()) {
          const int index = n.src[1];
          if (from != std::vector<size_t>{1} || moved[index] != kIndex || !wide_int(nodes[index].dtype) ||
              sizes_[slot] > INT32_MAX)
            return std::nullopt;
          by = step[index];
          moved[i] = kPointer;
        }
        if (indexed[slot] && slot_step[slot] != by) return std::nullopt;
        indexed[slot] = true;
        slot_step[slot] = by;
        continue;
      }
      if (from.empty()) continue;
      if (n.op == Op::AFTER) {
        moved[i] = moved[n.src[0]];
        step[i] = step[n.src[0]];
        continue;
      }
      if (n.op == Op::LOAD || n.op == Op::STORE) {  // through the pointer only: what is loaded is data
        if (from != std::vector<size_t>{0}) return std::nullopt;
        continue;
      }
      for (size_t j : from)
        if (moved[n.src[j]] != kIndex) return std::nullopt;
      // MUL, SHL: the other operand, fixed
      const bool has_factor = from.size() == 1 && n.src.size() == 2 && fixed[n.src[1 - from[0]]];
      const int64_t factor = has_factor ? *fixed[n.src[1 - from[0]]] : 0;
      int64_t by = 0;
      bool exact = wide_int(n.dtype);
      switch (n.op) {
        case Op::ADD:
        case Op::SUB:
          for (size_t j : {size_t(0), size_t(1)}) {
            const int s = n.src[j];
            exact = exact && (moved[s] == kIndex || known[s]) &&
                    !__builtin_add_overflow(by, n.op == Op::SUB && j == 1 ? -step[s] : step[s], &by);
          }
          break;
        case Op::NEG:
          by = -step[n.src[0]];
          break;
        case Op::MUL:
          exact = exact && has_factor && !__builtin_mul_overflow(step[n.src[from[0]]], factor, &by);
          break;
        case Op::SHL:
          exact = exact && has_factor && from[0] == 0 && factor >= 0 && factor <= 30 &&
                  !__builtin_mul_overflow(step[n.src[0]], int64_t(1) << factor, &by);
          break;
        default:
          exact = false;
      }
      if (!exact) return std::nullopt;
      moved[i] = kIndex;
      step[i] = by;
    }
    return slot_step;
  };
  // The outer ranges are the first `outer` parallel ranges: each moves element indices only, and every chunk
  // lies within one of their points (the lanes of a chunk differ only in the other ranges). Failing that, the
  // outermost range alone, when its points do not fill whole chunks: `units` of its points do, and a chunk
  // that many points on has every lane's outermost range moved by `units` and the others' kept.
  std::vector<std::vector<int64_t>> steps;
  const int candidates = blocked_ ? np - 2 : np;
  for (int r = 0; r < candidates; ++r) {
    auto s = steps_of(r);
    if (!s) break;
    steps.push_back(std::move(*s));
  }
  ChunkPeriod p;
  for (int outer = int(steps.size()); outer > 0 && p.chunks == 0; --outer) {
    int64_t inner = 1;  // points (linear) or chunks (blocked) per point of the outer ranges
    for (int r = outer; r < candidates; ++r) inner *= bounds_[r];
    if (blocked_)
      p.chunks = inner * ((bounds_[np - 1] + kRows - 1) / kRows) * ((bounds_[np - 2] + kRows - 1) / kRows);
    else if (inner % kLanes == 0)
      p.chunks = inner / kLanes;
    else if (outer == 1 && points_ % kLanes == 0)  // every lane of every chunk a point of the kernel
      p.units = std::lcm(inner, int64_t(kLanes)) / inner, p.chunks = p.units * inner / kLanes;
    if (p.chunks > 0) {
      p.bounds.assign(bounds_.begin(), bounds_.begin() + outer);
      p.steps.assign(steps.begin(), steps.begin() + outer);
    }
  }
  if (p.chunks == 0 || p.chunks >= chunks_) return {};
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

int Tracer::pin(TileProgram& out, int tile, int number) {
  TileStore keep{-1, {}, {}, tile};
  keep.active.fill(true);
  keep.pin = number;
  out.stores.push_back(keep);
  return keep.pin;
}

void Tracer::pin_prefix(std::vector<Value>& val, TileProgram& out) {
  std::vector<Value> kept(prefix_end_);
  int tiles = 0;
  for (int s : prefix_uses_) {
    const Value& v = val[s];
    if (v.reg || v.dyn >= 0) {  // registers and data-indexed pointers are not carried over: no pinning
      prefix_end_ = -1;
      return;
    }
    kept[s] = v;
    tiles += v.kind == Value::kTile;
  }
  // Worth it when the prefix loops, or computes more instructions than it keeps tiles: each kept tile is a
  // leaf the loader fills in every later chunk, in place of the prefix's operations (a random kernel's key
  // schedule, a shared divisor's reciprocal, say). An op without an instruction of its own lowers to several:
  // counted as four, fewer than any such lowering (DIV_SCALE's five, RECIPROCAL's dozen).
  int64_t computed = 0;
  for (auto n = out.nodes.begin() + int64_t(first_node_); n != out.nodes.end(); ++n) {
    if (n->op == Op::LOAD) continue;
    const OpInfo& info = op_info(n->op);
    const bool one =
        n->op == Op::CAST || n->op == Op::BITCAST || (is_float(n->dtype) ? info.f32_op : info.int_op);
    computed += one ? 1 : 4;
  }
  // A prefix of constants alone (no loop, no tile made) is not pinned, but its values are the same in every
  // chunk: later chunks start after it all the same.
  prefix_constant_ = !prefix_loops_ && out.nodes.size() == first_node_;
  if (!prefix_loops_ && computed <= tiles && !prefix_constant_) {
    prefix_end_ = -1;
    return;
  }
  for (int s : prefix_uses_)
    if (kept[s].kind == Value::kTile) kept[s].tile = pin(out, kept[s].tile, prefix_pin(prefix_pins_++));
  prefix_vals_ = std::move(kept);
  prefix_ready_ = true;
}

void Tracer::start_chunk(int64_t chunk) {
  ChunkState& s = st_;
  // A fresh state, but the per-node vectors keep their storage: a kernel of many short chunks spent a
  // noticeable part of tracing allocating them again.
  auto val = std::move(s.val);
  auto iter = std::move(s.iter), bound = std::move(s.bound), iteration_start = std::move(s.iteration_start);
  s = ChunkState{};
  s.chunk = chunk;
  (s.val = std::move(val)).assign(k_.nodes.size(), Value{});
  (s.iter = std::move(iter)).assign(k_.nodes.size(), 0);
  (s.bound = std::move(bound)).assign(k_.nodes.size(), 0);
  (s.iteration_start = std::move(iteration_start)).assign(k_.nodes.size(), 0);
  s.lane_range.assign(parallel_.size(), Lanes{});
  std::array<bool, kLanes> active;
  int np = int(parallel_.size());
  int64_t cols = blocked_ ? (bounds_[np - 1] + kRows - 1) / kRows : 0,
          rows = blocked_ ? (bounds_[np - 2] + kRows - 1) / kRows : 0;
  for (int l = 0; l < kLanes; ++l) {
    int64_t f = chunk * kLanes + l;
    int inner = 0;  // dimensions placed by the 4x4 block
    if (blocked_) {
      int64_t i = (chunk / cols % rows) * kRows + l / kRows, j = (chunk % cols) * kRows + l % kRows;
      active[l] = i < bounds_[np - 2] && j < bounds_[np - 1];
      s.lane_range[np - 2][l] = std::min(i, bounds_[np - 2] - 1);  // an inactive lane repeats a real point
      s.lane_range[np - 1][l] = std::min(j, bounds_[np - 1] - 1);
      f = chunk / cols / rows;
      inner = 2;
    } else {
      active[l] = f < points_;
      if (!active[l]) f = std::max<int64_t>(points_ - 1, 0);
    }
    for (int r = np - 1 - inner; r >= 0; --r) {
      s.lane_range[r][l] = bounds_[r] ? f % bounds_[r] : 0;
      f = bounds_[r] ? f / bounds_[r] : 0;
    }
  }
  s.masks.push_back(active);
  s.data_gates.push_back(-1);
}

template <class Fn>
void Tracer::for_live_tiles(Fn fn) {
  ChunkState& s = st_;
  // An IR value computed before the loop and read after its RANGE node: loop-body values are computed
  // again in the next iteration before they are read.
  for (int i = 0; i < s.cut; ++i) {
    Value& v = s.val[i];
    if (last_reader_[i] <= s.cut) continue;
    if (v.kind == Value::kTile) fn(v.tile);
    if (v.kind == Value::kPtr && v.dyn >= 0) fn(v.dyn);
  }
  for (auto& [buf, elems] : s.regs)
    for (auto& [e, v] : elems)
      if (v.kind == Value::kTile) fn(v.tile);
  for (int& g : s.data_gates)
    if (g >= 0) fn(g);
  for (auto& [at, tile_lane] : s.stored)
    if (tile_lane.first >= 0) fn(tile_lane.first);
}

int Tracer::live_tiles_at(int range) {
  const int was = st_.cut;
  st_.cut = range;
  std::vector<int> tiles;
  for_live_tiles([&](int& tile) { tiles.push_back(tile); });
  st_.cut = was;
  std::sort(tiles.begin(), tiles.end());
  return int(std::unique(tiles.begin(), tiles.end()) - tiles.begin());
}

void Tracer::cut(TileProgram& out) {
  std::map<int, int> pin_of;  // tile -> its pinned tile
  for_live_tiles([&](int& tile) {
    auto it = pin_of.find(tile);
    if (it == pin_of.end()) {
      int p = pin(out, tile, cut_pin(int(pin_of.size()), 1 + int(parts_cut_ % 2)));
      st_.pin_dtypes[p] = out.nodes[tile].dtype;
      it = pin_of.emplace(tile, p).first;
    }
    tile = it->second;
  });
}

void Tracer::resume(TileProgram& out) {
  std::map<int, int> leaf_of;  // pinned tile -> its leaf in `out`
  for_live_tiles([&](int& pin) {
    auto [it, fresh] = leaf_of.emplace(pin, int(out.nodes.size()));
    if (fresh) {
      TileNode leaf{Op::LOAD, st_.pin_dtypes.at(pin)};
      leaf.pinned = pin;
      out.nodes.push_back(leaf);
    }
    pin = it->second;
  });
  st_.pin_dtypes.clear();
}

int Tracer::new_tile(const TileNode& given) {
  TileProgram& out = *out_;
  if (out.nodes.size() - first_node_ >= limits_.max_chunk_nodes)
    throw Unsupported(
        "kernel " + k_.name + ": one chunk of " + std::to_string(kLanes) + " outputs unrolls to more than " +
        std::to_string(limits_.max_chunk_nodes) +
        " tile operations with no loop iteration ending among them, where it could be traced in parts");
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
    ++traced_;
    return int(out.nodes.size()) - 1;
  };
  if (given.op == Op::LOAD || (!derived(given.a) && !derived(given.b) && !derived(given.c))) {
    // a leaf, or (most nodes) an operation with no element's function in sight
    return made(given, given.op == Op::LOAD ? derive(given) : std::nullopt);
  }
  TileNode t = given;
  for (int* o : {&t.a, &t.b, &t.c})
    if (derived(*o) && derivations_[derived_[*o]].memo_leaf >= 0) *o = derivations_[derived_[*o]].memo_leaf;
  const std::optional<Derivation> d = derive(t);
  if (!d)  // the operands meet other data here: those worth keeping are kept
    for (int* o : {&t.a, &t.b, &t.c})
      if (derived(*o)) *o = memoize(*o);
  return made(t, d);
}

int Tracer::FunctionTable::number(const Function& f) {
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

std::optional<Tracer::Derivation> Tracer::derive(const TileNode& t) {
  const TileProgram& out = *out_;
  if (t.op == Op::LOAD) {  // one element of a buffer the kernel does not write, in every lane
    if (t.dynamic || t.gated || t.pinned >= 0) return std::nullopt;
    const LeafLanes& lanes = out.lanes(t);
    const LeafLane& first = lanes[0];
    if (first.buf < 0 || first.buf >= counter_slot(sizes_) || !(lanes[kLanes - 1] == first))
      return std::nullopt;
    for (const LeafLane& l : lanes)
      if (!(l == first)) return std::nullopt;
    if (touched_.written.count(first.buf)) return std::nullopt;
    return Derivation{functions_.number({int64_t(Op::LOAD), int64_t(t.dtype), first.buf}), first, 0};
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
    if (d.key != 0 && !(od.element == d.element)) return std::nullopt;  // another element
    d.element = od.element;
    d.cost = std::min(d.cost + od.cost, 1 << 20);
    d.key = 1;
    f[i++] = od.key;
  }
  if (d.key == 0) return std::nullopt;  // constants alone (an operand read from a memo buffer is data)
  d.cost += 1;
  d.key = functions_.number(f);
  return d;
}

int Tracer::memoize(int node) {
  TileProgram& out = *out_;
  Derivation& d = derivations_[derived_[node]];
  const DType dtype = out.nodes[node].dtype;  // (a reference would not outlive the leaf pushed below)
  if (d.cost < kMemoCost || dtype != DType::kF32 || out.nodes[node].op == Op::LOAD) return node;
  if (d.memo_leaf >= 0) return d.memo_leaf;
  ++facts_.memo_uses;
  Memo& m = memos_[d.key];
  const int64_t e = d.element.index;
  if (m.buf < 0) {
    m.buf = d.element.buf;
    const size_t elements = size_t(sizes_[m.buf]);
    m.seen.assign(elements, false);
    m.stored.assign(elements, false);
    m.ready.assign(elements, false);
  }
  if (m.ready[e]) {  // one gather in place of the operations
    TileNode leaf{Op::LOAD, dtype};
    out.lanes(leaf).fill(LeafLane(m.slot, e));
    out.nodes.push_back(leaf);
    derived_.push_back(-1);
    ++memo_reads_;
    return d.memo_leaf = int(out.nodes.size()) - 1;
  }
  d.cost = 0;  // decided for this node: computed here, and stored below when seen before
  const bool again = m.seen[e] && !m.stored[e];
  m.seen[e] = true;
  if (!again) return node;
  if (m.slot < 0) {
    const int64_t kept =
        std::accumulate(slot_sizes_.begin() + memo_slot(sizes_, 0), slot_sizes_.end(), int64_t(0));
    if (kept + int64_t(m.seen.size()) > kMaxMemoElements) return node;
    m.slot = int(slot_sizes_.size());
    slot_sizes_.push_back(int64_t(m.seen.size()));
  }
  TileStore keep{m.slot, {}, {}, node};
  keep.index.fill(e);
  keep.active[0] = true;  // the element is in every lane: one stores it
  m.stored[e] = true;
  if (m.pending.empty()) pending_memos_.push_back(&m);
  m.pending.push_back(e);
  out.stores.push_back(keep);
  return node;
}

BatchFacts Tracer::batch_compiled() {
  for (Memo* m : pending_memos_) {
    for (int64_t e : m->pending) m->ready[e] = true;
    m->pending.clear();
  }
  pending_memos_.clear();
  return std::exchange(facts_, BatchFacts{});
}

void widen(std::vector<std::pair<int64_t, int64_t>>& bounds, int buf, int64_t lo, int64_t hi) {
  if (size_t(buf) >= bounds.size()) bounds.resize(buf + 1, {INT64_MAX, INT64_MIN});
  bounds[buf].first = std::min(bounds[buf].first, lo);
  bounds[buf].second = std::max(bounds[buf].second, hi);
}

// `res` becomes the new tile `t`. Its lanes are left as they were: a tile's value has none, and writing them
// (128 bytes) for every node was a large part of tracing.
void Tracer::set_tile(TraceValue& res, const TileNode& t) {
  res.tile = new_tile(t);
  res.kind = Value::kTile;
  res.dtype = t.dtype;
  res.buf = res.dyn = -1;
  res.reg = res.adds_zero_exactly = false;
}

int Tracer::to_tile(const TraceValue& x) {  // constants become leaf tiles
  if (x.kind == Value::kTile) return x.tile;
  if (x.kind != Value::kConst) throw Unsupported("kernel " + k_.name + ": a pointer used as a value");
  TileNode t{Op::LOAD, x.dtype};
  LeafLanes& lanes = out_->lanes(t);
  const bool counter = (x.dtype == DType::kI32 || x.dtype == DType::kU32) && !all_lanes(x, x.v[0]);
  for (int l = 0; l < kLanes; ++l)
    lanes[l] = counter ? LeafLane(counter_slot(sizes_), x.v[l]) : LeafLane(-1, 0, uint32_t(x.v[l]));
  return new_tile(t);
}

// A load of elements this chunk already stored sees the stored lanes (sequential semantics within a work
// item): each storing tile is selected in over the loaded leaf by a constant lane mask.
void Tracer::forward_stores(TraceValue& res, const TileNode& t, int buf) {
  if (st_.scattered_bufs.count(buf) || t.dynamic)
    throw Unsupported("kernel " + k_.name + ": load from buffer " + std::to_string(buf) +
                      " after a store to it at indices that depend on data");
  std::map<int, std::array<bool, kLanes>> from;  // storing tile -> lanes it provides
  const LeafLanes& leaf = out_->lanes(t);        // read before the masks below add leaves
  for (int l = 0; l < kLanes; ++l) {
    if (leaf[l].buf < 0) continue;
    auto it = st_.stored.find({buf, leaf[l].index});
    if (it == st_.stored.end()) continue;
    auto [tile, lane] = it->second;
    if (tile < 0 || lane != l)
      throw Unsupported("kernel " + k_.name + ": element " + std::to_string(leaf[l].index) + " of buffer " +
                        std::to_string(buf) + " is read back by another lane or after a store gated by data");
    from[tile][l] = true;
  }
  for (const auto& [tile, lanes] : from) {
    TileNode mask{Op::LOAD, DType::kBool};
    LeafLanes& bits = out_->lanes(mask);
    for (int l = 0; l < kLanes; ++l) bits[l].bits = lanes[l];
    int m = new_tile(mask);
    set_tile(res, TileNode{Op::WHERE, t.dtype, DType::kBool, m, tile, res.tile});
  }
}

// A RANGE: a lane-parallel one is the chunk's lane coordinates; a loop starts at 0, or is skipped
// (ip moves to its END) when it runs no iteration or adds nothing (find_guarded_loops).
void Tracer::trace_range(size_t& ip) {
  const Node& n = k_.nodes[ip];
  Value& res = st_.val[ip];
  auto p = std::find(parallel_.begin(), parallel_.end(), int(ip));
  if (p != parallel_.end()) {
    res.kind = Value::kConst;
    res.dtype = n.dtype;
    res.v = st_.lane_range[p - parallel_.begin()];
    return;
  }
  st_.bound[ip] = uniform_value(n.src[0], vals_);
  st_.iter[ip] = 0;
  auto guarded = guarded_loops_.find(int(ip));
  bool adds_nothing = guarded != guarded_loops_.end() &&
                      std::all_of(guarded->second.begin(), guarded->second.end(),
                                  [&](const GuardedAccumulation& acc) { return this->adds_nothing(acc); });
  loops_skipped_ += adds_nothing && st_.bound[ip] > 0;
  facts_.loops_skipped += adds_nothing && st_.bound[ip] > 0;
  if (st_.bound[ip] <= 0 || adds_nothing) {  // skip to after the matching END
    if (loop_end_[ip] < 0) throw Unsupported("kernel " + k_.name + ": a loop without its END");
    ip = size_t(loop_end_[ip]);
    return;
  }
  st_.iteration_start[ip] = traced_;
  res = uniform(n.dtype, 0);
}

void Tracer::find_guarded_loops() {
  const auto& nodes = k_.nodes;
  const int size = int(nodes.size());
  auto src = [&](int node, size_t i) { return i < nodes[node].src.size() ? nodes[node].src[i] : -1; };
  // `store` as `acc = acc + WHERE(condition, term, zero)` into a register, guards before loop `r`; or nothing
  auto match = [&](int r, const Node& store) -> std::optional<GuardedAccumulation> {
    if (store.src.size() != 2) return std::nullopt;
    int ptr = store.src[0], sum = store.src[1];
    if (nodes[ptr].op != Op::INDEX || nodes[sum].op != Op::ADD) return std::nullopt;
    GuardedAccumulation acc;
    acc.reg = pointer_base(k_, src(ptr, 0));
    acc.elem = src(ptr, 1);
    acc.dtype = nodes[sum].dtype;
    if (acc.reg < 0 || nodes[acc.reg].op != Op::BUFFER || acc.elem < 0 || acc.elem >= r) return std::nullopt;
    for (size_t i : {0, 1}) {
      int load = src(sum, i), select = src(sum, 1 - i);
      if (load < 0 || select < 0 || nodes[load].op != Op::LOAD || nodes[load].src != std::vector<int>{ptr} ||
          nodes[select].op != Op::WHERE || src(select, 2) < 0 || src(select, 2) >= r)
        continue;
      acc.zero = src(select, 2);
      std::vector<int> conjuncts{src(select, 0)};  // the condition's AND tree, walked without recursion
      while (!conjuncts.empty()) {
        int c = conjuncts.back();
        conjuncts.pop_back();
        if (c < 0) continue;
        if (c < r)
          acc.guards.push_back(c);
        else if (nodes[c].op == Op::AND)
          conjuncts.insert(conjuncts.end(), nodes[c].src.begin(), nodes[c].src.end());
      }
      if (!acc.guards.empty()) return acc;
    }
    return std::nullopt;
  };
  for (int r = 0; r < size; ++r) {
    if (nodes[r].op != Op::RANGE || !nodes[r].reduce) continue;
    std::vector<GuardedAccumulation> accs;
    bool guarded = loop_end_[r] >= 0;
    for (int i = r + 1; i < loop_end_[r] && guarded; ++i) {
      const Node& n = nodes[i];
      if (n.op == Op::IF) guarded = false;
      if (n.op != Op::STORE) continue;
      auto acc = match(r, n);
      if (acc) accs.push_back(*acc);
      guarded = acc.has_value();
    }
    if (guarded && !accs.empty()) guarded_loops_[r] = std::move(accs);
  }
}

bool Tracer::adds_nothing(const GuardedAccumulation& acc) {
  auto all_zero = [&](int node) { return all_lanes(st_.val[node], 0); };
  const Value& elem = st_.val[acc.elem];
  if (!all_zero(acc.zero) || elem.kind != Value::kConst ||
      std::none_of(acc.guards.begin(), acc.guards.end(), all_zero))
    return false;
  auto& regs = st_.regs[acc.reg];
  auto it = regs.find(elem.v[0]);
  const Value x = it == regs.end() ? uniform(acc.dtype, 0) : it->second;  // what the loop's LOAD reads
  if (x.dtype != acc.dtype) return false;
  if (x.kind == Value::kTile) return !is_float(x.dtype) || (x.dtype == DType::kF32 && x.adds_zero_exactly);
  if (x.kind != Value::kConst) return false;
  if (!is_float(x.dtype))  // constant lanes: x + 0 folds to x, as the loop's ADD would fold it
    return std::all_of(x.v.begin(), x.v.end(),
                       [&](int64_t l) { return fold(Op::ADD, x.dtype, l, 0, 0) == l; });
  if (x.dtype != DType::kF32) return false;
  Lanes sum;  // x + (+0.0) on the VPU: x unless a lane is -0.0 or a signalling NaN
  vpu_f32(*op_info(Op::ADD).f32_op, x.v, Lanes{}, sum);
  return sum == x.v;
}

// The END of a loop: the next iteration (ip moves back to its RANGE), or the loop is done. False: the
// part is long enough, and the chunk stops here to be resumed.
bool Tracer::trace_end(size_t& ip) {
  int r = k_.nodes[ip].src[1];
  if (std::find(parallel_.begin(), parallel_.end(), r) != parallel_.end()) return true;
  if (++st_.iter[r] >= st_.bound[r]) return true;
  st_.val[r] = uniform(k_.nodes[r].dtype, st_.iter[r]);
  ip = size_t(r);  // the loop resumes at r + 1
  const int64_t iteration = traced_ - st_.iteration_start[r];
  st_.iteration_start[r] = traced_;
  const size_t part = out_->nodes.size() - first_node_;
  const size_t early = std::min(limits_.early_cut_nodes, limits_.cut_nodes);
  if (part < early) return true;
  // Parts end at iteration ends of the outermost loop whose iterations (estimated by this loop's last one)
  // fit in a part: then most parts trace the same iterations moved by a shift, and are replayed. A part so
  // grows to at most twice the limit.
  auto ends_part = [&](size_t limit) {
    const bool fits = enclosing_loop_[r] >= 0 && iteration * st_.bound[r] <= int64_t(limit);
    return part >= limit && (!fits || part >= 2 * limit);
  };
  // Early cuts only in a long loop, whose parts then mostly repeat: a shorter one lowers better whole (some
  // of EfficientNet's reductions took twice the launches in parts).
  const bool long_loop = iteration * st_.bound[r] >= int64_t(limits_.early_cut_loop);
  bool ends = ends_part(limits_.cut_nodes);
  if (!ends && long_loop && ends_part(early) && part >= next_live_count_) {
    ends = live_tiles_at(r) <= limits_.early_cut_live;
    if (!ends) next_live_count_ = part + early;  // many live here: counted again a part's length on
  }
  if (!ends) return true;
  cut_share_ = double(st_.iter[r]) / double(st_.bound[r]);
  st_.ip = size_t(r) + 1;
  st_.cut = r;
  cut(*out_);
  ++parts_cut_;
  ++facts_.cuts;
  return false;
}

// An IF narrows the lane mask where its condition is known per lane, else adds a data gate.
void Tracer::trace_if(const Node& n) {
  Value c = src(n, 0);
  int gate = st_.data_gates.back();
  auto m = st_.masks.back();
  if (c.kind == Value::kConst) {
    for (int l = 0; l < kLanes; ++l) m[l] = m[l] && c.v[l];
  } else {
    c.dtype = DType::kBool;
    gate = gate < 0 ? to_tile(c) : new_tile(TileNode{Op::AND, DType::kBool, DType::kBool, gate, to_tile(c)});
  }
  st_.masks.push_back(m);
  st_.data_gates.push_back(gate);
}

void Tracer::trace_index(size_t ip) {
  const Node& n = k_.nodes[ip];
  const Value& b = src(n, 0);
  const Value& i = src(n, 1);
  if (b.kind != Value::kBuf) throw Unsupported("kernel " + k_.name + ": INDEX into a value");
  Value& res = st_.val[ip];
  res = b;
  res.kind = Value::kPtr;
  res.dtype = n.dtype;
  if (i.kind == Value::kTile) {
    if (b.reg) throw Unsupported("kernel " + k_.name + ": register index depends on loaded data");
    res.dyn = i.tile;
  } else {
    res.v = i.v;
  }
}

// A LOAD: a register's value, or a leaf gathering the active lanes' elements (with a gate's fallback,
// and the lanes this chunk stored before).
void Tracer::trace_load(size_t ip) {
  const Node& n = k_.nodes[ip];
  const Value& p = src(n, 0);
  Value& res = st_.val[ip];
  if (p.kind != Value::kPtr) throw Unsupported("kernel " + k_.name + ": LOAD from a value, not an INDEX");
  if (p.reg) {
    res = st_.regs[p.buf][p.v[0]];
    if (res.kind == Value::kNone) res = uniform(n.dtype, 0);
    return;
  }
  const Value* gate = n.src.size() == 3 ? &src(n, 2) : nullptr;
  const Value* alt = n.src.size() == 3 ? &src(n, 1) : nullptr;
  bool data_gate = gate && gate->kind == Value::kTile;
  TileNode t{Op::LOAD, n.dtype};
  const auto& m = st_.masks.back();
  t.dynamic = p.dyn >= 0;
  t.gated = data_gate || st_.data_gates.back() >= 0;
  t.a = p.dyn;
  LeafLanes& leaf = out_->lanes(t);
  int64_t lo = INT64_MAX, hi = INT64_MIN;  // the element indices checked
  for (int l = 0; l < kLanes; ++l) {
    if (!m[l]) continue;
    if (gate && !data_gate && !gate->v[l]) {
      if (alt->kind == Value::kConst) leaf[l].bits = uint32_t(alt->v[l]);
    } else if (t.dynamic) {
      leaf[l].buf = p.buf;  // element index known only when the index tile has run
    } else {
      if (p.v[l] < 0 || p.v[l] >= sizes_.at(p.buf)) {
        if (t.gated) continue;  // discarded by the gate's select, or stored nowhere
        throw Unsupported("kernel " + k_.name + ": load of element " + std::to_string(p.v[l]) +
                          " outside buffer " + std::to_string(p.buf));
      }
      leaf[l].buf = p.buf;
      leaf[l].index = p.v[l];
      lo = std::min(lo, p.v[l]);
      hi = std::max(hi, p.v[l]);
    }
  }
  if (t.gated && !t.dynamic)
    ++facts_.gated_loads;
  else if (lo <= hi)
    widen(facts_.loaded, p.buf, lo, hi);
  set_tile(res, t);
  if (st_.stored_bufs.count(p.buf)) forward_stores(res, t, p.buf);
  if (data_gate) {
    TileNode w{Op::WHERE, n.dtype, DType::kBool, gate->tile, res.tile, to_tile(*alt)};
    set_tile(res, w);
  } else if (alt && alt->kind != Value::kConst) {  // a computed fallback: select it where the gate is off
    Value g = *gate;
    g.dtype = DType::kBool;
    TileNode w{Op::WHERE, n.dtype, DType::kBool, to_tile(g), res.tile, to_tile(*alt)};
    set_tile(res, w);
  }
}

// A STORE: to a register (kept under a data gate's select), or to a buffer's elements at the active
// lanes.
void Tracer::trace_store(const Node& n) {
  const Value& p = src(n, 0);
  const Value& x = src(n, 1);
  if (p.kind != Value::kPtr) throw Unsupported("kernel " + k_.name + ": STORE to a value, not an INDEX");
  int gate = st_.data_gates.back();
  if (p.reg) {
    Value& r = st_.regs[p.buf][p.v[0]];
    if (gate >= 0) {  // a register written under a data gate keeps its old value where the gate is off
      Value old = r.kind == Value::kNone ? uniform(x.dtype, 0) : r;
      set_tile(r, TileNode{Op::WHERE, x.dtype, DType::kBool, gate, to_tile(x), to_tile(old)});
    } else {
      r = x;
    }
    return;
  }
  TileStore s{p.buf, p.v, st_.masks.back(), 0, gate, p.dyn};
  for (int l = 0; l < kLanes; ++l) {
    if (p.dyn >= 0 || !s.active[l]) continue;
    if (p.v[l] < 0 || p.v[l] >= sizes_.at(p.buf))
      throw Unsupported("kernel " + k_.name + ": store outside buffer " + std::to_string(p.buf));
    widen(facts_.stored, p.buf, p.v[l], p.v[l]);
  }
  s.value = to_tile(x);
  out_->stores.push_back(s);
  if (!touched_.reads_unknown && !touched_.read.count(p.buf))
    return;  // a buffer the kernel never loads: no read-back
  st_.stored_bufs.insert(p.buf);
  if (p.dyn >= 0) st_.scattered_bufs.insert(p.buf);
  for (int l = 0; l < kLanes; ++l)
    if (p.dyn < 0 && s.active[l]) st_.stored[{p.buf, p.v[l]}] = {gate >= 0 ? -1 : s.value, l};
}

// CAST and BITCAST: folded for integers known per lane, a tile node otherwise.
void Tracer::trace_cast(size_t ip) {
  const Node& n = k_.nodes[ip];
  const Value& x = src(n, 0);
  Value& res = st_.val[ip];
  bool foldable = x.kind == Value::kConst && !is_float(x.dtype) && !is_float(n.dtype);
  // Lanes keep their bits: a bitcast to a 32-bit type, a float to float cast (float32 lanes; a weak float
  // constant is float32 bits), an integer to a 32-bit integer (narrow lanes are held sign- or
  // zero-extended). The value is the source's, constant or tile, without an instruction. A bitcast between
  // narrow integers of the other signedness (int8 -> uint8) extends its lanes the other way: a tile node.
  bool same_bits = (n.op == Op::BITCAST && (dtype_bytes(n.dtype) == 4 || n.dtype == x.dtype)) ||
                   (is_float(x.dtype) && is_float(n.dtype)) ||
                   (is_lane_int(x.dtype) && (n.dtype == DType::kI32 || n.dtype == DType::kU32));
  if (foldable) {
    res = x;
    res.dtype = n.dtype;
    for (auto& e : res.v) e = wrap(n.dtype, e);
  } else if ((x.kind == Value::kConst || x.kind == Value::kTile) && same_bits) {
    res = x;
    res.dtype = n.dtype;
  } else {
    set_tile(res, TileNode{n.op, n.dtype, x.dtype, to_tile(x)});
  }
}

// An ALU op: folded (the op table) when every source is an integer known per lane, folded by the VPU's own
// instruction when every source is a float32 constant, simplified when the result is one of its sources
// (simplify), a tile node otherwise.
void Tracer::trace_alu(size_t ip) {
  const Node& n = k_.nodes[ip];
  Value& res = st_.val[ip];
  bool all_const = !is_float(n.dtype);
  for (int s : n.src)
    all_const = all_const && st_.val[s].kind == Value::kConst && !is_float(st_.val[s].dtype);
  if (all_const) {  // every lane in one call of the fold: this is most of a trace's time
    static const Lanes kNoSource{};
    const Lanes& a = src(n, 0).v;
    const Lanes& b = n.src.size() > 1 ? src(n, 1).v : kNoSource;
    const Lanes& c = n.src.size() > 2 ? src(n, 2).v : kNoSource;
    const auto lanes = folder(n.op).lanes;
    set_const(res, n.dtype);
    lanes(n.dtype, a.data(), b.data(), c.data(), res.v.data());
    return;
  }
  if (fold_float(n, res) || simplify(n, res)) return;
  TileNode t{n.op, n.dtype, src(n, 0).dtype};
  t.a = to_tile(src(n, 0));
  if (n.src.size() > 1) t.b = to_tile(src(n, 1));
  if (n.src.size() > 2) t.c = to_tile(src(n, 2));
  bool adds_zero = n.op == Op::ADD && n.dtype == DType::kF32 &&
                   (never_negative_zero(src(n, 0)) || never_negative_zero(src(n, 1)));
  set_tile(res, t);
  res.adds_zero_exactly = adds_zero;
}

// A float32 op whose sources are all constants, computed by its one VPU instruction (the op table's f32_op):
// the lanes the hardware would compute, bit for bit.
bool Tracer::fold_float(const Node& n, TraceValue& res) {
  const auto& f32_op = op_info(n.op).f32_op;
  if (n.dtype != DType::kF32 || !f32_op || n.src.size() != 2) return false;
  for (int s : n.src)
    if (st_.val[s].kind != Value::kConst || st_.val[s].dtype != DType::kF32) return false;
  set_const(res, n.dtype);
  vpu_f32(*f32_op, src(n, 0).v, src(n, 1).v, res.v);
  return true;
}

// Results that are one of the sources, without an instruction: WHERE on a condition known in every lane
// (all true or all false), x & 0, and x + 0 (integers; float32 when x + +0.0 gives x back bit for bit). A
// term of a reduction whose index test fails in every lane of the chunk (a padded convolution's gradient,
// say) so costs nothing.
bool Tracer::simplify(const Node& n, TraceValue& res) {
  const Value* same = nullptr;
  if (n.op == Op::WHERE) {
    const Value& c = src(n, 0);
    if (all_lanes(c, 1) || all_lanes(c, 0)) same = &src(n, all_lanes(c, 1) ? 1 : 2);
  } else if (n.op == Op::AND) {  // x & 0 is 0: a conjunction with a test failing in every lane fails
    for (int i : {0, 1})
      if (all_lanes(src(n, i), 0)) same = &src(n, i);
  } else if (n.op == Op::ADD) {
    for (int i : {0, 1}) {
      const Value& x = src(n, i);
      const Value& zero = src(n, 1 - i);
      bool exact =
          n.dtype == DType::kF32 ? x.kind == Value::kTile && x.adds_zero_exactly : !is_float(n.dtype);
      if (exact && all_lanes(zero, 0) && (x.kind == Value::kTile || x.kind == Value::kConst)) same = &x;
    }
  }
  if (!same) return false;
  res = *same;
  res.dtype = n.dtype;
  return true;
}

bool Tracer::trace_chunk(int64_t chunk, TileProgram& out) {
  out_ = &out;
  first_node_ = out.nodes.size();
  next_live_count_ = 0;
  size_t start = 0;
  if (st_.chunk == chunk && st_.cut >= 0) {  // the rest of a chunk cut at a loop iteration's end
    resume(out);
    start = st_.ip;
    st_.cut = -1;
  } else {
    start_chunk(chunk);
    if (prefix_ready_) {  // later chunks: the prefix's values, pinned tiles as leaves
      for (int s : prefix_uses_) {
        Value& v = st_.val[s] = prefix_vals_[s];
        if (v.kind != Value::kTile) continue;
        TileNode leaf{Op::LOAD, v.dtype};
        leaf.pinned = prefix_vals_[s].tile;
        v.tile = new_tile(leaf);
      }
      start = size_t(prefix_end_);
    }
  }
  for (size_t ip = start; ip < k_.nodes.size(); ++ip) {
    if (int(ip) == prefix_end_ && !prefix_ready_) pin_prefix(st_.val, out);
    const Node& n = k_.nodes[ip];
    Value& res = st_.val[ip];
    switch (n.op) {
      case Op::SINK:
      case Op::GROUP:
      case Op::NOOP:
      case Op::BARRIER:
      case Op::STACK:
        break;
      case Op::PARAM:
        if (n.global) {
          res.kind = Value::kBuf;
          res.buf = int(n.ivalue);
        } else {
          res = uniform(n.dtype, vals_[n.ivalue]);
        }
        break;
      case Op::BUFFER:
        res.kind = Value::kBuf;
        res.buf = int(ip);
        res.reg = true;
        st_.regs[int(ip)].clear();
        break;
      case Op::CONST:
        res = uniform(n.dtype, is_float(n.dtype) ? n.fbits : n.ivalue);
        break;
      case Op::AFTER:
        res = src(n, 0);
        break;
      case Op::RANGE:
        trace_range(ip);
        break;
      case Op::END:
        if (!trace_end(ip)) return false;
        break;
      case Op::IF:
        trace_if(n);
        break;
      case Op::ENDIF:
        st_.masks.pop_back();
        st_.data_gates.pop_back();
        break;
      case Op::INDEX:
        trace_index(ip);
        break;
      case Op::LOAD:
        trace_load(ip);
        break;
      case Op::STORE:
        trace_store(n);
        break;
      case Op::CAST:
      case Op::BITCAST:
        trace_cast(ip);
        break;
      default:
        trace_alu(ip);
    }
  }
  return true;
}

}  // namespace tinytpu::compiler
