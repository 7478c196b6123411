#include "compiler/lower.h"

#include <algorithm>
#include <deque>
#include <tuple>
#include <utility>

#include "base/fp32.h"
#include "compiler/cost.h"
#include "compiler/emitter.h"
#include "compiler/lane_pack.h"
#include "compiler/op_table.h"
#include "isa/instr_builders.h"

namespace tinytpu::compiler {

// Instruction selection (emitter.h): a node's instructions by its op table row (its one instruction, or one
// of the lowerings below), a store's outputs, and the integer, comparison and MXU sequences the lowerings are
// made of.

namespace {

// The VPU reduce opcode of a LANE_REDUCE (the op table's reduce columns): integer ones wrap, the float
// sum rounds per add.
VpuOpcode lane_reduce_opcode(const TileNode& n) {
  const OpInfo& o = op_info(n.reduce);
  const std::optional<ReduceOps>& ops = is_float(n.dtype) ? o.f32_reduce : o.int_reduce;
  if (!ops)
    throw Unsupported("internal: LANE_REDUCE of " + std::string(o.name) + " on " + dtype_name(n.dtype));
  switch (n.axis) {
    case LaneAxis::kTile:
      return ops->tile;
    case LaneAxis::kRow:
      return ops->row;
    case LaneAxis::kCol:
      return ops->col;
    case LaneAxis::kPair:  // a rotate, then the op itself
      return is_float(n.dtype) ? *o.f32_op : *o.int_op;
  }
  throw Unsupported("internal: LANE_REDUCE axis");
}

bool narrow(DType d) { return d == DType::kI8 || d == DType::kU8 || d == DType::kI16 || d == DType::kU16; }

}  // namespace

// Narrow integer results wrap at their width; lanes hold them sign- or zero-extended. `from`: the value to
// wrap, when not r's.
void Emitter::wrap(DType d, int r, int from) {
  if (!narrow(d)) return;
  int bits = d == DType::kI8 || d == DType::kU8 ? 8 : 16;
  int m = constant((1 << bits) - 1);
  vpu(VpuOpcode::kAnd, r, from >= 0 ? from : r, m);
  release(m);
  if (d == DType::kI8 || d == DType::kI16) {  // (x ^ sign) - sign
    int s = constant(1 << (bits - 1));
    vpu(VpuOpcode::kXor, r, r, s);
    vpu(VpuOpcode::kSub, r, r, s);
    release(s);
  }
}
// isnan(x) as 0/1 into d.
void Emitter::isnan(int d, int x) {
  int m = constant(0x7FFFFFFF), inf = constant(0x7F800000);
  vpu(VpuOpcode::kAnd, d, x, m);
  vpu(VpuOpcode::kCmplt, d, inf, d);
  release(m);
  release(inf);
}
// a != b on float32 lanes: ordered less either way, or a NaN operand. x != x is isnan(x); an operand
// known not to be a NaN (a constant) needs no NaN test. Against a constant c that is neither a NaN nor a
// zero, x != c is the bits' inequality (c has no other encoding, and a NaN x differs from it); against
// +-0, the bits but the sign's (tinygrad's exp2 tests x against +-inf this way, say).
void Emitter::float_ne(int d, const TileNode& n, int a, int b) {
  if (n.a == n.b) {
    isnan(d, a);
    return;
  }
  for (auto [node, x] : {std::pair{n.b, a}, {n.a, b}}) {
    const auto c = facts_.uniform[node];
    if (!c || fp32::is_nan(*c)) continue;
    if ((*c & 0x7FFFFFFFu) != 0) {
      vpu(VpuOpcode::kCmpne, d, a, b);
      return;
    }
    int m = constant(0x7FFFFFFF), zero = constant(0);
    vpu(VpuOpcode::kAnd, d, x, m);
    vpu(VpuOpcode::kCmpne, d, d, zero);
    release(m);
    release(zero);
    return;
  }
  int t = alloc_vreg();
  vpu(VpuOpcode::kFcmplt, d, a, b);
  vpu(VpuOpcode::kFcmplt, t, b, a);
  vpu(VpuOpcode::kOr, d, d, t);
  for (auto [node, r] : {std::pair{n.a, a}, {n.b, b}}) {
    auto bits = facts_.uniform[node];
    if (bits && !fp32::is_nan(*bits)) continue;
    isnan(t, r);
    vpu(VpuOpcode::kOr, d, d, t);
  }
  release(t);
}
// Arithmetic shift right of 32-bit lanes: the VPU's SHR is logical, so shift a with its sign bits
// flipped (s = a < 0 ? ~0 : 0) and flip them back: ((a ^ s) >> n) ^ s.
void Emitter::sar(int d, int a, int n) {
  int zero = constant(0), s = alloc_vreg();
  vpu(VpuOpcode::kCmplt, s, a, zero);
  emit(instr::vneg(s, s));  // 0 or all ones
  vpu(VpuOpcode::kXor, d, a, s);
  vpu(VpuOpcode::kShr, d, d, n);
  vpu(VpuOpcode::kXor, d, d, s);
  release(zero);
  release(s);
}
// An int32 node that is F2I of a float32 one: a value with at most 24 significant bits (F2I
// truncates, and its overflow keeps at most 24 of the mantissa's bits), which I2F converts exactly.
bool Emitter::from_float_to_i32(int node) const {
  const TileNode& t = p_.nodes[node];
  return t.op == Op::CAST && t.dtype == DType::kI32 && is_float(t.from);
}

// The operands in WMEM and AMEM, then mxu_dot.h's instructions. `out_slot` >= 0 (a single dispatch with no
// epilogue op): written to that VMEM slot, not to d. An OS block was dispatched by its own event
// (mxu_dispatch): here it is read back.
void Emitter::mxu_dot(int d, const MxuDot& m, int epilogue_src, int out_slot) {
  if (m.os) return os_read_back(schedule_.events[pos_].id, d);
  MxuDotPlaces at{{}, {}, d, epilogue_src, out_slot};
  for (const auto& t : m.weights) at.weights.push_back(weight_fill(t, m));
  std::vector<int> rows;  // the AMEM row of each activation row
  for (const auto& t : m.acts) rows.push_back(act_fill(t, 1, m));
  for (const auto& ds : m.dispatches) at.acts.push_back(rows[ds.act]);
  for (const Instr& in : mxu_dot_dispatches(m, at)) emit(in);
  for (const Instr& in : mxu_dot_readback(m, at)) emit(in);
}

// The places of a block dispatched in the launch, or null.
const MxuDotPlaces* Emitter::places_of(int mxu_index) const {
  for (const auto& [dot, places] : dispatched_)
    if (dot == mxu_index) return &places;
  return nullptr;
}
bool Emitter::in_launch(int mxu_index) const { return places_of(mxu_index) != nullptr; }

// Whether event `e` dispatches a block not yet in the launch whose seed, if it has one, is computed (one a
// read-back may dispatch ahead of it).
bool Emitter::dispatches_new_block(size_t e) const {
  if (e >= schedule_.events.size() || schedule_.events[e].part != Schedule::Part::kDispatch) return false;
  const TileNode& n = p_.nodes[schedule_.events[e].id];
  return !in_launch(n.mxu) && (!p_.mxu[n.mxu].seeded || at_hand(n.a));
}
// Whether a node's value can be read now: a leaf the loader fills (not gathered by data), or a value in a
// vreg or in scratch (spilled by this launch or an earlier one).
bool Emitter::at_hand(int node) const {
  return (is_leaf(node) && !p_.nodes[node].dynamic) || regs_.of(node) >= 0 ||
         slots_.holding(Content(node)) >= 0 || cutter_.spilled(node);
}

// An OS block's operands in WMEM and AMEM, and its first pass's dispatches issued (Emitter::issue), after a
// seeded block's MXU_SEED. On a pipelined MXU its first dispatch (or seed) moves the accumulators, the block
// dispatched before, into the output bank.
const MxuDotPlaces& Emitter::mxu_dispatch(int node) {
  const int index = p_.nodes[node].mxu;
  const MxuDot& m = p_.mxu[index];
  MxuDotPlaces at;
  for (const auto& t : m.weights) at.weights.push_back(weight_fill(t, m));
  for (const auto& ds : m.dispatches) at.acts.push_back(act_fill(m.acts[ds.act], ds.k, m));
  const OsPass first = os_passes(m)[0];
  room_for_instrs(int(first.end - first.first) + m.seeded);
  std::vector<Instr> dispatches;
  if (m.seeded) {
    at.seed = operand(p_.nodes[node].a);
    dispatches.push_back(instr::mxu_seed(at.seed));
  }
  for (size_t i = first.first; i < first.end; ++i) dispatches.push_back(dispatch(m, at, i));
  issue(std::move(dispatches));
  dispatched_.push_back({index, std::move(at)});
  mxu_.dispatched = dispatched_.size();
  return dispatched_.back().second;
}

// An OS block's live matrix rows in the groups its read-back holds in vregs at once: all of them while they
// take at most half the vregs (four rows of the reference core's 16), else groups of that many (a 16x16 array
// with 16 vregs), each stacked before the next group is read.
std::vector<std::vector<int>> Emitter::os_row_groups(const MxuDot& m) const {
  const size_t most = size_t(std::max(1, cfg_.vregs / 2));
  std::vector<std::vector<int>> out;
  for (int r = 0; r < kRows; ++r) {
    if (!m.live_rows[r]) continue;
    if (out.empty() || out.back().size() == most) out.emplace_back();
    out.back().push_back(r);
  }
  return out;
}

// An OS block read back, pass by pass: its rows into vregs once the MXU is done with the pass, the next pass
// issued, and the rows' stacking deferred into that pass's shadow; at the end each output's bucket read into
// its vreg (d, and for a block across chains the vregs of its other outputs: NodeFacts::made_by), deferred
// too, into the shadow of the next block's dispatches. A block whose dispatches were cut off into an earlier
// launch is dispatched again.
void Emitter::os_read_back(int node, int d) {
  if (bank_read_back(node, d)) return;
  const int index = p_.nodes[node].mxu;
  const MxuDot& m = p_.mxu[index];
  const MxuDotPlaces* at = places_of(index);
  if (!at && skipped_.first == index) {  // they do not fit this launch: the read-back cuts it
    no_room(skipped_.second);
    return;
  }
  if (!at) at = &mxu_dispatch(node);
  const std::vector<OsPass> passes = os_passes(m);
  const std::vector<std::vector<int>> groups = os_row_groups(m);
  for (size_t p = 0; p < passes.size(); ++p) {
    flush_deferred();  // the pass before's stacking, under this pass's dispatches
    std::vector<int> rows(kRows, -1);
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g > 0) {  // the group before stacked now, its vregs free for this one
        for (const Instr& in : os_stack(m, passes[p], p == 0, rows)) emit(in);
        for (int& r : rows)
          if (r >= 0) release(std::exchange(r, -1));
      }
      for (int r : groups[g]) rows[r] = alloc_vreg();
      for (const Instr& in : os_rows(rows)) emit(in);
    }
    if (p + 1 < passes.size()) {
      std::vector<Instr> next;
      for (size_t i = passes[p + 1].first; i < passes[p + 1].end; ++i) next.push_back(dispatch(m, *at, i));
      room_for_instrs(int(next.size()));
      issue(std::move(next));
    }
    for (const Instr& in : os_stack(m, passes[p], p == 0, rows)) mxu_.deferred.push_back(in);
    for (int r : rows)
      if (r >= 0) mxu_.deferred_rows.push_back(r);
  }
  std::vector<int> dst(size_t(os_outputs(m)), -1);
  for (int o = 0; o < os_outputs(m); ++o) {
    const int out = m.across ? facts_.outputs[index][o] : node;
    if (out == node) {
      dst[o] = d;
    } else if (out >= 0 && last_use(out) >= 0) {
      dst[o] = alloc_vreg();
      set_vreg(out, dst[o]);
    }
  }
  for (const Instr& in : os_read(m, dst)) mxu_.deferred.push_back(in);
  // the deferred instructions are placed whatever comes next, at the latest when the launch ends: room for
  // them now, or the read-back goes to the next launch
  room_for_instrs(0);
}

