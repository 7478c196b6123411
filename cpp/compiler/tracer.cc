#include "compiler/tracer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "compiler/op_table.h"

namespace tinytpu::compiler {

namespace {

using Value = TraceValue;

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
// ranges (and each loop's end and enclosing loop), the loops guarded before they start, the chunking, and the
// prefix that may be pinned; the buffers read and written (buffers_touched) before them.
Tracer::Tracer(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& buffer_sizes,
               const TraceLimits& limits, ChunkLayout layout, BlockRanges block)
    : k_(k),
      sizes_(buffer_sizes),
      limits_(limits),
      touched_(buffers_touched(k)),
      memos_(buffer_sizes, touched_.written, limits.keep_dot_operands, limits.dot_factors) {
  last_reader_.assign(k.nodes.size(), -1);
  for (int i = 0; i < int(k.nodes.size()); ++i)
    for (int s : k.nodes[i].src)
      if (s >= 0 && s < int(k.nodes.size())) last_reader_[s] = i;
  bind_variables(vals);
  find_parallel_ranges();
  find_guarded_loops();
  choose_chunking(layout, block);
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
        for (int p : chunking_.ranges)
          if (std::find(open.begin(), open.end(), p) == open.end())
            throw Unsupported("kernel " + k.name + " has sibling loop nests");
        chunking_.ranges.push_back(i);
        chunking_.bounds.push_back(uniform_value(n.src[0], vals_));
        chunking_.points *= std::max<int64_t>(chunking_.bounds.back(), 0);
      }
      reduce_depth += n.reduce || reduce_depth > 0;
      for (auto o = open.rbegin(); o != open.rend() && enclosing_loop_[i] < 0; ++o)
        if (std::find(chunking_.ranges.begin(), chunking_.ranges.end(), *o) == chunking_.ranges.end())
          enclosing_loop_[i] = *o;
      open.push_back(i);
    } else if (n.op == Op::END) {
      if (n.src.size() != 2) throw Unsupported("kernel " + k.name + " has a conditional loop back-edge");
      loop_end_[n.src[1]] = i;
      open.erase(std::remove(open.begin(), open.end(), n.src[1]), open.end());
      const Node& r = k.nodes[n.src[1]];
      if (reduce_depth > 0 && (r.reduce || std::find(chunking_.ranges.begin(), chunking_.ranges.end(),
                                                     n.src[1]) == chunking_.ranges.end()))
        --reduce_depth;
    }
  }
}

