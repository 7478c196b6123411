#pragma once
#include <array>
#include <bitset>
#include <cstdint>

#include "isa/instr.h"
#include "isa/sxu_ops.h"
#include "sim/config.h"

namespace tinytpu {

class TensorCore;

// ScalarUnit microprogram sequencer (ScalarUnit.bsv, hardware.md §2.7): single issue, one FETCH cycle
// plus the instruction's EXEC cycles, with the XLU and (for VPU_BG) VPU write-backs retiring beside it.
struct Sxu {
  enum class Phase : uint8_t { kIdle, kFetch, kExec, kVpuCollect, kHalted };
  Phase phase = Phase::kIdle;
  uint8_t pc = 0;  // 8 bits: wraps at the 256-entry program memory
  Instr cur;
  uint8_t step = 0;  // EXEC cycle within a multi-cycle instruction
  bool pred = false;
  bool xlu_busy = false, vpu_wb_pending = false;
  bool collecting = false;  // the VPU write-back retires in the current cycle
  bool vpu_wait = false;    // the cycle stalled only because a multi-cycle VPU op is still running
  uint8_t xlu_dst = 0, vpu_wb_dst = 0;
  std::array<uint8_t, TensorCoreConfig::kMaxLoopDepth> loop_count{}, loop_ret{};
  uint8_t loop_top = 0;
  uint8_t psum_clear_idx = 0;
  uint8_t fetch_pc = 0;  // the running instruction's pc and FETCH cycle, for its trace slice
  uint64_t fetch_cycle = 0;

  std::array<Instr, TensorCoreConfig::kMaxProgDepth> prog{};
  std::bitset<TensorCoreConfig::kMaxProgDepth> loaded;  // slots the bundle wrote; fetching others is an error

  bool fetch_overlap = false;  // TensorCoreConfig::fetch_overlap, kept here for the hot path
  uint64_t cycles = 0;         // P: from the first FETCH through the FETCH of HALT
  uint64_t stall_cycles = 0;

  void start() {
    pc = 0;
    phase = Phase::kFetch;
  }
  bool halted() const { return phase == Phase::kHalted; }
  template <bool kTraced>
  void tick(TensorCore& tc);
  // The instruction at pc from its FETCH to its retirement at once, for a core in which nothing else works
  // (TensorCore::run_instruction_alone checks that): when it is one whose cycles then involve no other unit
  // but a combinational VPU op, ending within kMaxAloneCycles. Returns whether it ran.
  static constexpr int kMaxAloneCycles = 4;
  bool run_alone(TensorCore& tc);

 private:
  void fetch(TensorCore& tc);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_fetch(TensorCore& tc);
  void overlapped_fetch();
  void latch() {  // the instruction at pc becomes the running one; HALT retires in its FETCH cycle
    cur = prog[pc];
    step = 0;
    phase = SxuOpcode(cur.op) == SxuOpcode::kHalt ? Phase::kHalted : Phase::kExec;
  }
  void trace_cycle(TensorCore& tc, Exec outcome);
  void collect_xlu(TensorCore& tc);  // the XLU's result into its destination vreg
};

}  // namespace tinytpu