// A block the output bank can read back: on a pipelined MXU, one pass with every row live.
bool Emitter::bank_readable(const MxuDot& m) const {
  return cfg_.mxu_pipelined && !m.across && os_passes(m).size() == 1 &&
         std::find(m.live_rows.begin(), m.live_rows.end(), false) == m.live_rows.end();
}

// The event dispatching the block after `block` when it comes right after that block's read-back and no other
// MXU work comes between the current event and it; -1 without. (The schedule places a block's dispatch event
// right after the read-back of the block before: Pipeline.)
int Emitter::dispatch_after(int block) const {
  constexpr size_t kLookAhead = 32;  // events: a read-back further on is not worth the scan
  const size_t end = std::min(schedule_.events.size(), size_t(pos_) + kLookAhead);
  for (size_t e = size_t(pos_) + 1; e + 1 < end; ++e) {
    const Schedule::Event& ev = schedule_.events[e];
    const bool of_block = ev.is_node && p_.nodes[ev.id].op == Op::MXU_DOT && p_.nodes[ev.id].mxu == block;
    if (of_block && ev.part == Schedule::Part::kReadBack)
      return dispatches_new_block(e + 1) ? int(e + 1) : -1;
    if (!of_block && ev.is_node && p_.nodes[ev.id].op == Op::MXU_DOT) return -1;
    if (!ev.is_node)
      for (int n : store_reads(p_.stores[size_t(ev.id)]))
        if (facts_.to_vmem[n]) return -1;
  }
  return -1;
}