// Chunks of kLanes consecutive points, or kRows x kRows blocks of the two innermost parallel ranges for a
// reduction (integer data; a float reduction's layout is the caller's, `layout`).
void Tracer::choose_chunking(ChunkLayout layout, BlockRanges block) {
  const Kernel& k = k_;
  Chunking& c = chunking_;
  const int np = int(c.ranges.size());
  bool reduces = std::any_of(k.nodes.begin(), k.nodes.end(),
                             [](const Node& n) { return n.op == Op::RANGE && n.reduce; });
  // tinygrad stores a bfloat16 tensor as uint16: such a buffer is float data where a float MXU takes its
  // products (elsewhere its kernel keeps an integer kernel's layout, which the VPU computes faster)
  const bool bfloat16 = reads_bfloat16_storage(k) && limits_.keep_dot_operands != KeepDotOperands::kNo;
  bool int_data = std::any_of(k.nodes.begin(), k.nodes.end(), [&](const Node& n) {
    return n.op == Op::PARAM && n.global && is_lane_int(n.dtype) && !(n.dtype == DType::kU16 && bfloat16);
  });
  c.chunks = (c.points + kLanes - 1) / kLanes;
  // the blocks of ranges r (rows) and q (columns), the others' points outside: null when the ragged edges
  // would cost more than a quarter more chunks
  auto blocks_of = [&](int r, int q) -> std::optional<int64_t> {
    if (c.bounds[r] < kRows || c.bounds[q] < kRows) return std::nullopt;
    int64_t blocks = (c.bounds[r] + kRows - 1) / kRows * ((c.bounds[q] + kRows - 1) / kRows);
    for (int o = 0; o < np; ++o)
      if (o != r && o != q) blocks *= std::max<int64_t>(c.bounds[o], 0);
    return 4 * blocks <= 5 * c.chunks ? std::optional(blocks) : std::nullopt;
  };
  if (np < 2) return;
  if (!int_data)
    for (int r = np - 2; r >= 0; --r)  // the innermost pair first
      for (int q = np - 1; q >= 0; --q)
        if (q != r && blocks_of(r, q)) float_blocks_.push_back({r, q});
  const int rows = block.rows >= 0 ? block.rows : np - 2, cols = block.rows >= 0 ? block.cols : np - 1;
  const std::optional<int64_t> blocks = blocks_of(rows, cols);
  if (!blocks) return;
  c.blocked = layout == ChunkLayout::kBlocked || (layout == ChunkLayout::kAuto && int_data && reduces);
  layout_open_ = !int_data && reduces;  // the layout of a float reduction is the caller's
  if (!c.blocked) return;
  c.chunks = *blocks;
  // the block's ranges innermost (rows, then columns), the others in their nesting order outside
  std::vector<int> order;
  for (int o = 0; o < np; ++o)
    if (o != rows && o != cols) order.push_back(o);
  order.push_back(rows);
  order.push_back(cols);
  const Chunking nest = c;
  for (int i = 0; i < np; ++i) {
    c.ranges[size_t(i)] = nest.ranges[size_t(order[size_t(i)])];
    c.bounds[size_t(i)] = nest.bounds[size_t(order[size_t(i)])];
  }
}

// A prefix may be pinned when it writes no global memory and opens no IF (pin_prefix decides whether it is
// worth it).
void Tracer::find_pinnable_prefix() {
  const Kernel& k = k_;
  if (chunking_.ranges.empty() || num_chunks() < 2) return;
  int end = *std::min_element(chunking_.ranges.begin(), chunking_.ranges.end());
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
  std::array<bool, kLanes> active;
  chunking_.lanes(chunk, s.lane_range, active);
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
  ++traced_;
  return memos_.append(out, given);
}

BatchFacts Tracer::batch_compiled() {
  facts_.memo_uses = memos_.batch_compiled();
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
  auto p = std::find(chunking_.ranges.begin(), chunking_.ranges.end(), int(ip));
  if (p != chunking_.ranges.end()) {
    res.kind = Value::kConst;
    res.dtype = n.dtype;
    res.v = st_.lane_range[p - chunking_.ranges.begin()];
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
  if (std::find(chunking_.ranges.begin(), chunking_.ranges.end(), r) != chunking_.ranges.end()) return true;
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
  t.reassociable = n.reassociable;
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

size_t Tracer::begin_part(int64_t chunk, TileProgram& out) {
  out_ = &out;
  first_node_ = out.nodes.size();
  next_live_count_ = 0;
  if (st_.chunk == chunk && st_.cut >= 0) {  // the rest of a chunk cut at a loop iteration's end
    resume(out);
    st_.cut = -1;
    return st_.ip;
  }
  start_chunk(chunk);
  if (!prefix_ready_) return 0;
  for (int s : prefix_uses_) {  // later chunks: the prefix's values, pinned tiles as leaves
    Value& v = st_.val[s] = prefix_vals_[s];
    if (v.kind != Value::kTile) continue;
    TileNode leaf{Op::LOAD, v.dtype};
    leaf.pinned = prefix_vals_[s].tile;
    v.tile = new_tile(leaf);
  }
  return size_t(prefix_end_);
}

bool Tracer::trace_chunk(int64_t chunk, TileProgram& out) {
  for (size_t ip = begin_part(chunk, out); ip < k_.nodes.size(); ++ip) {
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
