#include "sim/sxu.h"

#include <algorithm>

#include "base/errors.h"
#include "isa/tasm.h"
#include "isa/vpu_ops.h"
#include "sim/batch.h"
#include "sim/sxu_exec.h"

namespace tinytpu {

const std::array<const char*, kNumStalls> kStallNames = {"VPU write-back", "VPU busy",  "VPU result",
                                                         "XLU result",     "MXU busy",  "MXU result",
                                                         "PSUM port",      "DMA record"};

void Sxu::fail_at(uint64_t cycle, const std::string& what) const {
  throw SimError("pc " + std::to_string(pc) + " (" + format_instr(cur) + ") at cycle " +
                 std::to_string(cycle) + ": " + what);
}

namespace {

// Per opcode, from its sxu_ops.def row, as compact tables for the per-cycle loop: whether a quiet core may
// take it whole, and the EXEC cycles a kFixed instruction takes at the least (0 for the other timings).
template <class T, class F>
constexpr std::array<T, kNumSxuOps> per_opcode(F column) {
  std::array<T, kNumSxuOps> table{};
  for (const SxuOpInfo& row : kSxuOps) table[row.opcode] = column(row);
  return table;
}
constexpr auto kAloneRule = per_opcode<SxuAlone>([](const SxuOpInfo& row) { return row.alone; });
constexpr auto kFixedExecCycles = per_opcode<uint8_t>(
    [](const SxuOpInfo& row) { return uint8_t(row.timing == SxuTiming::kFixed ? row.cycles - 1 : 0); });

}  // namespace

// Started in a quiet core, an instruction whose row says so uses only the SXU, vregs, VMEM, PSUM (its port is
// free), the XLU (written back in the next instruction's FETCH, as ticked) and a combinational VPU op, and
// never stalls there. All retire within Sxu::kMaxAloneCycles.
bool Sxu::runs_alone(const Instr& i) {
  if (i.op >= kNumSxuOps) return false;  // an undefined opcode: the ticked FETCH reports it
  switch (kAloneRule[i.op]) {
    case SxuAlone::kAlways:
      return true;
    case SxuAlone::kCombVpu:
      return i.vpuOp < kNumVpuOps && kVpuOps[i.vpuOp].kind == VpuKind::kComb;
    case SxuAlone::kNever:
      break;
  }
  return false;
}

namespace {

// Each opcode's exec function, from its sxu_ops.def row: for one core, and for a batch (sim/batch.h) the rows
// a program that computes in order may hold (they read no data for their timing or control flow). A batch
// never runs the others, whose exec functions are not made for one.
template <class DP>
using ExecFn = Exec (*)(Sxu&, DP&);
template <int kOpcode>
struct ExecOf;
#define X(opcode, name, mnemonic, fn, ...)              \
  template <>                                           \
  struct ExecOf<opcode> {                               \
    template <class DP>                                 \
    static constexpr ExecFn<DP> get = sxu_exec::fn<DP>; \
  };
#include "isa/sxu_ops.def"
#undef X
Exec unbatched(Sxu& sx, BatchDatapath& tc) {
  sx.fail(tc, "internal error: an instruction that does not compute in order in a batch");
}
constexpr bool batched(const SxuOpInfo& row) { return !row.reads_data; }
template <class DP, int kOpcode>
constexpr ExecFn<DP> exec_fn() {
  if constexpr (std::is_same_v<DP, BatchDatapath> && !batched(kSxuOps[kOpcode]))
    return unbatched;
  else
    return ExecOf<kOpcode>::template get<DP>;
}
template <class DP, int... kOpcodes>
constexpr std::array<ExecFn<DP>, kNumSxuOps> exec_table(std::integer_sequence<int, kOpcodes...>) {
  return {exec_fn<DP, kOpcodes>()...};
}
template <class DP>
constexpr std::array<ExecFn<DP>, kNumSxuOps> kExecTable =
    exec_table<DP>(std::make_integer_sequence<int, kNumSxuOps>());
template <class DP>
Exec exec(Sxu& sx, DP& tc) {
  return kExecTable<DP>[sx.cur.op](sx, tc);
}

}  // namespace

inline bool Sxu::hold_to_row(Exec& outcome) {
  const int left = kFixedExecCycles[cur.op] - 1 - step;  // the row's EXEC cycles less the step + 1 run
  if (left <= 0) [[likely]]
    return false;
  hold = uint8_t(left);
  held = outcome;
  outcome = Exec::kFired;
  return true;
}

// Background write-backs and the main FSM. Settled by bsc's schedule for the reference testbench
// (bsc -show-schedule on TbTinyTPURuntime; hardware.md §8 item 1 left it open):
//  - do_xlu_collect_bg fires in the cycle after an XLU dispatch, always the next FETCH, which reads no
//    vreg;
//  - do_vpu_collect fires in the first cycle the VPU result is ready, in parallel with whatever main-FSM
//    rule fires: no main-FSM rule that can fire then reads a vreg (they are guarded by
//    !vpu_wb_pending), and when both write the same vreg the main FSM's write wins (G0117). Its only
//    G0010 conflicts are the MXU epilogue dispatches (42, 46), which lose that cycle.
template <class DP>
void Sxu::collect_xlu(DP& tc) {
  tc.vrf[xlu_dst] = tc.xlu.result;
  xlu_busy = false;
}

template <bool kTraced>
inline Exec Sxu::advance(Datapath& tc, bool& fetch_now) {
  // On to the next instruction in sequence. Overlapped fetch (a variant, config.h) fetches it in this same
  // cycle; traced, after the trace saw this one retire, so the fetch is left to the end of the cycle.
  auto retire = [&] {
    ++pc;
    phase = Phase::kFetch;
    if (fetch_overlap) {
      if constexpr (kTraced)
        fetch_now = true;
      else
        overlapped_fetch();
    }
  };
  if (phase == Phase::kVpuCollect) {  // synchronous DISPATCH_VPU / SELECT waiting for its result
    if (!collecting) {
      ++stall_cycles;
      vpu_wait = true;
      return Exec::kStallVpuResult;
    }
    retire();
    return Exec::kNext;
  }
  if (phase == Phase::kFetch) {
    if constexpr (kTraced) {
      fetch_pc = pc;
      fetch_cycle = tc.cycle;
    }
    fetch(tc);
    return halted() ? Exec::kNext : Exec::kFired;  // HALT retires in its FETCH cycle
  }
  if (hold) [[unlikely]] {
    if (--hold > 0) return Exec::kFired;
    if (held == Exec::kNext)
      retire();
    else
      phase = Phase::kFetch;
    return held;
  }
  Exec outcome = exec(*this, tc);
  switch (outcome) {
    case Exec::kFired:
      ++step;
      break;
    case Exec::kNext:
      if (hold_to_row(outcome)) break;
      retire();
      break;
    case Exec::kJump:  // the next pc is known only now: fetched next cycle, overlapped or not
      if (hold_to_row(outcome)) break;
      phase = Phase::kFetch;
      break;
    case Exec::kAwaitCollect:
      phase = Phase::kVpuCollect;
      break;
    default:  // a stall
      ++stall_cycles;
      vpu_wait = outcome == Exec::kStallVpuBusy;
      break;
  }
  return outcome;
}

template <bool kTraced>
void Sxu::tick(Datapath& tc) {
  collecting = vpu_wb_pending && tc.vpu.is_done();
  vpu_wait = false;
  if (xlu_busy) collect_xlu(tc);
  if (collecting) tc.vrf[vpu_wb_dst] = tc.vpu.result;  // first, so a main-FSM write overrides it
  if (phase == Phase::kIdle || phase == Phase::kHalted) {
    if (collecting) vpu_wb_pending = false;
    return;
  }
  ++cycles;
  bool fetch_now = false;                                // traced: an overlapped fetch at the cycle's end
  const Exec outcome = advance<kTraced>(tc, fetch_now);  // what the cycle did, for a trace
  if constexpr (kTraced) {
    trace_cycle(tc, outcome);
    if (fetch_now) {
      fetch_pc = pc;
      fetch_cycle = tc.cycle + 1;  // the slice starts at the instruction's first cycle of its own
      overlapped_fetch();
      if (halted()) trace_cycle(tc, Exec::kNext);  // HALT retires in its FETCH cycle
    }
  }
  if (collecting) vpu_wb_pending = false;
}
template void Sxu::tick<false>(Datapath&);
template void Sxu::tick<true>(Datapath&);

void Sxu::trace_cycle(Datapath& tc, Exec outcome) {
  TraceLog& log = *tc.trace;
  if (is_stall(outcome)) {
    log.state(Track::kSxu, 1, tc.cycle, log.name(kStallNames[int(outcome) - int(kFirstStall)]), fetch_pc);
  } else if (outcome == Exec::kNext || outcome == Exec::kJump) {
    log.slice(Track::kSxu, 0, fetch_cycle, tc.cycle + 1, log.instr_name(fetch_pc, cur), fetch_pc);
  }
}

void Sxu::fetch(Datapath& tc) {
  if (!loaded[pc] || prog[pc].op >= kNumSxuOps) [[unlikely]]
    bad_fetch(tc);
  latch();
}

void Sxu::bad_fetch(Datapath& tc) {
  if (!loaded[pc]) fail(tc, "fetch from program memory the bundle never wrote (no HALT on this path)");
  cur = prog[pc];  // fail() names the instruction
  fail(tc, "undefined SXU opcode: the reference stays in FETCH forever");
}

// The overlapped FETCH of a good instruction. A bad one is left to an ordinary FETCH in the next cycle, which
// reports it: the untraced cycle then needs nothing of the TensorCore after the instruction's EXEC.
void Sxu::overlapped_fetch() {
  if (loaded[pc] && prog[pc].op < kNumSxuOps) latch();
}

// Each cycle as tick() runs it in a quiet core: FETCH, the EXEC cycles, and VPU_COLLECT after a
// combinational op (whose result is ready at once).
bool Sxu::run_alone(Datapath& tc) {
  if (!loaded[pc] || !runs_alone(prog[pc])) return false;
  run_whole(tc);
  return true;
}

template <class DP>
void Sxu::run_whole(DP& tc) {
  latch();
  ++cycles;
  ++tc.cycle;
  auto take_hold = [&] {  // the cycles hold_to_row would add, at once
    Exec outcome = Exec::kNext;
    if (!hold_to_row(outcome)) return;
    cycles += hold;
    tc.cycle += hold;
    hold = 0;
  };
  for (;;) {
    const Exec outcome = exec(*this, tc);
    ++cycles;
    ++tc.cycle;
    switch (outcome) {
      case Exec::kFired:
        ++step;
        continue;
      case Exec::kAwaitCollect:  // VPU_COLLECT: one more cycle, the write-back and retirement in it
        ++cycles;
        ++tc.cycle;
        [[fallthrough]];
      case Exec::kNext:
        take_hold();
        // VPU_COLLECT's write-back; or an XLU op's or a combinational VPU_BG's, which lands in the next
        // FETCH: that reads no vreg and, the core being quiet, meets no other unit, so taken now, the state
        // after that cycle is the same.
        if (xlu_busy) collect_xlu(tc);
        if (vpu_wb_pending) {
          tc.vrf[vpu_wb_dst] = tc.vpu.result;
          vpu_wb_pending = false;
        }
        ++pc;
        phase = Phase::kFetch;
        return;
      case Exec::kJump:
        take_hold();
        phase = Phase::kFetch;
        return;
      default:
        fail(tc, "internal error: an instruction run alone stalled");
    }
  }
}
template void Sxu::run_whole(Datapath&);
template void Sxu::run_whole(BatchDatapath&);

namespace sxu_exec {
namespace {

template <class DP>
decltype(auto) vreg(DP& tc, int idx) {  // a Tile& in one core, a TileSpan in a batch (sim/batch.h)
  return tc.vrf[idx];
}
// Most SXU rules that read or write vregs carry the conservative !vpu_wb_pending guard.
bool wb_pending(const Sxu& sx) { return sx.vpu_wb_pending; }

// What a VPU dispatch waits for, or kFired when it can go. A busy VPU is named first: its write-back is
// pending too, but the op still running is what the SXU waits for.
template <class DP>
Exec vpu_guard(Sxu& sx, DP& tc) {
  if (!tc.vpu.is_done()) return Exec::kStallVpuBusy;
  return wb_pending(sx) ? Exec::kStallVpuWriteback : Exec::kFired;
}

// A unit's work from this cycle on, on behalf of the running instruction (caller checks tc.trace).
template <class DP>
void report(Sxu& sx, DP& tc, Track unit, int cycles, uint32_t name) {
  tc.trace->slice(unit, 0, tc.cycle, tc.cycle + cycles, name, sx.pc);
}

template <class DP, class A, class B>
void vpu_execute(Sxu& sx, DP& tc, const VpuOpInfo& op, const A& a, const B& b) {
  tc.vpu.execute(op, a, b);
  if (tc.trace) report(sx, tc, Track::kVpu, vpu_done_latency(op), tc.trace->name(op.name));
}

// The DMA loader variant: a VMEM entry or the MXU's data whose records are still on their way.
template <class DP>
bool vmem_arrived(DP& tc, int addr) {
  return tc.cycle >= tc.vmem_arrival[tc.vmem.wrap(addr)];
}
template <class DP>
bool mxu_data_arrived(DP& tc) {
  return tc.cycle >= tc.mxu_data_arrival;
}

template <class DP, class Value>
void vmem_write(Sxu& sx, DP& tc, int addr, const Value& value) {
  tc.vmem.mem[tc.vmem.wrap(addr)] = value;
  if (tc.trace) report(sx, tc, Track::kVmem, 1, tc.trace->name("write VMEM", tc.vmem.wrap(addr)));
}

// A rule that needs the MXU result (guard: Controller Done). In Idle nothing can ever start the MXU
// again, so the reference deadlocks: report it at once.
template <class DP>
bool mxu_result_ready(Sxu& sx, DP& tc) {
  if (tc.ctrl.state == CState::kIdle)
    sx.fail(tc, "waits for an MXU result but no MXU dispatch was issued: the reference deadlocks");
  return tc.ctrl.is_done();
}

// The dispatch the instruction's row starts (its mxu_start column), with the operands every start reads.
template <class DP>
MxuDispatch mxu_operands(Sxu& sx, DP& tc) {
  MxuDispatch d;
  d.kind = *kSxuOps[sx.cur.op].mxu_start;
  d.w_base = uint8_t(tc.wsram.wrap(sx.cur.mxuWBase));
  d.a_base = uint8_t(tc.asram.wrap(sx.cur.mxuABase));
  d.len = uint8_t(tc.asram.wrap(sx.cur.mxuTLen));  // a tile count, as wide as an address
  return d;
}

// Asynchronous start: the SXU moves on; the start method's guard stalls it while the MXU is busy. The
// epilogues read their bias or src2 from the vreg vregSrc names, a seed its words.
template <class DP>
Exec start_mxu(Sxu& sx, DP& tc, const MxuDispatch& d) {
  if (!tc.ctrl.can_start(d.kind)) return Exec::kStallMxuBusy;
  if (!mxu_data_arrived(tc)) return Exec::kStallLoad;
  tc.start_mxu(d, vreg(tc, sx.cur.vregSrc));
  if (tc.trace) tc.trace->mxu_started(tc.cycle + 1, tc.trace->instr_name(sx.pc, sx.cur), sx.pc);
  return Exec::kNext;
}

// Synchronous epilogue (42, 46): EXEC starts the MXU, then wait for Done, then one write-back cycle.
template <class DP>
Exec run_epilogue(Sxu& sx, DP& tc, const MxuDispatch& d, bool wb_vmem) {
  switch (sx.step) {
    case 0:  // a VPU write-back in this cycle out-ranks the dispatch (bsc G0010)
      if (sx.collecting) return Exec::kStallVpuWriteback;
      if (Exec e = start_mxu(sx, tc, d); e != Exec::kNext) return e;
      return Exec::kFired;
    case 1:
      return tc.ctrl.is_done() ? Exec::kFired : Exec::kStallMxuResult;
    default:
      if (wb_vmem && !vmem_arrived(tc, sx.cur.vmemAddr)) return Exec::kStallLoad;
      if (wb_vmem)
        vmem_write(sx, tc, sx.cur.vmemAddr, tc.ctrl.epilogue_tile());
      else
        vreg(tc, sx.cur.vregDst) = tc.ctrl.epilogue_tile();
      return Exec::kNext;
  }
}

template <class DP>
Exec vpu_dispatch(Sxu& sx, DP& tc, bool background) {
  if (Exec e = vpu_guard(sx, tc); is_stall(e)) return e;
  const Instr& i = sx.cur;
  if (i.vpuOp >= kNumVpuOps) sx.fail(tc, "undefined VPU op");
  vpu_execute(sx, tc, kVpuOps[i.vpuOp], vreg(tc, i.vregSrc), vreg(tc, i.vregSrc2));
  sx.vpu_wb_pending = true;
  sx.vpu_wb_dst = i.vregDst;
  return background ? Exec::kNext : Exec::kAwaitCollect;
}

// XLU dispatches are dual-issue: the result is collected into vregDst in the next cycle.
template <class DP, class Op>
Exec xlu_dispatch(Sxu& sx, DP& tc, Op op) {
  // The reference's guard; never false in practice: the collect happens in the FETCH after a dispatch.
  if (sx.xlu_busy) return Exec::kStallXluResult;
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  const int sel = sx.cur.vregSrc2;
  each(tc.xlu.result, vreg(tc, sx.cur.vregSrc), [&](Tile& out, const Tile& src) { out = op(src, sel); });
  if (tc.trace) report(sx, tc, Track::kXlu, 1, tc.trace->instr_name(sx.pc, sx.cur));
  sx.xlu_busy = true;
  sx.xlu_dst = sx.cur.vregDst;
  ++tc.xlu_busy_cycles;
  return Exec::kNext;
}

// SXU writes to the PSUM bank share one RegFile port with the MXU drain, which bsc makes more urgent
// (G0010 in the reference's schedule; hardware.md §8 item 2 left it open): the SXU stalls a cycle.
template <class DP>
bool psum_port_free(DP& tc) {
  return !tc.psum_port_taken;
}
// An SXU access to PSUM while a dispatch that deposits there runs: which value it meets depends on when the
// dispatch drains, so running its program in order would not be exact (RunResult::mxu_overlapped).
template <class DP>
void psum_access(DP& tc) {
  if (tc.ctrl.depositing()) tc.mxu_overlapped = true;
}
template <class DP>
Exec psum_write_guard(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  if (!psum_port_free(tc)) return Exec::kStallPsumPort;
  psum_access(tc);
  return Exec::kFired;
}

template <class DP, class Value>
Exec write_vreg(Sxu& sx, DP& tc, const Value& value) {
  vreg(tc, sx.cur.vregDst) = value;
  return Exec::kNext;
}

// vregDst = f(vregSrc), lane by lane.
template <class DP>
Exec write_lanewise(Sxu& sx, DP& tc, int32_t (*f)(int32_t)) {
  each(vreg(tc, sx.cur.vregDst), vreg(tc, sx.cur.vregSrc),
       [f](Tile& out, const Tile& in) { std::transform(in.begin(), in.end(), out.begin(), f); });
  return Exec::kNext;
}

Tile scalar_tile(int32_t v) {  // row 0, lane 0 = v, the rest 0
  Tile t{};
  t[0] = v;
  return t;
}

template <class DP>
Exec set_pred(Sxu& sx, DP& tc, bool if_zero) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  sx.pred = (vreg(tc, sx.cur.vregSrc)[0] == 0) == if_zero;
  return Exec::kNext;
}

template <class DP>
Exec skip(Sxu& sx, DP&, bool on_pred) {
  sx.pc = uint8_t(sx.pc + (sx.pred == on_pred ? 2 : 1));
  sx.pred = false;
  return Exec::kJump;
}

}  // namespace

template <class DP>
Exec load(Sxu& sx, DP& tc) {
  if (sx.step == 0) {  // LOAD_REQ: VMEM read has one cycle of latency
    if (!vmem_arrived(tc, sx.cur.vmemAddr)) return Exec::kStallLoad;
    int a = tc.vmem.wrap(sx.cur.vmemAddr);
    tc.vmem.resp = tc.vmem.mem[a];
    if (tc.trace) report(sx, tc, Track::kVmem, 1, tc.trace->name("read VMEM", a));
    return Exec::kFired;
  }
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  return write_vreg(sx, tc, tc.vmem.resp);
}

template <class DP>
Exec store(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  if (!vmem_arrived(tc, sx.cur.vmemAddr)) return Exec::kStallLoad;
  vmem_write(sx, tc, sx.cur.vmemAddr, vreg(tc, sx.cur.vregSrc));
  return Exec::kNext;
}

template <class DP>
Exec vpu(Sxu& sx, DP& tc) {
  return vpu_dispatch(sx, tc, false);
}
template <class DP>
Exec vpu_bg(Sxu& sx, DP& tc) {
  return vpu_dispatch(sx, tc, true);
}

template <class DP>
Exec select(Sxu& sx, DP& tc) {
  if (Exec e = vpu_guard(sx, tc); is_stall(e)) return e;
  const Instr& i = sx.cur;
  if (sx.step == 0) {  // COPY(false) preloads the VPU result register with the false values
    vpu_execute(sx, tc, kVpuOps[size_t(VpuOpcode::kCopy)], vreg(tc, i.mxuWBase), Tile{});
    return Exec::kFired;
  }
  vpu_execute(sx, tc, kVpuOps[size_t(VpuOpcode::kSelect)], vreg(tc, i.vregSrc), vreg(tc, i.vregSrc2));
  sx.vpu_wb_pending = true;
  sx.vpu_wb_dst = i.vregDst;
  return Exec::kAwaitCollect;
}

template <class DP>
Exec broadcast(Sxu& sx, DP& tc) {
  return xlu_dispatch(sx, tc, [](const Tile& s, int sel) { return Xlu::broadcast_col(s, sel); });
}
template <class DP>
Exec broadcast_col(Sxu& sx, DP& tc) {
  return broadcast(sx, tc);
}
template <class DP>
Exec broadcast_scalar(Sxu& sx, DP& tc) {
  return xlu_dispatch(sx, tc, [](const Tile& s, int sel) {
    return Xlu::broadcast_scalar(s, sel >> TensorCoreConfig::kRowBits, sel);
  });
}
template <class DP>
Exec broadcast_row(Sxu& sx, DP& tc) {
  return xlu_dispatch(sx, tc, [](const Tile& s, int sel) { return Xlu::broadcast_row(s, sel); });
}
template <class DP>
Exec transpose(Sxu& sx, DP& tc) {
  return xlu_dispatch(sx, tc, [](const Tile& s, int) { return Xlu::transpose(s); });
}
template <class DP>
Exec rotate(Sxu& sx, DP& tc) {
  return xlu_dispatch(sx, tc, [](const Tile& s, int sel) { return Xlu::rotate(s, sel); });
}

template <class DP>
Exec load_vpu_result(Sxu& sx, DP& tc) {
  if (Exec e = vpu_guard(sx, tc); is_stall(e)) return e;
  return write_vreg(sx, tc, tc.vpu.result);
}
template <class DP>
Exec load_xlu_result(Sxu& sx, DP& tc) {
  return write_vreg(sx, tc, tc.xlu.result);
}

template <class DP>
Exec mxu(Sxu& sx, DP& tc) {
  MxuDispatch d = mxu_operands(sx, tc);
  d.psum_addr = sx.cur.vregDst;
  d.psum_row = sx.cur.vregSrc & (kRows - 1);
  d.psum_mode = PsumMode(sx.cur.vregSrc2 & 3);
  return start_mxu(sx, tc, d);
}
template <class DP>
Exec mxu_accumulate(Sxu& sx, DP& tc) {
  return start_mxu(sx, tc, mxu_operands(sx, tc));
}
template <class DP>
Exec mxu_os(Sxu& sx, DP& tc) {
  return start_mxu(sx, tc, mxu_operands(sx, tc));
}
template <class DP>
Exec mxu_os_accumulate(Sxu& sx, DP& tc) {
  return start_mxu(sx, tc, mxu_operands(sx, tc));
}
// A float dispatch (47, 48) on a core with a float MXU (bundle validation refuses it on any other).
template <class DP>
Exec mxu_float(Sxu& sx, DP& tc) {
  if (tc.cfg.mxu_dtype == 0) sx.fail(tc, "a float MXU dispatch on a core without a float MXU (mxu_dtype 0)");
  MxuDispatch d = mxu_operands(sx, tc);
  d.group = sx.cur.vpuOp;
  d.fp = uint8_t(tc.cfg.mxu_dtype);
  d.fp_latency = uint8_t(tc.cfg.mxu_fp_latency);
  return start_mxu(sx, tc, d);
}
template <class DP>
Exec mxu_os_float(Sxu& sx, DP& tc) {
  return mxu_float(sx, tc);
}
// Its words are the vreg vregSrc names, read in this EXEC (start_mxu's operand): behind a pending VPU
// write-back it waits, as the other vreg readers do.
template <class DP>
Exec mxu_seed(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  return mxu_float(sx, tc);
}
// Guard: the bank's dispatches have drained (bundle validation refuses it on a core without a pipelined MXU).
template <class DP>
Exec load_mxu_bank(Sxu& sx, DP& tc) {
  if (!tc.ctrl.bank_ready()) return Exec::kStallMxuResult;
  return write_vreg(sx, tc, tc.ctrl.bank_tile());
}
template <class DP>
Exec mxu_os_float_accumulate(Sxu& sx, DP& tc) {
  return mxu_float(sx, tc);
}
template <class DP>
Exec dispatch_mxu_requant(Sxu& sx, DP& tc) {
  MxuDispatch d = mxu_operands(sx, tc);
  d.requant_base = sx.cur.vmemAddr;
  return start_mxu(sx, tc, d);
}

template <class DP>
Exec mxu_clear(Sxu&, DP& tc) {
  if (!tc.ctrl.can_start()) return Exec::kStallMxuBusy;
  tc.array.clear_all();
  return Exec::kNext;
}

template <class DP>
Exec wait_mxu(Sxu& sx, DP& tc) {
  return mxu_result_ready(sx, tc) ? Exec::kNext : Exec::kStallMxuResult;
}

template <class DP>
Exec load_mxu_result(Sxu& sx, DP& tc) {
  if (!mxu_result_ready(sx, tc)) return Exec::kStallMxuResult;
  return write_vreg(sx, tc, tc.ctrl.output_tile());
}

template <class DP>
Exec load_mxu_matrix_row(Sxu& sx, DP& tc) {
  if (!mxu_result_ready(sx, tc)) return Exec::kStallMxuResult;
  const int row = sx.cur.vregSrc & (kRows - 1);
  each(vreg(tc, sx.cur.vregDst), tc.ctrl.matrix_tile(), [row](Tile& out, const Tile& m) {
    Row r;
    std::copy_n(m.begin() + row * kRows, kRows, r.begin());
    out = row_tile(r);
  });
  return Exec::kNext;
}

template <class DP>
Exec mxu_epilogue(Sxu& sx, DP& tc) {
  const Instr& i = sx.cur;
  MxuDispatch d = mxu_operands(sx, tc);
  d.epi = {bool(i.vpuOp & 1), bool(i.vpuOp & 2), bool(i.vpuOp & 4), bool(i.vpuOp & 8)};
  return run_epilogue(sx, tc, d, i.vpuOp & 16);
}

template <class DP>
Exec mxu_vpu_epilogue(Sxu& sx, DP& tc) {
  const Instr& i = sx.cur;
  MxuDispatch d = mxu_operands(sx, tc);
  d.vpu_op = i.vpuOp;
  d.wb_vmem = i.vregSrc2 & 1;
  return run_epilogue(sx, tc, d, d.wb_vmem);  // the Controller's copy of the bit is the same
}

template <class DP>
Exec load_epilogue_stat(Sxu& sx, DP& tc) {
  const auto& c = tc.ctrl;
  if (c.active()) return Exec::kStallMxuResult;
  if (!(c.is_done() && c.epilogue_active && c.epi.reduce))
    sx.fail(tc, "LOAD_EPILOGUE_STAT without a finished reducing MXU_EPILOGUE: the reference deadlocks");
  return write_vreg(sx, tc, c.stat_tile());
}

template <class DP>
Exec set_requant_config(Sxu& sx, DP& tc) {
  if (!tc.ctrl.can_start()) return Exec::kStallMxuBusy;
  const Instr& i = sx.cur;
  tc.ctrl.scale_mul = int32_t(uint32_t(i.vmemAddr) << 24 | uint32_t(i.mxuTLen) << 16 |
                              uint32_t(i.mxuABase) << 8 | i.mxuWBase);
  tc.ctrl.scale_shift = i.vpuOp & 31;
  return Exec::kNext;
}

template <class DP>
Exec psum_write(Sxu& sx, DP& tc) {
  if (Exec e = psum_write_guard(sx, tc); is_stall(e)) return e;
  tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)] = vreg(tc, sx.cur.vregSrc);
  return Exec::kNext;
}