// On a pipelined MXU a plain block of one pass (every row live) is read whole from the output bank. A start
// that replaces the accumulators moves them into the bank:
// - when the block is the last dispatched in the launch (or, cut off from the launch before, dispatched again
//   here), the next block's first dispatch, issued here ahead of its event when that event comes next; else a
//   dispatch of one term of the block's own operands, whose products nothing reads (an array cycle, against
//   the R matrix reads and their stacking in PSUM after the drain);
// - when a plain block dispatched after it is the last, that one's first dispatch already did.
// After the read the block after that one is dispatched too, ahead of its event, so that it starts as soon as
// the read lets it (it moves the next block into the bank) rather than after this block's consumers.
bool Emitter::bank_read_back(int node, int d) {
  const int index = p_.nodes[node].mxu;
  const MxuDot& m = p_.mxu[index];
  if (!bank_readable(m) || skipped_.first == index) return false;
  const size_t next = size_t(pos_) + 1;
  const bool next_block = !not_early_ && dispatches_new_block(next);
  if (!in_launch(index)) mxu_dispatch(node);
  const size_t n = dispatched_.size();
  const bool last = dispatched_.back().first == index;
  if (!last &&
      !(n >= 2 && dispatched_[n - 2].first == index && bank_readable(p_.mxu[dispatched_.back().first])))
    return false;
  const MxuDotPlaces& at = dispatched_[last ? n - 1 : n - 2].second;
  const int drain = os_drain(dispatch(m, at, m.dispatches.size() - 1));
  if (last && next_block) {
    mxu_dispatch(schedule_.events[next].id);  // (`at` is no longer valid)
    dispatched_early_ = true;
  } else if (last) {
    issue({instr::mxu_os(at.weights[0], at.acts[0], /*k*/ 1)});
  }
  interleave_waiting(instr::load_mxu_bank(d), drain);
  const int after = dispatched_.back().first;
  // only when the next block streams no longer than this one drains: else the read is done before it ends
  const bool read_late = after != index && os_stream_cycles(p_.mxu[after]) <= drain;
  if (const int e = not_early_ || !read_late ? -1 : dispatch_after(after); e >= 0) {
    mxu_dispatch(schedule_.events[size_t(e)].id);
    dispatched_early_ = true;
  }
  return true;
}

