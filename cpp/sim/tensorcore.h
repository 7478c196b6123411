#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "sim/datapath.h"
#include "sim/sxu.h"

namespace tinytpu {

// mkTensorCore (TensorCore.bsv): every unit of the runtime configuration, clocked together.
//
// Clocking. BSV rules read start-of-cycle state and their writes become visible next cycle. tick()
// gets the same effect without double-buffering by the order it runs the units in:
//  - the SXU runs first, so it sees the controller's and the VPU's state from the start of the cycle;
//  - the VPU's multi-cycle units and the MXU controller run afterwards, and only if they were busy at
//    the start of the cycle: the SXU can only dispatch to a unit that was idle, so a unit never both
//    accepts new work and advances in one cycle;
//  - within the SXU, the background write-backs never fire in the same cycle as a main-FSM rule that
//    reads the vreg they write (Sxu::tick explains why), so vreg writes can be applied directly.
class TensorCore : public Datapath {
 public:
  explicit TensorCore(const TensorCoreConfig& cfg = {}) : Datapath(cfg) {
    sxu.fetch_overlap = cfg.fetch_overlap;
  }

  Sxu sxu;

  // kTraced: report to `trace` (non-null). A separate instantiation keeps the untraced cycle free of it.
  template <bool kTraced>
  void tick() {
    bool vpu_busy = !vpu.is_done();
    bool mxu_busy = ctrl.active();
    psum_port_taken = ctrl.draining();
    sxu.tick<kTraced>(*this);
    if (vpu_busy) vpu.tick();
    if (mxu_busy) {
      CState phase = ctrl.state;
      ctrl.tick(array, wsram, asram, psum);
      if constexpr (kTraced) trace_mxu(phase);
    }
    ++cycle;
  }

  // How many of the next cycles are certain to repeat this one but for counters: the SXU waits for a
  // multi-cycle VPU op (FpReducer, TranscUnit) and nothing else works. The op's last cycle, which delivers
  // its result, is not one of them. An untraced run takes them at once (skip_vpu_wait): the same state and
  // the same counts as ticking them one by one.
  uint64_t vpu_wait_ahead() const {
    const bool idle_else = sxu.vpu_wait && !sxu.xlu_busy && !ctrl.active();
    return idle_else && vpu.busy_left > 1 ? uint64_t(vpu.busy_left - 1) : 0;
  }
  // An untraced run takes an instruction whole when nothing but the SXU would work in its cycles: the SXU is
  // at FETCH, owes no write-back, the VPU and the MXU are idle and every record has arrived (Sxu::run_alone
  // says which instructions qualify). The state and counts are what ticking its cycles one by one gives.
  // `limit`: a run reaches no cycle past it without the timeout and poll check.
  bool run_instruction_alone(uint64_t limit) {
    const bool quiet = sxu.phase == Sxu::Phase::kFetch && !sxu.xlu_busy && !sxu.vpu_wb_pending &&
                       vpu.is_done() && !ctrl.active() && !sxu.fetch_overlap && cycle >= data_arrival;
    if (!quiet || cycle + Sxu::kMaxAloneCycles > limit) return false;
    psum_port_taken = false;  // an idle MXU does not drain
    return sxu.run_alone(*this);
  }
  void skip_vpu_wait(uint64_t n) {
    sxu.cycles += n;
    sxu.stall_cycles += n;
    vpu.busy_left -= int(n);
    vpu.busy_cycles += n;
    cycle += n;
  }

  // A reference hang or other fatal condition, reported with pc and instruction.
  [[noreturn]] void fail(const std::string& what) const { sxu.fail(*this, what); }

 private:
  void trace_mxu(CState phase);  // one busy MXU cycle, and the dispatch's end when it reached Done
};

}  // namespace tinytpu
