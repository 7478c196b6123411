#pragma once
#include "base/tile.h"
#include "isa/vpu_ops.h"

namespace tinytpu {

// VPU#(4,4) timing (hardware.md §2.4). A combinational op writes the result register in the dispatch
// cycle. FpReducer and TranscUnit ops keep the VPU busy and write the result register in their collect
// cycle; `isDone` turns true the cycle after. The op table supplies the values.
struct Vpu {
  Tile result;        // resultReg: persists until the next op
  Tile pending{};     // value the busy unit will deliver at collect
  int busy_left = 0;  // cycles until collect; 0 when idle
  uint64_t busy_cycles = 0;

  Vpu();
  bool is_done() const { return busy_left == 0; }
  void execute(const VpuOpInfo& op, const Tile& a, const Tile& b);
  // Runs only in cycles that started with the VPU busy.
  void tick() {
    ++busy_cycles;
    if (--busy_left == 0) result = pending;
  }
};

}  // namespace tinytpu