// out = x < y as uint32: flip the sign bits (`sign` holds 0x80000000) into tx, ty, compare signed.
void Emitter::less_unsigned(int out, int x, int y, int sign, int tx, int ty) {
  vpu(VpuOpcode::kXor, tx, x, sign);
  vpu(VpuOpcode::kXor, ty, y, sign);
  vpu(VpuOpcode::kCmplt, out, tx, ty);
}

// Unsigned 32-bit quotient from the signed divider: a divisor >= 2^31 gives (a >= b); otherwise
// q = ((a >> 1) / b) << 1 is the true quotient or one less, and the remainder decides which.
void Emitter::udiv(int d, int a, int b) {
  int sign = constant(int32_t(0x80000000u)), one = constant(1);
  int t = alloc_vreg(), ax = alloc_vreg(), bx = alloc_vreg(), big = alloc_vreg();
  vpu(VpuOpcode::kShr, t, a, one);
  vpu(VpuOpcode::kDiv, d, t, b);
  vpu(VpuOpcode::kShl, d, d, one);
  vpu(VpuOpcode::kMul, t, d, b);
  vpu(VpuOpcode::kSub, t, a, t);         // remainder, in [0, 2b)
  less_unsigned(t, t, b, sign, ax, bx);  // 1 when the remainder is already below b
  vpu(VpuOpcode::kXor, t, t, one);
  vpu(VpuOpcode::kAdd, d, d, t);
  less_unsigned(t, a, b, sign, ax, bx);  // big divisor: quotient is a >= b
  vpu(VpuOpcode::kXor, t, t, one);
  int zero = constant(0);
  vpu(VpuOpcode::kCmplt, big, b, zero);  // b >= 2^31
  emit(instr::select(d, big, t, d));
  for (int r : {sign, one, t, ax, bx, big, zero}) release(r);
}

// A LANE_BROADCAST's XLU instruction: lane `lane` to every lane, each row its column `lane`, or each column
// its row `lane`.
void Emitter::broadcast(const TileNode& n, int d, int a) {
  emit(n.axis == LaneAxis::kTile  ? instr::broadcast_scalar(d, a, n.lane / kRows, n.lane % kRows)
       : n.axis == LaneAxis::kRow ? instr::broadcast_col(d, a, n.lane)
                                  : instr::broadcast_row(d, a, n.lane));
}

// MAX(x, 0) on signed lanes (narrow unsigned lanes are never negative) is one RELU: no zero tile.
int Emitter::relu_input(const TileNode& n) const {
  if (n.op != Op::MAX || is_float(n.dtype) || n.dtype == DType::kU32) return -1;
  return zero_leaf(n.b) ? n.a : zero_leaf(n.a) ? n.b : -1;
}