template <class DP>
Exec psum_accumulate(Sxu& sx, DP& tc) {
  if (Exec e = psum_write_guard(sx, tc); is_stall(e)) return e;
  each(tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)], vreg(tc, sx.cur.vregSrc), [](Tile& b, const Tile& v) {
    for (int e = 0; e < kTileElems; ++e) b[e] = wrap_add(b[e], v[e]);
  });
  return Exec::kNext;
}

template <class DP>
Exec psum_accumulate_row(Sxu& sx, DP& tc) {
  if (Exec e = psum_write_guard(sx, tc); is_stall(e)) return e;
  const int row = sx.cur.vregDst & (kRows - 1);
  each(tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)], vreg(tc, sx.cur.vregSrc), [row](Tile& b, const Tile& v) {
    Row r;
    std::copy_n(v.begin(), kRows, r.begin());
    PsumBank::accumulate_into_row(b, row, r);
  });
  return Exec::kNext;
}

template <class DP>
Exec psum_read(Sxu& sx, DP& tc) {
  if (sx.step == 0) {
    psum_access(tc);
    tc.psum.resp = tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)];
    return Exec::kFired;
  }
  return write_vreg(sx, tc, tc.psum.resp);
}

template <class DP>
Exec psum_read_row(Sxu& sx, DP& tc) {
  const int row = sx.cur.vregSrc & (kRows - 1);
  psum_access(tc);
  each(vreg(tc, sx.cur.vregDst), tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)],
       [row](Tile& out, const Tile& b) {
         Row r;
         std::copy_n(b.begin() + row * kRows, kRows, r.begin());
         out = row_tile(r);
       });
  return Exec::kNext;
}

