#pragma once
#include <array>
#include <cstdint>

#include "isa/instr.h"
#include "isa/sxu_ops.h"
#include "sim/memories.h"
#include "sim/systolic_array.h"

namespace tinytpu {

// The MXU sequencer (Controller.bsv, hardware.md §2.3).
enum class CState : uint8_t {
  kIdle,
  kLoadWeights,
  kLoadWeightsResp,
  kLoadWeightsRespOS,
  kLoadActsOS,
  kStream,
  kStreamOS,
  kDrain,
  kDone
};
enum class Dataflow : uint8_t { kWS, kWSAccumulate, kOS };

// Unstalled MXU timing, from one dispatch's EXEC to the EXEC of a dispatch issued right behind it (the
// second fires in the first cycle the Controller shows Done). A dispatch followed by WAIT_MXU takes 2
// more (hardware.md §2.3 "Derived costs"); test_mxu checks both against the FSM. Cost models read these.
constexpr int ws_dispatch_interval(int t_len) { return t_len + kRows + 4; }
constexpr int os_issue_cycles(int k) {
  return k > 1 ? k : 1;
}  // K': the activation rows read (K 0 reads one)
constexpr int os_dispatch_interval(int k) {
  return os_issue_cycles(k) + k + kRows + kRows + 3;
}  // K' + k + 2R + 3
// A pipelined MXU (config mxu_pipelined, docs/model.md "A pipelined MXU"): an output-stationary dispatch
// reads its operands in K' cycles (the weight tile beside the first activation row), and the next one's EXEC
// may come in the last of them; it is Done rows + cols + 1 cycles after its last read (and a float dispatch
// mxu_fp_latency more). So EXEC to the EXEC of a dispatch right behind it: max(K', the SXU's own interval);
// a lone dispatch to its Done: K' + rows + cols + 1.
constexpr int os_pipelined_latency(int k) { return os_issue_cycles(k) + kRows + kRows + 1; }
// On a core's MXU: an output-stationary dispatch's cycles from its EXEC to its Done (a float one's with the
// float PEs' latency), and to the earliest EXEC of another right behind it (on the reference, its Done).
constexpr int os_done_cycles(int k, bool fp, const TensorCoreConfig& cfg) {
  return (cfg.mxu_pipelined ? os_pipelined_latency(k) : os_dispatch_interval(k)) +
         (fp ? cfg.mxu_fp_latency : 0);
}
constexpr int os_next_dispatch_cycles(int k, bool fp, const TensorCoreConfig& cfg) {
  return cfg.mxu_pipelined ? os_issue_cycles(k) : os_done_cycles(k, fp, cfg);
}

struct EpilogueConfig {
  bool bias = false, relu = false, reduce = false, sumsq = false;
};

struct MxuDispatch {
  MxuStart kind = MxuStart::kPsum;
  uint8_t w_base = 0, a_base = 0, len = 0;  // already wrapped to the depth
  uint8_t psum_addr = 0, psum_row = 0;
  PsumMode psum_mode = PsumMode::kOff;
  EpilogueConfig epi;
  uint8_t vpu_op = 0;
  bool wb_vmem = false;
  uint8_t requant_base = 0;
  // A float dispatch's (47, 48): its run length, the core's float type (mxu_dtype: 1 bfloat16, 2 float32;
  // 0 an int8 dispatch) and the cycles its float PEs add (mxu_fp_latency).
  uint8_t group = 0, fp = 0, fp_latency = 0;
};

// A pipelined MXU's drains to come, in order: the tick each happens in (at most one per tick).
struct DrainQueue {
  static constexpr int kCapacity = 128;  // > the most in flight: 2 * rows + mxu_fp_latency + 2 <= 98
  std::array<uint32_t, kCapacity> at{};
  uint8_t head = 0, size = 0;
  bool empty() const { return size == 0; }
  uint32_t front() const { return at[head]; }
  uint32_t back() const { return at[(head + size - 1) % kCapacity]; }
  void push(uint32_t tick) { at[(head + size++) % kCapacity] = tick; }
  void pop() {
    head = uint8_t((head + 1) % kCapacity);
    --size;
  }
};

struct Controller {
  CState state = CState::kIdle;
  Dataflow df = Dataflow::kWS;
  uint8_t w_base = 0, a_base = 0, t_len = 0, act_idx = 0;
  uint32_t stream_cycle = 0;
  // Output-stationary staging; a float dispatch's operands are the 32-bit words, a seed's the words of its
  // vreg (os_weight_words, set at its start).
  I8Tile os_weight;
  std::array<I8Row, kRows> os_act;
  Tile os_weight_words;
  std::array<Row, kRows> os_act_words;
  uint32_t os_feed = 0;
  uint8_t os_act_load_idx = 0, os_klen = 0;
  uint8_t group = 0, fp = 0, fp_latency = 0;  // the running dispatch's (MxuDispatch)
  // A pipelined MXU (config mxu_pipelined): the dispatch reading its operands (`issuing`, `reads` of them
  // done), the one the SXU started behind it in this cycle (`queued`, with its operand vreg as its EXEC read
  // it: a seed's words), the drains to come and the ticks so far.
  bool pipelined = false, issuing = false, queued_valid = false;
  MxuDispatch queued;
  Tile queued_operand;
  uint8_t reads = 0;
  uint32_t clock = 0;
  DrainQueue drains;
  // Its output bank: the accumulators a replacing start found (clearing output-stationary dispatches and
  // seeds), complete once the `bank_pending` drains before that start are done.
  Tile bank;
  uint8_t bank_pending = 0;
  bool seed = false;  // the running dispatch is DISPATCH_MXU_SEED
  // Drain latches.
  Row output_buf;
  Tile matrix_buf;
  // PSUM deposit of the running dispatch.
  uint8_t psum_addr = 0, psum_row = 0;
  PsumMode psum_mode = PsumMode::kOff;
  // Requant (45).
  int32_t scale_mul = 0;
  uint8_t scale_shift = 0;
  bool requant_active = false;
  uint8_t requant_base = 0, requant_offset = 0;
  // Legacy epilogue (42) and generic epilogue (46).
  Row bias;
  EpilogueConfig epi;
  bool epilogue_active = false;
  Tile epilogue_buf;
  std::array<int64_t, kRows> stat_buf;
  Tile src2;
  uint8_t vpu_op = 0;
  bool wb_vmem = false, generic_active = false;