// An op whose lowering is the op table's one instruction for its lanes.
void Emitter::one_instruction(const OpInfo& info, bool f, int d, int a, int b) {
  const std::optional<VpuOpcode>& op = f ? info.f32_op : info.int_op;
  if (!op)
    throw Unsupported(std::string("internal: no one-instruction lowering of ") + info.name +
                      (f ? " on float32" : " on integers"));
  vpu(*op, d, a, kVpuOps[int(*op)].arity == 2 ? b : 0);  // a unary op's second operand field stays 0
}

// The op table's lowering of the node: a function of its row (lowerings.h), else the row's one instruction;
// then the result wrapped to a narrow integer dtype when the row says so.
void Emitter::emit_node(int i) {
  const TileNode& n = p_.nodes[i];
  int relu = relu_input(n);
  int a = relu >= 0 ? operand(relu) : n.a >= 0 ? operand(n.a) : -1;
  int b = relu < 0 && n.b >= 0 ? operand(n.b) : -1;
  int c = n.c >= 0 ? operand(n.c) : -1;
  int d = alloc_vreg();
  bool f = is_float(n.dtype) || (n.op != Op::CAST && is_float(n.from));
  const OpInfo& info = op_info(n.op);
  if (info.lower)
    info.lower(*this, {n, f, relu >= 0, d, a, b, c});
  else
    one_instruction(info, f, d, a, b);
  if (info.wraps && !facts_.in_range[i]) wrap(n.dtype, d);
  set_vreg(i, d);
  if (last_use(i) < 0) {  // computed only for a store that a later store overwrote
    release(d);
    set_vreg(i, -1);
  }
  drop_dead(i);
}

// The value's tile, then the gate's and the indices' for a data-dependent store, in one launch.
void Emitter::emit_store(int s) {
  const TileStore& st = p_.stores[s];
  std::pair<int, SlotDrain::Role> parts[] = {
      {st.value, SlotDrain::kValue}, {st.gate, SlotDrain::kGate}, {st.index_node, SlotDrain::kIndex}};
  for (int i = 0; i < 3; ++i) {
    auto [node, role] = parts[i];
    if (node < 0) continue;
    if (facts_.to_vmem[node]) {
      int slot = take_out_slot();
      mxu_dot(-1, p_.mxu[p_.nodes[node].mxu], -1, slot);
      cutter_.launch().drains.push_back({slot, s, -1, role});
      continue;
    }
    if (is_gather(p_, node) && regs_.of(node) < 0 && !p_.nodes[node].dynamic) {
      // a gathered tile stored as it is: the loader fills an output slot, no LOAD and STORE
      int slot = take_out_slot(true);
      cutter_.launch().fills.push_back({slot, node, p_.nodes[node].dtype});
      cutter_.launch().drains.push_back({slot, s, -1, role});
      continue;
    }
    int r = operand(node);
    // A value this STORE reads last needs no room for a spill: free its vreg before the room checks
    // (a launch would otherwise be cut here, its last value spilled and stored by the next one).
    bool read_again = false;
    for (int j = i + 1; j < 3; ++j) read_again |= parts[j].first == node;
    if (last_use(node) <= pos_ && !read_again) {
      release(r);
      set_vreg(node, -1);
    }
    int slot = take_out_slot();
    emit(instr::store(slot, r));
    cutter_.launch().drains.push_back({slot, s, -1, role});
  }
  for (auto [node, role] : parts)
    if (node >= 0 && regs_.of(node) >= 0 && last_use(node) <= pos_) {
      release(regs_.of(node));
      set_vreg(node, -1);
    }
}

