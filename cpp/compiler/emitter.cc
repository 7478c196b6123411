#include "compiler/emitter.h"

#include <stdexcept>

#include "compiler/mxu_fills.h"
#include "isa/instr_builders.h"
#include "sim/controller.h"
#include "sim/timing.h"

namespace tinytpu::compiler {

Emitter::Emitter(const TileProgram& p, const NodeFacts& facts, const TensorCoreConfig& cfg, bool fast_math,
                 const Choices& choices, EmitOrder order, int group, bool blocking, int slots)
    : p_(p),
      cfg_(cfg),
      fast_math_(fast_math),
      choices_(choices),
      facts_(facts),
      schedule_(schedule(p, facts, order, group)),
      cutter_(cfg, int(p.nodes.size()), slots),
      regs_(p, cutter_.lim.vregs),
      forecast_(p, schedule_, facts.uniform),
      blocking_(blocking) {
  begin_launch();
}

std::vector<Launch> Emitter::run() {
  for (pos_ = 0; pos_ < int(schedule_.events.size()); ++pos_) {
    Boundary here = boundary();
    if (!emit_event(here)) {
      // the event does not fit: the launch ends here, or at an earlier boundary where fewer values are live
      const Boundary& at = cut_point(here);
      if (&at != &here) forecast_.for_leaf = false;  // (as between any two events)
      return_to(at);
      cut();
      if (!emit_event(boundary())) {
        const Schedule::Event& e = schedule_.events[pos_];
        throw Unsupported(std::string(e.is_node ? op_name(p_.nodes[e.id].op) : "a store") + " needs more " +
                          cutter_.full() + " than an empty launch of a TensorCore with " + cfg_.describe() +
                          " has");
      }
    } else if (blocking_) {
      boundaries_.push_back(std::move(here));
    }
    const Schedule::Event& e = schedule_.events[pos_];
    if (e.is_node && e.part != Schedule::Part::kDispatch) forecast_.learn(p_.nodes[e.id]);
  }
  finish_launch();
  return cutter_.take();
}

void Emitter::begin_launch() {
  regs_.begin_launch();
  slots_.reset(cutter_.lim.slots);
  consts_.begin_launch();
  mxu_ = Shadow{};
  dispatched_.clear();
  skipped_ = {-1, nullptr};
}

// The read-backs' deferred instructions are placed (they make values); dispatches still waiting are dropped:
// their read-back is in a later launch, which dispatches the block again.
void Emitter::finish_launch() {
  end_shadow();
  if (cutter_.finish()) begin_launch();
}

// The launch ends: the deferred instructions placed, the waiting dispatches dropped. emit() and
// os_read_back() keep room for every queued instruction, so none may be left out here: an error, never a
// missing value.
void Emitter::end_shadow() {
  mxu_.pending.clear();
  const size_t expected = cutter_.launch().program.size() + mxu_.deferred.size();
  flush_deferred();
  if (cutter_.launch().program.size() != expected)
    throw std::logic_error("the compiler left no room in a launch for an MXU read-back's instructions");
}

// Ends the launch: values still to be read (by the current event or later) move to scratch through output
// tiles. The invariants kept by emit(), take_out_slot() and alloc_vreg() (room for one STORE and one output
// per busy vreg, and for the instructions waiting in the MXU's shadow) guarantee this fits.
void Emitter::cut() {
  end_shadow();
  regs_.live(pos_, schedule_.last_use, held_);
  for (int n : held_) {
    if (slots_.holding(Content(n)) >= 0) continue;  // spilled earlier in the launch (evict_value)
    const int s = slots_.first_not_out();
    slots_.set(s, VmemSlots::kOut);
    cutter_.spill(n, regs_.of(n), s);
  }
  finish_launch();
  boundaries_.clear();
}

// The launch as it is before the current event.
Emitter::Boundary Emitter::boundary() {
  Boundary b{pos_, cutter_.begin_event(), consts_.mark(), regs_.mark(), slots_, mxu_, 0};
  if (blocking_) {
    regs_.live(pos_, schedule_.last_use, held_);
    b.live = int(held_.size());
  }
  return b;
}

// Emits the current event into the launch, or, when it does not fit, returns it to `before` (the launch as
// the event found it): an event only appends to the launch, so undoing it truncates. An OS block's dispatches
// that do not fit are undone and left to its read-back (which dispatches a block not dispatched in its
// launch): the work before the read-back, under those dispatches had they fit, is emitted into the launch
// first.
bool Emitter::emit_event(const Boundary& before) {
  regs_.begin_event();
  forecast_.begin_event(pos_);
  const Schedule::Event& e = schedule_.events[pos_];
  dispatched_early_ = false;
  if (e.part == Schedule::Part::kDispatch) {
    if (!in_launch(p_.nodes[e.id].mxu)) mxu_dispatch(e.id);  // (a read-back through the bank may have)
  } else {
    e.is_node ? emit_node(e.id) : emit_store(e.id);
  }
  const char* why = cutter_.full();
  if (!why) return true;
  const char* ended = cutter_.launch().cut;  // (rollback names the event's limit)
  return_to(before);
  if (dispatched_early_) {  // again, the next block left to its own event
    not_early_ = true;
    cutter_.begin_event();  // (the limit it found is undone with it)
    const bool fits = emit_event(before);
    not_early_ = false;
    return fits;
  }
  forecast_.for_leaf = asking_when_full_;
  if (e.part != Schedule::Part::kDispatch) return false;
  skipped_ = {p_.nodes[e.id].mxu, why};
  cutter_.launch().cut = ended;
  return true;
}

// Where the launch ends when the event at `here` does not fit: there, or, cutting early, at the boundary of
// the last quarter of its events where a cut spills the fewest values (the latest of those), so that a
// launch ends between a group's dot products, or between the terms of its accumulators (interleaved
// order), rather than halfway through their partial sums.
const Emitter::Boundary& Emitter::cut_point(const Boundary& here) const {
  const Boundary* best = &here;
  for (size_t b = boundaries_.size() - boundaries_.size() / 4; b < boundaries_.size(); ++b)
    if (boundaries_[b].live < best->live ||
        (boundaries_[b].live == best->live && best != &here && boundaries_[b].pos > best->pos))
      best = &boundaries_[b];
  return *best;
}

void Emitter::return_to(const Boundary& b) {
  cutter_.rollback(b.launch);
  consts_.rollback(b.consts);
  regs_.rollback(b.regs);
  slots_ = b.slots;
  mxu_ = b.mxu;
  dispatched_.resize(mxu_.dispatched);
  pos_ = b.pos;
}

// The event being emitted does not fit the current launch: emit_event() rolls it back, run() ends the launch
// (spilling live values) and emits it again into a fresh one. The event goes on to its end with 0 as a
// stand-in for the register, slot or MXU address it did not get, and whatever it does after this is rolled
// back or, where not (the forecast's for_leaf, MxuMemory's readers), left as at this point, as a throw would.
int Emitter::no_room(const char* why) {
  if (cutter_.no_room(why)) asking_when_full_ = forecast_.for_leaf;
  return 0;
}

// Every busy vreg but a leaf's may need a STORE and an output tile if the launch is cut: keep room.
bool Emitter::room_for_one_more_vreg() {
  const int busy = regs_.spillable() + 1;
  const char* full = !cutter_.fits_instrs(busy + queued())    ? kNoInstrs
                     : !cutter_.fits_slots(slots_.outs, busy) ? kNoSlots
                     : !cutter_.fits_drains(busy)             ? kNoOutputs
                                                              : nullptr;
  if (full) no_room(full);
  return !full;
}

// A free vreg (VregAllocator::take_free), else a leaf's.
int Emitter::alloc_vreg() {
  if (!room_for_one_more_vreg()) return 0;  // no_room's stand-in
  if (int r = regs_.take_free(forecast_, consts_); r >= 0) return r;
  if (int r = regs_.evict_leaf(slots_, schedule_, pos_, blocking_); r >= 0) return r;
  if (int r = evict_value(); r >= 0) return r;
  return no_room(kNoVregs);
}

// With no vreg free and no leaf to give up, on a pipelined MXU's core the computed value read again latest is
// spilled now as a cut would spill it (STORE into an output slot, drained to scratch), and its vreg changes
// hands: a read later in the launch LOADs it from the slot. A cut there would drain the MXU's pipeline (a
// launch of output-stationary blocks holds a value per block until the K-slice ends). Only in their batches
// with MXU blocks for now: elsewhere a full launch keeps ending at the vregs, and the figures measured so.
int Emitter::evict_value() {
  if (!cfg_.mxu_pipelined || p_.mxu.empty()) return -1;
  flush_deferred();  // (the read-backs' deferred instructions may write the value's vreg)
  const int victim = regs_.latest_read_value(schedule_, pos_);
  const int s = victim < 0 ? -1 : slots_.take_output(true);  // (a consumed slot may be a fill not yet LOADed)
  if (s < 0) return -1;
  const int r = regs_.of(victim);
  cutter_.spill(victim, r, s);  // (room_for_one_more_vreg kept room for the STORE, slot and output)
  slots_.content[s] = Content(victim);
  set_vreg(victim, -1);
  return r;
}

// A released vreg still holding `content` (a constant, or the palette), taken back busy; -1 without.
int Emitter::take_back(Content content) {
  const int r = regs_.free_holding(content);
  if (r >= 0 && room_for_one_more_vreg()) regs_.take(r);
  return r;
}

// An instruction into the program, after the read-backs' deferred instructions; an instruction that waits for
// the MXU after the dispatches waiting in its shadow too, and any other between them.
void Emitter::emit(Instr in) {
  flush_deferred();
  if (kSxuOps[in.op].waits_for_mxu) {
    flush_pending();
    place(in);
  } else {
    interleave(in);
  }
}

// Room for `n` more instructions beside a STORE for each busy vreg a cut would spill and the instructions
// waiting in the MXU's shadow; without it, the event is noted full (no_room).
bool Emitter::room_for_instrs(int n) {
  if (cutter_.fits_instrs(n + regs_.spillable() + queued())) return true;
  no_room(kNoInstrs);
  return false;
}

void Emitter::place(const Instr& in) {
  if (!room_for_instrs(1)) return;
  cutter_.launch().program.push_back(in);
  // every instruction that writes a vreg names it in vregDst
  if (may_write_vreg_dst(in.op)) regs_.written(in.vregDst);
}

// An instruction in the MXU's shadow: the next waiting dispatch first when the MXU would be done with the one
// before by then.
void Emitter::interleave(const Instr& in) {
  if (mxu_.pending.empty()) return place(in);
  const int cycles = instr_cycles(in, cfg_);
  if (mxu_.shadow < cycles) place_pending();
  place(in);
  mxu_.shadow -= cycles;
}

// An instruction that stalls until `wait` cycles from now (an output-bank read for its block to drain): the
// waiting dispatches the MXU takes before then go first, so the array does not idle behind the stall.
void Emitter::interleave_waiting(const Instr& in, int wait) {
  flush_deferred();
  while (!mxu_.pending.empty() && mxu_.shadow < wait) {
    wait -= std::max(0, mxu_.shadow) + instr_cycles(mxu_.pending.front(), cfg_);
    place_pending();
  }
  place(in);
  mxu_.shadow -= std::max(wait, instr_cycles(in, cfg_));
}

// The next dispatch waiting in the MXU's shadow, placed: the shadow is now its own.
void Emitter::place_pending() {
  const Instr next = mxu_.pending.front();
  mxu_.pending.erase(mxu_.pending.begin());
  place(next);
  mxu_.shadow = os_shadow(next);
}

// The cycles after an OS dispatch's own that other instructions may fill before the next can start: until its
// Done, on a pipelined MXU until its issue stage takes the next.
int Emitter::os_shadow(const Instr& dispatch) const {
  const bool fp = float_dispatch(*kSxuOps[dispatch.op].mxu_start);
  return os_next_dispatch_cycles(dispatch.mxuTLen, fp, cfg_) - instr_cycles(dispatch, cfg_);
}

// The cycles from the earliest EXEC of a dispatch right behind an OS dispatch to the OS dispatch's Done.
int Emitter::os_drain(const Instr& dispatch) const {
  const bool fp = float_dispatch(*kSxuOps[dispatch.op].mxu_start);
  return os_done_cycles(dispatch.mxuTLen, fp, cfg_) - os_next_dispatch_cycles(dispatch.mxuTLen, fp, cfg_);
}

// The cycles an OS block's first pass keeps the array busy on a pipelined MXU: its dispatches back to back.
int Emitter::os_stream_cycles(const MxuDot& m) const {
  const OsPass first = os_passes(m)[0];
  int cycles = 0;
  for (size_t i = first.first; i < first.end; ++i)
    cycles += os_next_dispatch_cycles(m.dispatches[i].k, false, cfg_);  // (pipelined: K', float or not)
  return cycles;
}

// An OS block's dispatches: the first at once (the MXU is done: the read-back before waited for it), the
// others in its shadow.
void Emitter::issue(std::vector<Instr> dispatches) {
  flush_pending();
  if (dispatches.empty()) return;
  place(dispatches[0]);
  mxu_.shadow = os_shadow(dispatches[0]);
  mxu_.pending.assign(dispatches.begin() + 1, dispatches.end());
}

void Emitter::flush_deferred() {
  if (mxu_.deferred.empty()) return;
  const std::vector<Instr> deferred = std::move(mxu_.deferred);
  mxu_.deferred.clear();
  for (const Instr& in : deferred) interleave(in);
  for (int r : mxu_.deferred_rows) release(r);
  mxu_.deferred_rows.clear();
}

void Emitter::flush_pending() {
  const std::vector<Instr> pending = std::move(mxu_.pending);
  mxu_.pending.clear();
  for (const Instr& in : pending) place(in);
}

// A combinational op is dispatched in the background: its write-back lands in the next instruction's
// FETCH, which reads no vreg, so every later instruction sees it and the op costs 2 cycles, not
// DISPATCH_VPU's 3 (the collect's cycle is bsc's schedule, checked on the reference: test_sxu.cc).
void Emitter::vpu(VpuOpcode op, int d, int a, int b) {
  emit(kVpuOps[size_t(op)].kind == VpuKind::kComb ? instr::vpu_bg(d, op, a, b) : instr::vpu(d, op, a, b));
}

// An output slot; `unfilled` when the loader fills it (VmemSlots::take_output).
int Emitter::take_out_slot(bool unfilled) {
  if (!cutter_.fits_slots(slots_.outs, 1 + regs_.spillable())) return no_room(kNoSlots);
  if (!cutter_.fits_drains(1 + regs_.spillable())) return no_room(kNoOutputs);
  const int s = slots_.take_output(unfilled);
  return s >= 0 ? s : no_room(kNoSlots);
}

// A VMEM tile filled by the loader (a leaf, a constant, or a spilled value), loaded into a fresh vreg.
int Emitter::load_fill(int node, DType const_dtype) {
  int s = slots_.first_free();
  if (s >= cutter_.lim.slots) s = no_room(kNoSlots);  // the fill is still made: callers read it back
  slots_.set(s, VmemSlots::kUsed);  // consumed by the LOAD below, so the slot can take an output later
  cutter_.launch().fills.push_back({s, node, node >= 0 ? p_.nodes[node].dtype : const_dtype});
  int r = alloc_vreg();
  emit(instr::load(r, s));
  return r;
}

// A constant tile: VZERO/VFILL when the value allows, else a broadcast from the palette, a LOAD of a slot
// that holds it, or a loader constant of its own.
int Emitter::constant(int32_t value, DType dtype) {
  const Content content = const_content(value);
  forecast_.ask(content);
  if (int r = take_back(content); r >= 0) return r;
  int r;
  if (value == 0) {
    r = alloc_vreg();
    emit(instr::vzero(r));
  } else if (value == int8_t(value)) {  // VFILL's immediate is one sign-extended byte
    r = alloc_vreg();
    emit(instr::vfill(r, int8_t(value)));
  } else if (int lane = regs_.busy() + 2 <= cutter_.lim.vregs ? consts_.palette_lane(value) : -1; lane >= 0) {
    // (two free vregs: the palette's and the constant's; with fewer, a fill of its own takes one)
    int palette = palette_vreg();
    r = alloc_vreg();
    emit(instr::broadcast_scalar(r, palette, lane / kRows, lane % kRows));
    release(palette);
  } else if (int s = slots_.holding(content); s >= 0) {
    r = alloc_vreg();  // filled earlier in this launch: LOAD it again
    emit(instr::load(r, s));
  } else {
    r = load_fill(consts_.own_tile(value), dtype);
    slots_.content[cutter_.launch().fills.back().slot] = content;
  }
  regs_.hold(r, content);
  return r;
}

// The palette in a busy vreg: a released vreg still holding it, a LOAD from its slot, or its fill.
int Emitter::palette_vreg() {
  if (int r = take_back(kPalette); r >= 0) return r;
  int r;
  if (int s = slots_.holding(kPalette); s >= 0) {
    r = alloc_vreg();
    emit(instr::load(r, s));
  } else {
    r = load_fill(consts_.palette_tile());
    slots_.content[cutter_.launch().fills.back().slot] = kPalette;
  }
  regs_.hold(r, kPalette);
  return r;
}

int Emitter::weight_fill(const MxuTile& data, const MxuDot& m) {
  const int addr =
      MxuMemory{cutter_.launch().mxu_fills, choices_, cutter_.lim.mxu_entries, !cutter_.full()}.weight(
          data, m.chains, m.float32);
  return addr >= 0 ? addr : no_room("WMEM tiles");
}

int Emitter::act_fill(const MxuTile& block, int k, const MxuDot& m) {
  const int addr =
      MxuMemory{cutter_.launch().mxu_fills, choices_, cutter_.lim.mxu_entries, !cutter_.full()}.activations(
          block, k, m.chains, m.float32);
  return addr >= 0 ? addr : no_room("AMEM rows");
}

// A leaf's lanes: a broadcast from its source's vreg, a uniform constant (VZERO/VFILL or a constant tile),
// or a loader gather whose dynamic indices must already be in scratch.
int Emitter::fill_leaf(int node) {
  const TileNode& n = p_.nodes[node];
  if (is_broadcast_leaf(p_, node)) {
    const int source = operand(n.a), r = alloc_vreg();
    broadcast(n, r, source);
    return r;
  }
  // the gather's indices come from an earlier launch, or are themselves a leaf the loader reads
  if (n.dynamic && !cutter_.spilled(n.a) && !is_leaf(n.a))
    return no_room("gather indices computed in this launch");
  if (auto bits = facts_.uniform[node]) {
    forecast_.for_leaf = true;
    int r = constant(int32_t(*bits), n.dtype);
    forecast_.for_leaf = false;
    return r;
  }
  if (int s = slots_.holding(node); s >= 0) {  // filled earlier in this launch, its vreg given up
    int r = alloc_vreg();
    emit(instr::load(r, s));
    return r;
  }
  int r = load_fill(node);
  slots_.content[cutter_.launch().fills.back().slot] = node;
  return r;
}

// The vreg holding an operand: a leaf filled, or a value spilled by an earlier launch filled back.
int Emitter::operand(int node) {
  if (int s = slots_.holding(Content(node)); regs_.of(node) < 0 && !is_leaf(node) && s >= 0) {
    const int r = alloc_vreg();  // spilled earlier in this launch (evict_value)
    emit(instr::load(r, s));
    set_vreg(node, r);
  } else if (regs_.of(node) < 0) {
    if (!is_leaf(node) && !cutter_.spilled(node)) throw Unsupported("internal: operand not computed");
    set_vreg(node, is_leaf(node) ? fill_leaf(node) : load_fill(node));
  }
  regs_.mark_operand(regs_.of(node));
  return regs_.of(node);
}

// Releases the vregs of the node's operands that nothing reads after it, and of a broadcast leaf's source.
void Emitter::drop_dead(int node) {
  for (int o : {p_.nodes[node].a, p_.nodes[node].b, p_.nodes[node].c}) {
    if (o < 0) continue;
    for (int x : {o, is_broadcast_leaf(p_, o) ? p_.nodes[o].a : -1})
      if (x >= 0 && regs_.of(x) >= 0 && last_use(x) <= pos_) {
        release(regs_.of(x));
        set_vreg(x, -1);
      }
  }
}

}  // namespace tinytpu::compiler