template <class DP>
Exec psum_clear(Sxu& sx, DP& tc) {
  if (!psum_port_free(tc)) return Exec::kStallPsumPort;
  psum_access(tc);
  tc.psum.mem[tc.psum.bucket(sx.cur.vmemAddr)] = Tile{};
  return Exec::kNext;
}

template <class DP>
Exec psum_clear_all(Sxu& sx, DP& tc) {  // one bucket per cycle
  if (!psum_port_free(tc)) return Exec::kStallPsumPort;
  psum_access(tc);
  uint8_t& idx = sx.psum_clear_idx;
  tc.psum.mem[idx] = Tile{};
  if (idx == tc.psum.buckets() - 1) {
    idx = 0;
    return Exec::kNext;
  }
  ++idx;
  return Exec::kFired;
}

template <class DP>
Exec set_pred_if_zero(Sxu& sx, DP& tc) {
  return set_pred(sx, tc, true);
}
template <class DP>
Exec set_pred_ne_zero(Sxu& sx, DP& tc) {
  return set_pred(sx, tc, false);
}
template <class DP>
Exec skip_if_pred(Sxu& sx, DP& tc) {
  return skip(sx, tc, true);
}
template <class DP>
Exec skip_if_not_pred(Sxu& sx, DP& tc) {
  return skip(sx, tc, false);
}

