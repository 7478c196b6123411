#include "sim/sxu.h"

#include <algorithm>

#include "isa/vpu_ops.h"
#include "sim/sxu_exec.h"
#include "sim/tensorcore.h"

namespace tinytpu {

// Background write-backs and the main FSM. Settled by bsc's schedule for the reference testbench
// (bsc -show-schedule on TbTinyTPURuntime; hardware.md §8 item 1 left it open):
//  - do_xlu_collect_bg fires in the cycle after an XLU dispatch, always the next FETCH, which reads no
//    vreg;
//  - do_vpu_collect fires in the first cycle the VPU result is ready, in parallel with whatever main-FSM
//    rule fires: no main-FSM rule that can fire then reads a vreg (they are guarded by
//    !vpu_wb_pending), and when both write the same vreg the main FSM's write wins (G0117). Its only
//    G0010 conflicts are the MXU epilogue dispatches (42, 46), which lose that cycle.
void Sxu::collect_xlu(TensorCore& tc) {
  tc.vrf[xlu_dst] = tc.xlu.result;
  xlu_busy = false;
}

template <bool kTraced>
void Sxu::tick(TensorCore& tc) {
  collecting = vpu_wb_pending && tc.vpu.is_done();
  vpu_wait = false;
  if (xlu_busy) collect_xlu(tc);
  if (collecting) tc.vrf[vpu_wb_dst] = tc.vpu.result;  // first, so a main-FSM write overrides it
  Exec outcome = Exec::kFired;                         // what the cycle did, for a trace
  // On to the next instruction in sequence. Overlapped fetch (a variant, config.h) fetches it in this same
  // cycle; traced, after the trace saw this one retire, so the fetch is left to the end of the cycle.
  bool fetch_now = false;
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
  if (phase == Phase::kIdle || phase == Phase::kHalted) {
    if (collecting) vpu_wb_pending = false;
    return;
  } else if (phase == Phase::kVpuCollect) {  // synchronous DISPATCH_VPU / SELECT waiting for its result
    ++cycles;
    if (collecting) {
      retire();
      outcome = Exec::kNext;
    } else {
      ++stall_cycles;
      outcome = Exec::kStallVpuResult;
      vpu_wait = true;
    }
  } else if (phase == Phase::kFetch) {
    ++cycles;
    if constexpr (kTraced) {
      fetch_pc = pc;
      fetch_cycle = tc.cycle;
    }
    fetch(tc);
    if (halted()) outcome = Exec::kNext;  // HALT retires in its FETCH cycle
  } else {
    ++cycles;
    switch (outcome = kSxuOps[cur.op].exec(tc)) {
      case Exec::kFired:
        ++step;
        break;
      case Exec::kNext:
        retire();
        break;
      case Exec::kJump:  // the next pc is known only now: fetched next cycle, overlapped or not
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
  }
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
template void Sxu::tick<false>(TensorCore&);
template void Sxu::tick<true>(TensorCore&);

void Sxu::trace_cycle(TensorCore& tc, Exec outcome) {
  TraceLog& log = *tc.trace;
  if (is_stall(outcome)) {
    log.state(Track::kSxu, 1, tc.cycle, log.name(kStallNames[int(outcome) - int(kFirstStall)]), fetch_pc);
  } else if (outcome == Exec::kNext || outcome == Exec::kJump) {
    log.slice(Track::kSxu, 0, fetch_cycle, tc.cycle + 1, log.instr_name(fetch_pc, cur), fetch_pc);
  }
}

void Sxu::fetch(TensorCore& tc) {
  if (!loaded[pc] || prog[pc].op >= kNumSxuOps) [[unlikely]]
    bad_fetch(tc);
  latch();
}

void Sxu::bad_fetch(TensorCore& tc) {
  if (!loaded[pc]) tc.fail("fetch from program memory the bundle never wrote (no HALT on this path)");
  cur = prog[pc];  // fail() names the instruction
  tc.fail("undefined SXU opcode: the reference stays in FETCH forever");
}

// The overlapped FETCH of a good instruction. A bad one is left to an ordinary FETCH in the next cycle, which
// reports it: the untraced cycle then needs nothing of the TensorCore after the instruction's EXEC.
void Sxu::overlapped_fetch() {
  if (loaded[pc] && prog[pc].op < kNumSxuOps) latch();
}

namespace {

// The opcodes that, started in a quiet core, use only the SXU, vregs, VMEM, PSUM (its port is free), the
// XLU (written back in the next instruction's FETCH, as ticked) and a combinational VPU op, and never stall
// there. All retire within Sxu::kMaxAloneCycles.
bool runs_alone(const Instr& i) {
  switch (SxuOpcode(i.op)) {
    case SxuOpcode::kDispatchVpu:
    case SxuOpcode::kDispatchVpuBg:
      return i.vpuOp < kNumVpuOps && kVpuOps[i.vpuOp].kind == VpuKind::kComb;
    case SxuOpcode::kLoadVreg:
    case SxuOpcode::kStoreVreg:
    case SxuOpcode::kDispatchSelect:
    case SxuOpcode::kDispatchXluBroadcast:
    case SxuOpcode::kBroadcastScalar:
    case SxuOpcode::kBroadcastRow:
    case SxuOpcode::kBroadcastCol:
    case SxuOpcode::kDispatchXluTranspose:
    case SxuOpcode::kDispatchXluRotate:
    case SxuOpcode::kLoadVpuResult:
    case SxuOpcode::kLoadXluResult:
    case SxuOpcode::kPsumWrite:
    case SxuOpcode::kPsumAccumulate:
    case SxuOpcode::kPsumAccumulateRow:
    case SxuOpcode::kPsumRead:
    case SxuOpcode::kPsumReadRow:
    case SxuOpcode::kPsumClear:
    case SxuOpcode::kSetPredIfZero:
    case SxuOpcode::kSetPredNeZero:
    case SxuOpcode::kSkipIfPred:
    case SxuOpcode::kSkipIfNotPred:
    case SxuOpcode::kReadCycle:
    case SxuOpcode::kLoopBegin:
    case SxuOpcode::kLoopEnd:
    case SxuOpcode::kLoadLoopDepth:
    case SxuOpcode::kVzero:
    case SxuOpcode::kVfill:
    case SxuOpcode::kVmov:
    case SxuOpcode::kVneg:
    case SxuOpcode::kVabs:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Each cycle as tick() runs it in a quiet core: FETCH, the EXEC cycles, and VPU_COLLECT after a
// combinational op (whose result is ready at once).
bool Sxu::run_alone(TensorCore& tc) {
  if (!loaded[pc] || !runs_alone(prog[pc])) return false;
  latch();
  ++cycles;
  ++tc.cycle;
  for (;;) {
    const Exec outcome = kSxuOps[cur.op].exec(tc);
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
        return true;
      case Exec::kJump:
        phase = Phase::kFetch;
        return true;
      default:
        tc.fail("internal error: an instruction run alone stalled");
    }
  }
}

namespace sxu_exec {
namespace {

const Instr& in(TensorCore& tc) { return tc.sxu.cur; }
Tile& vreg(TensorCore& tc, int idx) { return tc.vrf[idx]; }
// Most SXU rules that read or write vregs carry the conservative !vpu_wb_pending guard.
bool wb_pending(TensorCore& tc) { return tc.sxu.vpu_wb_pending; }

// What a VPU dispatch waits for, or kFired when it can go. A busy VPU is named first: its write-back is
// pending too, but the op still running is what the SXU waits for.
Exec vpu_guard(TensorCore& tc) {
  if (!tc.vpu.is_done()) return Exec::kStallVpuBusy;
  return wb_pending(tc) ? Exec::kStallVpuWriteback : Exec::kFired;
}

// A unit's work from this cycle on, on behalf of the running instruction (caller checks tc.trace).
void report(TensorCore& tc, Track unit, int cycles, uint32_t name) {
  tc.trace->slice(unit, 0, tc.cycle, tc.cycle + cycles, name, tc.sxu.pc);
}

void vpu_execute(TensorCore& tc, const VpuOpInfo& op, const Tile& a, const Tile& b) {
  tc.vpu.execute(op, a, b);
  if (tc.trace) report(tc, Track::kVpu, vpu_done_latency(op), tc.trace->name(op.name));
}

// The DMA loader variant: a VMEM entry or the MXU's data whose records are still on their way.
bool vmem_arrived(TensorCore& tc, int addr) { return tc.cycle >= tc.vmem_arrival[tc.vmem.wrap(addr)]; }
bool mxu_data_arrived(TensorCore& tc) { return tc.cycle >= tc.mxu_data_arrival; }

void vmem_write(TensorCore& tc, int addr, const Tile& value) {
  tc.vmem.mem[tc.vmem.wrap(addr)] = value;
  if (tc.trace) report(tc, Track::kVmem, 1, tc.trace->name("write VMEM", tc.vmem.wrap(addr)));
}

// A rule that needs the MXU result (guard: Controller Done). In Idle nothing can ever start the MXU
// again, so the reference deadlocks: report it at once.
bool mxu_result_ready(TensorCore& tc) {
  if (tc.ctrl.state == CState::kIdle)
    tc.fail("waits for an MXU result but no MXU dispatch was issued: the reference deadlocks");
  return tc.ctrl.is_done();
}

MxuDispatch mxu_operands(TensorCore& tc, MxuStart kind) {
  MxuDispatch d;
  d.kind = kind;
  d.w_base = uint8_t(tc.wsram.wrap(in(tc).mxuWBase));
  d.a_base = uint8_t(tc.asram.wrap(in(tc).mxuABase));
  d.len = uint8_t(tc.asram.wrap(in(tc).mxuTLen));  // a tile count, as wide as an address
  return d;
}

// Asynchronous start: the SXU moves on; the start method's guard stalls it while the MXU is busy.
Exec start_mxu(TensorCore& tc, const MxuDispatch& d) {
  if (!tc.ctrl.can_start()) return Exec::kStallMxuBusy;
  if (!mxu_data_arrived(tc)) return Exec::kStallLoad;
  tc.ctrl.start(d, tc.array);
  if (tc.trace) tc.trace->mxu_started(tc.cycle + 1, tc.trace->instr_name(tc.sxu.pc, in(tc)), tc.sxu.pc);
  return Exec::kNext;
}

// Synchronous epilogue (42, 46): EXEC starts the MXU, then wait for Done, then one write-back cycle.
Exec run_epilogue(TensorCore& tc, const MxuDispatch& d, bool wb_vmem) {
  switch (tc.sxu.step) {
    case 0:  // a VPU write-back in this cycle out-ranks the dispatch (bsc G0010)
      if (tc.sxu.collecting) return Exec::kStallVpuWriteback;
      if (Exec e = start_mxu(tc, d); e != Exec::kNext) return e;
      return Exec::kFired;
    case 1:
      return tc.ctrl.is_done() ? Exec::kFired : Exec::kStallMxuResult;
    default:
      if (wb_vmem && !vmem_arrived(tc, in(tc).vmemAddr)) return Exec::kStallLoad;
      if (wb_vmem)
        vmem_write(tc, in(tc).vmemAddr, tc.ctrl.epilogue_buf);
      else
        vreg(tc, in(tc).vregDst) = tc.ctrl.epilogue_buf;
      return Exec::kNext;
  }
}

Exec vpu_dispatch(TensorCore& tc, bool background) {
  if (Exec e = vpu_guard(tc); is_stall(e)) return e;
  const Instr& i = in(tc);
  if (i.vpuOp >= kNumVpuOps) tc.fail("undefined VPU op");
  vpu_execute(tc, kVpuOps[i.vpuOp], vreg(tc, i.vregSrc), vreg(tc, i.vregSrc2));
  tc.sxu.vpu_wb_pending = true;
  tc.sxu.vpu_wb_dst = i.vregDst;
  return background ? Exec::kNext : Exec::kAwaitCollect;
}

// XLU dispatches are dual-issue: the result is collected into vregDst in the next cycle.
template <class Op>
Exec xlu_dispatch(TensorCore& tc, Op op) {
  // The reference's guard; never false in practice: the collect happens in the FETCH after a dispatch.
  if (tc.sxu.xlu_busy) return Exec::kStallXluResult;
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  op(tc.xlu, vreg(tc, in(tc).vregSrc), in(tc).vregSrc2);
  if (tc.trace) report(tc, Track::kXlu, 1, tc.trace->instr_name(tc.sxu.pc, in(tc)));
  tc.sxu.xlu_busy = true;
  tc.sxu.xlu_dst = in(tc).vregDst;
  ++tc.xlu_busy_cycles;
  return Exec::kNext;
}

// SXU writes to the PSUM bank share one RegFile port with the MXU drain, which bsc makes more urgent
// (G0010 in the reference's schedule; hardware.md §8 item 2 left it open): the SXU stalls a cycle.
bool psum_port_free(TensorCore& tc) { return !tc.psum_port_taken; }
Exec psum_write_guard(TensorCore& tc) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  return psum_port_free(tc) ? Exec::kFired : Exec::kStallPsumPort;
}

Tile lanewise(const Tile& t, int32_t (*f)(int32_t)) {
  Tile out;
  std::transform(t.begin(), t.end(), out.begin(), f);
  return out;
}

Exec write_vreg(TensorCore& tc, const Tile& value) {
  vreg(tc, in(tc).vregDst) = value;
  return Exec::kNext;
}

Tile scalar_tile(int32_t v) {  // row 0, lane 0 = v, the rest 0
  Tile t{};
  t[0] = v;
  return t;
}

Exec set_pred(TensorCore& tc, bool if_zero) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  tc.sxu.pred = (vreg(tc, in(tc).vregSrc)[0] == 0) == if_zero;
  return Exec::kNext;
}

Exec skip(TensorCore& tc, bool on_pred) {
  tc.sxu.pc = uint8_t(tc.sxu.pc + (tc.sxu.pred == on_pred ? 2 : 1));
  tc.sxu.pred = false;
  return Exec::kJump;
}

}  // namespace

Exec load_vreg(TensorCore& tc) {
  if (tc.sxu.step == 0) {  // LOAD_REQ: VMEM read has one cycle of latency
    if (!vmem_arrived(tc, in(tc).vmemAddr)) return Exec::kStallLoad;
    int a = tc.vmem.wrap(in(tc).vmemAddr);
    tc.vmem.resp = tc.vmem.mem[a];
    if (tc.trace) report(tc, Track::kVmem, 1, tc.trace->name("read VMEM", a));
    return Exec::kFired;
  }
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  return write_vreg(tc, tc.vmem.resp);
}

Exec store_vreg(TensorCore& tc) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  if (!vmem_arrived(tc, in(tc).vmemAddr)) return Exec::kStallLoad;
  vmem_write(tc, in(tc).vmemAddr, vreg(tc, in(tc).vregSrc));
  return Exec::kNext;
}

Exec dispatch_vpu(TensorCore& tc) { return vpu_dispatch(tc, false); }
Exec dispatch_vpu_bg(TensorCore& tc) { return vpu_dispatch(tc, true); }

Exec dispatch_select(TensorCore& tc) {
  if (Exec e = vpu_guard(tc); is_stall(e)) return e;
  const Instr& i = in(tc);
  if (tc.sxu.step == 0) {  // COPY(false) preloads the VPU result register with the false values
    vpu_execute(tc, kVpuOps[size_t(VpuOpcode::kCopy)], vreg(tc, i.mxuWBase), Tile{});
    return Exec::kFired;
  }
  vpu_execute(tc, kVpuOps[size_t(VpuOpcode::kSelect)], vreg(tc, i.vregSrc), vreg(tc, i.vregSrc2));
  tc.sxu.vpu_wb_pending = true;
  tc.sxu.vpu_wb_dst = i.vregDst;
  return Exec::kAwaitCollect;
}

Exec xlu_broadcast(TensorCore& tc) {
  return xlu_dispatch(tc, [](Xlu& x, const Tile& s, int sel) { x.broadcast_col(s, sel); });
}
Exec broadcast_col(TensorCore& tc) { return xlu_broadcast(tc); }
Exec broadcast_scalar(TensorCore& tc) {
  return xlu_dispatch(tc, [](Xlu& x, const Tile& s, int sel) {
    x.broadcast_scalar(s, sel >> TensorCoreConfig::kRowBits, sel);
  });
}
Exec broadcast_row(TensorCore& tc) {
  return xlu_dispatch(tc, [](Xlu& x, const Tile& s, int sel) { x.broadcast_row(s, sel); });
}
Exec xlu_transpose(TensorCore& tc) {
  return xlu_dispatch(tc, [](Xlu& x, const Tile& s, int) { x.transpose(s); });
}
Exec xlu_rotate(TensorCore& tc) {
  return xlu_dispatch(tc, [](Xlu& x, const Tile& s, int sel) { x.rotate(s, sel); });
}

Exec load_vpu_result(TensorCore& tc) {
  if (Exec e = vpu_guard(tc); is_stall(e)) return e;
  return write_vreg(tc, tc.vpu.result);
}
Exec load_xlu_result(TensorCore& tc) { return write_vreg(tc, tc.xlu.result); }

Exec dispatch_mxu(TensorCore& tc) {
  MxuDispatch d = mxu_operands(tc, MxuStart::kPsum);
  d.psum_addr = in(tc).vregDst;
  d.psum_row = in(tc).vregSrc & (kRows - 1);
  d.psum_mode = PsumMode(in(tc).vregSrc2 & 3);
  return start_mxu(tc, d);
}
Exec dispatch_mxu_accumulate(TensorCore& tc) {
  return start_mxu(tc, mxu_operands(tc, MxuStart::kAccumulate));
}
Exec dispatch_mxu_os(TensorCore& tc) { return start_mxu(tc, mxu_operands(tc, MxuStart::kOS)); }
Exec dispatch_mxu_os_accumulate(TensorCore& tc) {
  return start_mxu(tc, mxu_operands(tc, MxuStart::kOSAccumulate));
}
Exec dispatch_mxu_requant(TensorCore& tc) {
  MxuDispatch d = mxu_operands(tc, MxuStart::kRequant);
  d.requant_base = in(tc).vmemAddr;
  return start_mxu(tc, d);
}

Exec mxu_clear(TensorCore& tc) {
  if (!tc.ctrl.can_start()) return Exec::kStallMxuBusy;
  tc.array.clear_all();
  return Exec::kNext;
}

Exec wait_mxu(TensorCore& tc) { return mxu_result_ready(tc) ? Exec::kNext : Exec::kStallMxuResult; }

Exec load_mxu_result(TensorCore& tc) {
  if (!mxu_result_ready(tc)) return Exec::kStallMxuResult;
  return write_vreg(tc, row_tile(tc.ctrl.output_buf));
}

Exec load_mxu_matrix_row(TensorCore& tc) {
  if (!mxu_result_ready(tc)) return Exec::kStallMxuResult;
  Row r;
  std::copy_n(tc.ctrl.matrix_buf.begin() + (in(tc).vregSrc & (kRows - 1)) * kRows, kRows, r.begin());
  return write_vreg(tc, row_tile(r));
}

Exec dispatch_mxu_epilogue(TensorCore& tc) {
  const Instr& i = in(tc);
  MxuDispatch d = mxu_operands(tc, MxuStart::kEpilogue);
  std::copy_n(vreg(tc, i.vregSrc).begin(), kRows, d.bias.begin());
  d.epi = {bool(i.vpuOp & 1), bool(i.vpuOp & 2), bool(i.vpuOp & 4), bool(i.vpuOp & 8)};
  return run_epilogue(tc, d, i.vpuOp & 16);
}

Exec dispatch_mxu_vpu_epilogue(TensorCore& tc) {
  const Instr& i = in(tc);
  MxuDispatch d = mxu_operands(tc, MxuStart::kGeneric);
  d.src2 = vreg(tc, i.vregSrc);
  d.vpu_op = i.vpuOp;
  d.wb_vmem = i.vregSrc2 & 1;
  return run_epilogue(tc, d, d.wb_vmem);  // the Controller's copy of the bit is the same
}

Exec load_epilogue_stat(TensorCore& tc) {
  const Controller& c = tc.ctrl;
  if (c.active()) return Exec::kStallMxuResult;
  if (!(c.is_done() && c.epilogue_active && c.epi.reduce))
    tc.fail("LOAD_EPILOGUE_STAT without a finished reducing MXU_EPILOGUE: the reference deadlocks");
  Tile t{};
  for (int r = 0; r < kRows; ++r) {
    t[r * kRows] = int32_t(uint64_t(c.stat_buf[r]));
    t[r * kRows + 1] = int32_t(uint64_t(c.stat_buf[r]) >> 32);
  }
  return write_vreg(tc, t);
}

Exec set_requant_config(TensorCore& tc) {
  if (!tc.ctrl.can_start()) return Exec::kStallMxuBusy;
  const Instr& i = in(tc);
  tc.ctrl.scale_mul = int32_t(uint32_t(i.vmemAddr) << 24 | uint32_t(i.mxuTLen) << 16 |
                              uint32_t(i.mxuABase) << 8 | i.mxuWBase);
  tc.ctrl.scale_shift = i.vpuOp & 31;
  return Exec::kNext;
}

Exec psum_write(TensorCore& tc) {
  if (Exec e = psum_write_guard(tc); is_stall(e)) return e;
  tc.psum.mem[tc.psum.bucket(in(tc).vmemAddr)] = vreg(tc, in(tc).vregSrc);
  return Exec::kNext;
}

Exec psum_accumulate(TensorCore& tc) {
  if (Exec e = psum_write_guard(tc); is_stall(e)) return e;
  Tile& b = tc.psum.mem[tc.psum.bucket(in(tc).vmemAddr)];
  const Tile& v = vreg(tc, in(tc).vregSrc);
  for (int e = 0; e < kTileElems; ++e) b[e] = wrap_add(b[e], v[e]);
  return Exec::kNext;
}

Exec psum_accumulate_row(TensorCore& tc) {
  if (Exec e = psum_write_guard(tc); is_stall(e)) return e;
  Row r;
  std::copy_n(vreg(tc, in(tc).vregSrc).begin(), kRows, r.begin());
  tc.psum.accumulate_row(tc.psum.bucket(in(tc).vmemAddr), in(tc).vregDst & (kRows - 1), r);
  return Exec::kNext;
}

Exec psum_read(TensorCore& tc) {
  if (tc.sxu.step == 0) {
    tc.psum.resp = tc.psum.mem[tc.psum.bucket(in(tc).vmemAddr)];
    return Exec::kFired;
  }
  return write_vreg(tc, tc.psum.resp);
}

Exec psum_read_row(TensorCore& tc) {
  Row r;
  const Tile& b = tc.psum.mem[tc.psum.bucket(in(tc).vmemAddr)];
  std::copy_n(b.begin() + (in(tc).vregSrc & (kRows - 1)) * kRows, kRows, r.begin());
  return write_vreg(tc, row_tile(r));
}

Exec psum_clear(TensorCore& tc) {
  if (!psum_port_free(tc)) return Exec::kStallPsumPort;
  tc.psum.mem[tc.psum.bucket(in(tc).vmemAddr)].fill(0);
  return Exec::kNext;
}

Exec psum_clear_all(TensorCore& tc) {  // one bucket per cycle
  if (!psum_port_free(tc)) return Exec::kStallPsumPort;
  uint8_t& idx = tc.sxu.psum_clear_idx;
  tc.psum.mem[idx].fill(0);
  if (idx == tc.psum.buckets() - 1) {
    idx = 0;
    return Exec::kNext;
  }
  ++idx;
  return Exec::kFired;
}

Exec set_pred_if_zero(TensorCore& tc) { return set_pred(tc, true); }
Exec set_pred_ne_zero(TensorCore& tc) { return set_pred(tc, false); }
Exec skip_if_pred(TensorCore& tc) { return skip(tc, true); }
Exec skip_if_not_pred(TensorCore& tc) { return skip(tc, false); }

Exec read_cycle(TensorCore& tc) { return write_vreg(tc, scalar_tile(int32_t(uint32_t(tc.cycle)))); }
Exec load_loop_depth(TensorCore& tc) { return write_vreg(tc, scalar_tile(tc.sxu.loop_top)); }

Exec loop_begin(TensorCore& tc) {
  Sxu& s = tc.sxu;
  if (s.loop_top < tc.cfg.loop_depth) {  // the reference ignores a fifth nested LOOP_BEGIN
    s.loop_count[s.loop_top] = in(tc).mxuTLen;
    s.loop_ret[s.loop_top] = uint8_t(s.pc + 1);
    ++s.loop_top;
  }
  return Exec::kNext;
}

Exec loop_end(TensorCore& tc) {
  Sxu& s = tc.sxu;
  if (s.loop_top == 0) return Exec::kNext;
  int top = s.loop_top - 1;
  if (s.loop_count[top] > 1) {
    --s.loop_count[top];
    s.pc = s.loop_ret[top];
    return Exec::kJump;
  }
  s.loop_count[top] = 0;
  --s.loop_top;
  return Exec::kNext;
}

Exec vzero(TensorCore& tc) { return write_vreg(tc, Tile{}); }

Exec vfill(TensorCore& tc) {
  Tile t;
  t.fill(int8_t(in(tc).mxuWBase));
  return write_vreg(tc, t);
}

Exec vmov(TensorCore& tc) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  return write_vreg(tc, vreg(tc, in(tc).vregSrc));
}

Exec vneg(TensorCore& tc) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  return write_vreg(tc, lanewise(vreg(tc, in(tc).vregSrc), wrap_neg));
}

Exec vabs(TensorCore& tc) {
  if (wb_pending(tc)) return Exec::kStallVpuWriteback;
  return write_vreg(tc,
                    lanewise(vreg(tc, in(tc).vregSrc), [](int32_t x) { return x < 0 ? wrap_neg(x) : x; }));
}

}  // namespace sxu_exec
}  // namespace tinytpu
