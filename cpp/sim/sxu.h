#pragma once
#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "isa/instr.h"
#include "isa/sxu_ops.h"
#include "sim/datapath.h"

namespace tinytpu {

// What one EXEC cycle of an SXU instruction did. BSV rules either fire or are blocked by a guard;
// a blocked rule leaves the SXU in place (a stall) and lets a conflicting background rule fire. A stall
// says what it waits for: the profiler reports the causes.
enum class Exec : uint8_t {
  kFired,         // the rule fired; the instruction needs more EXEC cycles (step advances)
  kNext,          // finished: pc + 1, back to FETCH
  kJump,          // finished: the function set pc itself, back to FETCH
  kAwaitCollect,  // dispatched a synchronous VPU op: wait in VPU_COLLECT for the write-back
  // Stalls: nothing happened this cycle (or WAIT_MXU polled); step stays.
  kStallVpuWriteback,  // a VPU result is still to be written back to a vreg
  kStallVpuBusy,       // a multi-cycle VPU op is running
  kStallVpuResult,     // a synchronous VPU op waits for its result (VPU_COLLECT)
  kStallXluResult,     // the previous XLU result is collected this cycle
  kStallMxuBusy,       // the MXU is running a dispatch
  kStallMxuResult,     // waits for the MXU to reach Done
  kStallPsumPort,      // the MXU drain owns the PSUM write port
  kStallLoad,          // a memory entry's record has not arrived (the DMA loader variant, config.h)
};
constexpr Exec kFirstStall = Exec::kStallVpuWriteback;
constexpr int kNumStalls = 8;
inline bool is_stall(Exec e) { return e >= kFirstStall; }
extern const std::array<const char*, kNumStalls> kStallNames;  // indexed by e - kFirstStall

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
  // A kFixed instruction whose exec function finished before its row's cycles (sxu_ops.def) holds that
  // many more EXEC cycles, then ends as the function said (kNext or kJump): the row is the timing.
  uint8_t hold = 0;
  Exec held = Exec::kNext;

  void start() {
    pc = 0;
    phase = Phase::kFetch;
  }
  bool halted() const { return phase == Phase::kHalted; }
  template <bool kTraced>
  void tick(Datapath& tc);
  // The instruction at pc from its FETCH to its retirement at once, for a core in which nothing else works
  // (TensorCore::run_instruction_alone checks that): when it is one whose cycles then involve no other unit
  // but a combinational VPU op, ending within kMaxAloneCycles. Returns whether it ran.
  static constexpr int kMaxAloneCycles = [] {  // the longest row that may run alone (a VPU op's latency 1)
    int most = 0;
    for (const SxuOpInfo& row : kSxuOps)
      if (row.alone != SxuAlone::kNever)
        most = std::max(most, row.cycles + (row.timing == SxuTiming::kVpu ? 1 : 0));
    return most;
  }();
  bool run_alone(Datapath& tc);
  // The instruction at pc from its FETCH to its retirement at once, as run_alone takes it: in a quiet core
  // that may take it, or in a batch (sim/batch.h), where every instruction of a program that computes in
  // order may.
  template <class DP>
  void run_whole(DP& tc);
  // Whether an instruction started in a quiet core may be taken whole (the row's `alone` column; a VPU op's
  // kind).
  static bool runs_alone(const Instr& i);

  // A reference hang or other fatal condition, reported with pc, instruction and cycle.
  template <class DP>
  [[noreturn]] void fail(const DP& tc, const std::string& what) const {
    fail_at(tc.cycle, what);
  }
  [[noreturn]] void fail_at(uint64_t cycle, const std::string& what) const;

 private:
  void fetch(Datapath& tc);
  [[noreturn, gnu::cold, gnu::noinline]] void bad_fetch(Datapath& tc);
  void overlapped_fetch();
  void latch() {  // the instruction at pc becomes the running one; HALT retires in its FETCH cycle
    cur = prog[pc];
    step = 0;
    phase = SxuOpcode(cur.op) == SxuOpcode::kHalt ? Phase::kHalted : Phase::kExec;
  }
  // The main FSM's cycle in its phase (VPU_COLLECT, FETCH, EXEC or held in it): what the cycle did.
  // `fetch_now`: set when a traced cycle leaves an overlapped fetch to its end.
  template <bool kTraced>
  Exec advance(Datapath& tc, bool& fetch_now);
  void trace_cycle(Datapath& tc, Exec outcome);
  template <class DP>
  void collect_xlu(DP& tc);  // the XLU's result into its destination vreg
  // When a kFixed instruction's exec function ended (outcome kNext or kJump) before its row's cycles: holds
  // it for the rest (hold, held) and makes the outcome kFired.
  bool hold_to_row(Exec& outcome);
};

}  // namespace tinytpu