template <class DP>
Exec read_cycle(Sxu& sx, DP& tc) {
  return write_vreg(sx, tc, scalar_tile(int32_t(uint32_t(tc.cycle))));
}
template <class DP>
Exec load_loop_depth(Sxu& sx, DP& tc) {
  return write_vreg(sx, tc, scalar_tile(sx.loop_top));
}

template <class DP>
Exec loop_begin(Sxu& sx, DP& tc) {
  if (sx.loop_top < tc.cfg.loop_depth) {  // the reference ignores a fifth nested LOOP_BEGIN
    sx.loop_count[sx.loop_top] = sx.cur.mxuTLen;
    sx.loop_ret[sx.loop_top] = uint8_t(sx.pc + 1);
    ++sx.loop_top;
  }
  return Exec::kNext;
}

template <class DP>
Exec loop_end(Sxu& sx, DP&) {
  if (sx.loop_top == 0) return Exec::kNext;
  int top = sx.loop_top - 1;
  if (sx.loop_count[top] > 1) {
    --sx.loop_count[top];
    sx.pc = sx.loop_ret[top];
    return Exec::kJump;
  }
  sx.loop_count[top] = 0;
  --sx.loop_top;
  return Exec::kNext;
}

template <class DP>
Exec vzero(Sxu& sx, DP& tc) {
  return write_vreg(sx, tc, Tile{});
}

template <class DP>
Exec vfill(Sxu& sx, DP& tc) {
  Tile t;
  t.fill(int8_t(sx.cur.mxuWBase));
  return write_vreg(sx, tc, t);
}

template <class DP>
Exec vmov(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  return write_vreg(sx, tc, vreg(tc, sx.cur.vregSrc));
}

template <class DP>
Exec vneg(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  return write_lanewise(sx, tc, wrap_neg);
}

template <class DP>
Exec vabs(Sxu& sx, DP& tc) {
  if (wb_pending(sx)) return Exec::kStallVpuWriteback;
  return write_lanewise(sx, tc, [](int32_t x) { return x < 0 ? wrap_neg(x) : x; });
}

// HALT retires in its FETCH cycle (Sxu::latch): it never reaches EXEC.
template <class DP>
Exec halt(Sxu& sx, DP& tc) {
  const uint64_t cycle = tc.cycle;
  sx.fail_at(cycle, "internal error: HALT in EXEC");
}

}  // namespace sxu_exec
}  // namespace tinytpu