// The multi-instruction lowerings, one per op table row that names one (op_table.cc, lowerings.h). Each
// writes the node's value into o.d from its operands' vregs; the op table's `wraps` column says whether the
// lowering then wraps a narrow integer result to its dtype (emit_node).
namespace lowering {

void neg(Emitter& e, const Lowered& o) {
  if (!o.f) return e.emit(instr::vneg(o.d, o.a));
  int s = e.constant(int32_t(0x80000000u));  // flip the sign bit
  e.vpu(VpuOpcode::kXor, o.d, o.a, s);
  e.release(s);
}

void max(Emitter& e, const Lowered& o) {
  if (o.relu) return e.vpu(VpuOpcode::kRelu, o.d, o.a);
  if (o.f) {  // a < b ? b : a, tinygrad's definition: a NaN in b keeps a (FMAX would pick b)
    int c = e.alloc_vreg();
    e.vpu(VpuOpcode::kFcmplt, c, o.a, o.b);
    e.emit(instr::select(o.d, c, o.b, o.a));
    return e.release(c);
  }
  e.vpu(o.n.dtype == DType::kU32 ? VpuOpcode::kMaxU32 : *op_info(Op::MAX).int_op, o.d, o.a, o.b);
}

void cmplt(Emitter& e, const Lowered& o) {
  if (o.f || o.n.from != DType::kU32) return e.one_instruction(op_info(Op::CMPLT), o.f, o.d, o.a, o.b);
  int s = e.constant(int32_t(0x80000000u)), t = e.alloc_vreg();
  e.less_unsigned(o.d, o.a, o.b, s, o.d, t);
  e.release(s);
  e.release(t);
}

void equality(Emitter& e, const Lowered& o) {  // CMPNE, CMPEQ
  if (!o.f) return e.one_instruction(op_info(o.n.op), o.f, o.d, o.a, o.b);
  e.float_ne(o.d, o.n, o.a, o.b);
  if (o.n.op == Op::CMPNE) return;
  int one = e.constant(1);
  e.vpu(VpuOpcode::kXor, o.d, o.d, one);
  e.release(one);
}

void where(Emitter& e, const Lowered& o) { e.emit(instr::select(o.d, o.a, o.b, o.c)); }

void shr(Emitter& e, const Lowered& o) {
  if (is_signed(o.n.dtype)) return e.sar(o.d, o.a, o.b);
  e.one_instruction(op_info(Op::SHR), o.f, o.d, o.a, o.b);
}

void cdiv(Emitter& e, const Lowered& o) {
  if (o.n.dtype == DType::kU32) return e.udiv(o.d, o.a, o.b);
  e.one_instruction(op_info(Op::CDIV), o.f, o.d, o.a, o.b);
}

void cmod(Emitter& e, const Lowered& o) {  // a - (a / b) * b, sign of the dividend
  cdiv(e, o);
  e.vpu(VpuOpcode::kMul, o.d, o.d, o.b);
  e.vpu(VpuOpcode::kSub, o.d, o.a, o.d);
}

// The bits; a narrow integer's re-extended as its dtype is (int8 <-> uint8) by the wrap that follows.
void bitcast(Emitter& e, const Lowered& o) { e.vpu(VpuOpcode::kAnd, o.d, o.a, o.a); }

void mxu_dot(Emitter& e, const Lowered& o) { e.mxu_dot(o.d, e.p_.mxu[o.n.mxu], o.a); }

void lane_reduce(Emitter& e, const Lowered& o) {
  if (o.n.axis != LaneAxis::kPair) return e.vpu(lane_reduce_opcode(o.n), o.d, o.a);
  int t = e.alloc_vreg();  // lane 2j combines with lane 2j+1 of its row
  e.emit(instr::rotate(t, o.a, 1));
  e.vpu(lane_reduce_opcode(o.n), o.d, o.a, t);
  e.release(t);
}

void lane_broadcast(Emitter& e, const Lowered& o) { e.broadcast(o.n, o.d, o.a); }

void fdiv(Emitter& e, const Lowered& o) {
  if (!e.fast_math_) return e.divide(o.d, o.a, o.b);
  e.vpu(VpuOpcode::kFrecip, o.d, o.b);
  e.vpu(VpuOpcode::kFmul, o.d, o.a, o.d);
}

void div_scale(Emitter& e, const Lowered& o) {
  int t = e.alloc_vreg();
  e.div_scale(o.d, o.a, t);
  e.release(t);
}

void div_exact(Emitter& e, const Lowered& o) {
  int q = e.alloc_vreg();
  e.div_exact(o.d, o.a, o.b, o.c, q);
  e.release(q);
}

void reciprocal(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.vpu(VpuOpcode::kFrecip, o.d, o.a);
  e.reciprocal(o.d, o.a);
}

void sqrt(Emitter& e, const Lowered& o) { e.square_root(o.d, o.a); }

// Fast math: the TranscUnit's instruction; else tinygrad's decomposition, in fewer instructions.
void exp2(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.one_instruction(op_info(Op::EXP2), true, o.d, o.a, o.b);
  e.exp2_decomposed(o.d, o.a);
}
void log2(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.one_instruction(op_info(Op::LOG2), true, o.d, o.a, o.b);
  e.log2_decomposed(o.d, o.a);
}

void trunc(Emitter& e, const Lowered& o) { e.trunc(o.d, o.a); }

void cast(Emitter& e, const Lowered& o) {
  const DType to = o.n.dtype, from = o.n.from;
  int a = o.a;
  if (to == DType::kBool) {
    if (is_float(from)) {  // x != 0.0: any bit but the sign set
      int m = e.constant(0x7FFFFFFF);
      e.vpu(VpuOpcode::kAnd, o.d, a, m);
      e.release(m);
      a = o.d;
    }
    int zero = e.constant(0);
    e.vpu(VpuOpcode::kCmpne, o.d, a, zero);
    return e.release(zero);
  }
  if (is_float(to) && !is_float(from)) {
    if ((from == DType::kI32 || from == DType::kU32) && !e.from_float_to_i32(o.n.a))
      return e.int_to_float(o.d, a, from == DType::kI32);
    return e.vpu(VpuOpcode::kI2f, o.d, a);  // exact below 2^24, and on F2I's results
  }
  // a narrow result out of its range wraps (its row does not: the wrap reads the source, no copy first)
  const bool wraps = narrow(to) && !e.facts_.in_range[e.schedule_.events[e.pos_].id];
  if (!is_float(to) && is_float(from)) {
    e.vpu(VpuOpcode::kF2i, o.d, a);
    if (wraps) e.wrap(to, o.d);
    return;
  }
  if (wraps) return e.wrap(to, o.d, a);
  e.vpu(VpuOpcode::kAnd, o.d, a, a);
}

}  // namespace lowering