  uint64_t busy_cycles = 0;

  Controller();
  bool can_start() const { return state == CState::kIdle || state == CState::kDone; }
  // Whether a dispatch of `kind` may start this cycle: on a pipelined MXU an output-stationary one may start
  // while the one before it makes its last operand read (or streams); every other waits for the MXU to be
  // Idle or Done.
  bool can_start(MxuStart kind) const {
    if (!pipelined || !output_stationary(kind) || can_start()) return can_start();
    return df == Dataflow::kOS && !queued_valid && (!issuing || reads + 1 >= os_issue_cycles(os_klen));
  }
  bool is_done() const { return state == CState::kDone; }
  bool active() const { return !can_start(); }
  // The drain rule calls the PSUM bank's write port on some of its paths; bsc treats that as a static
  // conflict with every SXU PSUM write and makes the drain more urgent (G0010), so the SXU's PSUM
  // writes lose every drain cycle, whatever the drain does.
  // A pipelined MXU's output-stationary drains latch the results and touch no PSUM: they take no port.
  bool draining() const { return state == CState::kDrain; }
  // A dispatch running that writes a PSUM row when it drains.
  bool depositing() const {
    return active() && (psum_mode == PsumMode::kWrite || psum_mode == PsumMode::kAccumulate);
  }
  // Caller checks can_start(). `operand`: the vreg the instruction's vregSrc names, whose row 0 is an
  // epilogue's bias or a generic epilogue's src2, and which is a seed's words.
  void start(const MxuDispatch& d, SystolicArray& array, const Tile& operand);
  // One cycle of the running FSM; runs only in cycles that started with the controller active.
  void tick(SystolicArray& array, WeightSram& wsram, ActivationSram& asram, PsumBank& psum);
  // The dispatch just started, from its start to Done at once, without its cycles: the array's accumulators
  // as its stream leaves them (SystolicArray::stream_ws, stream_os), then the drain. Every dispatch runs to
  // Done, which leaves the pass registers an earlier one could feed in zero, so the stream's result is its
  // own products. `psum_bucket`: the bucket its psum_addr names.
  void run_whole(SystolicArray& array, const WeightSram& wsram, ActivationSram& asram, Tile& psum_bucket);
  // The results the SXU reads: what LOAD_MXU_RESULT and LOAD_EPILOGUE_STAT write to a vreg, the per-PE
  // matrix LOAD_MXU_MATRIX_ROW reads, an epilogue's result.
  Tile output_tile() const { return row_tile(output_buf); }
  Tile stat_tile() const;
  const Tile& matrix_tile() const { return matrix_buf; }
  const Tile& bank_tile() const { return bank; }
  bool bank_ready() const { return bank_pending == 0; }
  const Tile& epilogue_tile() const { return epilogue_buf; }

 private:
  void begin(const MxuDispatch& d, SystolicArray& array, const Tile& operand);
  void tick_pipelined(SystolicArray& array, const WeightSram& wsram, const ActivationSram& asram);
  void read_os_operands(const WeightSram& wsram, const ActivationSram& asram, int k);
  void stream_products(SystolicArray& array) const;
  void stream_os_cycle(SystolicArray& array);
  void drain(SystolicArray& array, ActivationSram& asram, Tile& psum_bucket);
};

}  // namespace tinytpu
