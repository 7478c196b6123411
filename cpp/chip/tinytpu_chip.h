#pragma once
#include <cstdint>
#include <optional>

#include "base/tile.h"
#include "chip/chip_noc.h"
#include "chip/sparse_core.h"
#include "isa/instr.h"
#include "sim/tensorcore.h"

namespace tinytpu {

// mkTinyTPUChip (TinyTPUChip.bsv, hardware.md §6): TensorCore#(4,4,16) TC0, SparseCore#(32,4,1), ChipNoC#(2)
// (instantiated, unused) and the one-shot path that sends a lane of TC0's MXU result to the SparseCore as
// a bag of one index. The host methods take 4-bit addresses and a 4-bit pc, as the reference's do.
// Clocked as its units (sparse_core.h): methods in a cycle, then tick().
class TinyTpuChip {
 public:
  static constexpr int kTableDepth = 32, kEmbWidth = 4, kBagSize = 1, kNocNodes = 2;
  static TensorCoreConfig tc0_config();  // TensorCore#(4,4,16): the reference core at depth 16

  TinyTpuChip();

  void load_tc0_weights(int addr, const I8Tile& data);
  void load_tc0_activations(int addr, const I8Row& data);
  void load_tc0_program(int pc, const Instr& instr);
  bool can_start_tc0() const { return tc0_.sxu.phase == Sxu::Phase::kIdle || tc0_.sxu.halted(); }
  void start_tc0(int len);  // len: the reference's start(len) ignores it (ScalarUnit.bsv)
  bool tc0_done() const { return tc0_.sxu.halted(); }
  Row tc0_result() const;  // getMxuResult: guarded by the Controller's Done
  // Its guard: not forwarded before, TC0's MXU Done, the SparseCore idle.
  bool can_forward() const { return !sc_submitted_ && tc0_.ctrl.is_done() && sc_.can_submit(); }
  // getMxuResult[lane] truncated to 5 bits, submitted as a bag of one.
  void forward_tc0_result_to_sc(int lane);
  void load_sc_embedding(int idx, const Row& emb);
  bool sc_done() const { return sc_.is_done(); }
  const SparseCore::Embedding& sc_result() const { return sc_.result(); }

  void tick();
  uint64_t cycle() const { return cycle_; }
  const TensorCore& tc0() const { return tc0_; }
  const SparseCore& sc() const { return sc_; }

 private:
  static int host_field(int v, const char* what);  // a 4-bit host address or pc

  TensorCore tc0_;
  SparseCore sc_;
  ChipNoc noc_;  // as in the reference: nothing drives it
  bool sc_submitted_ = false;
  uint64_t cycle_ = 0;
  // this cycle's TC0 method calls, applied after its rules
  std::optional<std::pair<int, I8Tile>> weights_;
  std::optional<std::pair<int, I8Row>> activations_;
  std::optional<std::pair<int, Instr>> instr_;
  bool start_ = false, forwarded_ = false;
};

}  // namespace tinytpu