std::string describe(const Emissions::Way& way) {
  const char* orders[] = {"store by store", "in program order", "interleaved"};
  return std::string(orders[int(way.order)]) +
         (way.order == EmitOrder::kInterleaved
              ? " in groups of up to " + std::to_string(way.group) + " stores"
              : "") +
         (way.broadcast ? ", operands broadcast" : "") +
         (way.slots ? ", launches of up to " + std::to_string(way.slots) + " VMEM tiles" : "");
}

namespace {

// Whether `l` reads a value the launch before it spilled: its loading waits for that launch's outputs.
bool reads_spill(const Launch& before, const Launch& l) {
  for (const SlotDrain& d : before.drains)
    if (d.spill >= 0 &&
        std::any_of(l.fills.begin(), l.fills.end(), [&](const SlotFill& f) { return f.node == d.spill; }))
      return true;
  return false;
}

// Which launches send their program and output list. Launches of a kernel repeat programs (its batches are
// mostly alike): resident, each distinct one is sent once, and then never again while together they fit the
// ring, so none is counted. When they do not fit, kAllOrNone sends every one; kRing those the ring does not
// hold when they start, the ring kept as the runtime keeps it (CoreState::load: a new program evicts the
// oldest).
std::vector<bool> programs_sent(const std::vector<Launch>& launches, const TensorCoreConfig& cfg,
                                Residency residency) {
  if (!cfg.resident_program) return std::vector<bool>(launches.size(), true);
  const int64_t capacity = cfg.prog_depth * (cfg.prefetch_launches ? 2 : 1);
  auto held = [](const std::deque<const std::vector<Instr>*>& ring, const Launch& l) {
    return std::any_of(ring.begin(), ring.end(),
                       [&](const std::vector<Instr>* p) { return *p == l.program; });
  };
  std::deque<const std::vector<Instr>*> distinct;
  int64_t program_entries = 0;
  for (const Launch& l : launches) {
    if (held(distinct, l)) continue;
    distinct.push_back(&l.program);
    program_entries += int64_t(l.program.size());
  }
  if (program_entries <= capacity || residency == Residency::kAllOrNone)
    return std::vector<bool>(launches.size(), program_entries > capacity);
  std::vector<bool> sent(launches.size(), false);
  std::deque<const std::vector<Instr>*> ring;
  int64_t entries = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (held(ring, launches[i])) continue;
    sent[i] = true;
    const int64_t need = int64_t(launches[i].program.size());
    for (; !ring.empty() && entries + need > capacity; ring.pop_front())
      entries -= int64_t(ring.front()->size());
    ring.push_back(&launches[i].program);
    entries += need;
  }
  return sent;
}

}  // namespace

int64_t estimated_cycles(const std::vector<Launch>& launches, const TensorCoreConfig& cfg,
                         Residency residency) {
  const std::vector<bool> sent = programs_sent(launches, cfg, residency);
  int64_t cycles = 0, run_before = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    const int64_t data = cfg.record_cycles * int64_t(l.fills.size() + l.mxu_fills.size());
    const int64_t others = !sent[i] ? 0 : cfg.record_cycles * int64_t(l.program.size() + l.drains.size());
    const int64_t sxu = estimated_sxu_cycles(l.program, cfg);
    // (an MXU dispatch waits for every WeightSRAM and ActivationSRAM record: a launch with them runs after
    // its data, as without the DMA overlap)
    const bool overlap = cfg.dma_overlap && l.mxu_fills.empty();
    const int64_t load = overlap ? others : others + data;
    const int64_t run = overlap ? std::max(data, sxu) : sxu;
    const bool hidden = cfg.prefetch_launches && i > 0 && !reads_spill(launches[i - 1], l);
    cycles += run + (hidden ? std::max<int64_t>(0, load - run_before) : load);
    run_before = run;
  }
  return cycles;
}

namespace {

// The fewest VMEM tiles lower() gives launches for their programs to stay in program memory (halving from
// half the core's depth): the reference's depth, whose launches' programs do.
constexpr int kFewestSlots = 32;

// One emission of a batch: its launches and constants, and their estimated cycles.
struct Emission {
  std::vector<Launch> launches;
  std::vector<Tile> constants;
  int64_t cycles = INT64_MAX;
};

}  // namespace

std::vector<Launch> lower(TileProgram& prog, const TensorCoreConfig& cfg, std::vector<Tile>& constants,
                          bool fast_math, const Choices& choices, Emissions* emissions) {
  // The emissions weighed (all of them, the kernel's choice, or the two orders of the program as it is), and
  // the one whose launches take the fewest cycles.
  Emission best;
  Emissions::Way won;
  std::optional<TileProgram> with_broadcasts;
  std::optional<NodeFacts> facts[2];            // of each program, found once for its emissions
  Residency residency = Residency::kAllOrNone;  // how emissions are weighed
  auto emit = [&](const Emissions::Way& way) {
    const TileProgram& p = way.broadcast ? *with_broadcasts : prog;
    if (p.stores.size() < 2 && way.order != EmitOrder::kByStore) return;
    if (way.order == EmitOrder::kInterleaved && !interleavable(p)) return;
    if (!facts[way.broadcast]) facts[way.broadcast].emplace(p);
    const bool blocking = way.broadcast || way.order == EmitOrder::kInterleaved;
    Emitter e(p, *facts[way.broadcast], cfg, fast_math, choices, way.order, way.group, blocking, way.slots);
    Emission l;
    try {
      l.launches = e.run();
    } catch (const Unsupported&) {
      // An event that needs more than an empty launch has (an op's temporaries beside broadcast leaves and
      // their sources, say) makes the way no candidate; the two orders of the program as it is are the
      // lowering's own, and throw on. So is a way whose launches, with fewer VMEM tiles than the core's, are
      // too small for an event.
      if (blocking || way.slots) return;
      throw;
    }
    l.constants = e.constants();
    l.cycles = estimated_cycles(l.launches, cfg, residency);
    if (l.cycles < best.cycles) std::tie(best, won) = std::pair{std::move(l), way};
  };
  const bool choosing = !emissions || !emissions->decided;
  const std::optional<Emissions::Way> taken = choosing ? std::nullopt : emissions->other;
  // (register blocking is for the VPU's dot products: a batch with MXU blocks pipelines those instead)
  if ((choosing || taken) && prog.mxu.empty()) with_broadcasts = broadcast_operands(prog);
  // A later batch of a kernel whose first took another way takes that way alone; the two orders of the
  // program as it is are emitted otherwise, and where that way does not fit this batch.
  if (taken && (!taken->broadcast || with_broadcasts)) emit(*taken);
  if (best.cycles == INT64_MAX) {
    emit({EmitOrder::kByStore});
    emit({EmitOrder::kProgram});
  }
  const int64_t as_it_was = best.cycles;
  if (choosing) {
    for (bool broadcast : {false, true}) {
      if (broadcast && !with_broadcasts) continue;
      if (broadcast) emit({EmitOrder::kByStore, 0, true});
      if (broadcast) emit({EmitOrder::kProgram, 0, true});
      for (int group : Emissions::kGroups) emit({EmitOrder::kInterleaved, group, broadcast});
    }
  }
  // Programs that overflow program memory's ring are sent again and again. On a deep core the launches fill
  // program memory before VMEM, and a batch that cycles through several such programs sends each every time:
  // launches with fewer VMEM tiles, as a shallower core's, have shorter programs that may stay (the estimate
  // decides).
  auto sends_programs = [&] {
    const std::vector<bool> sent = programs_sent(best.launches, cfg, residency);
    return std::find(sent.begin(), sent.end(), true) != sent.end();
  };
  if (cfg.depth / 2 >= kFewestSlots && cfg.resident_program && best.cycles != INT64_MAX && sends_programs()) {
    residency = Residency::kRing;
    best.cycles = estimated_cycles(best.launches, cfg, residency);
    for (int slots = cfg.depth / 2; slots >= kFewestSlots && sends_programs(); slots /= 2) {
      Emissions::Way fewer = won;
      fewer.slots = slots;
      emit(fewer);
    }
  }
  if (choosing && emissions) {
    emissions->estimates = {as_it_was, best.cycles};
    emissions->decided = (with_broadcasts || interleavable(prog)) && prog.stores.size() >= 2;
    if (won.broadcast || won.order == EmitOrder::kInterleaved || won.slots) emissions->other = won;
  }
  if (won.broadcast) prog = std::move(*with_broadcasts);
  constants = std::move(best.constants);
  return std::move(best.launches);
}

}  // namespace tinytpu::compiler
