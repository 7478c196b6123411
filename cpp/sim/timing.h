#pragma once
#include <cstdint>

#include "base/config.h"
#include "isa/instr.h"
#include "isa/sxu_ops.h"

namespace tinytpu {

// The reference testbench's cycles per bundle record (the 2R of 2R + P + M + 4, hardware.md §4.4): what the
// cost models charge every data record and every instruction's record.
inline constexpr int kRecordCycles = TensorCoreConfig{}.record_cycles;

// An SXU instruction's unstalled cycles from its FETCH through its retirement, started in a quiet core (the
// VPU and the MXU idle, every record in) on the reference's timing, from its sxu_ops.def row: the one
// statement of SXU timing that the simulator keeps to (Sxu::hold_to_row) and every cost model reads.
// kWait rows give their cost when the awaited unit is done already.
int instr_cycles(const Instr& i, const TensorCoreConfig& cfg = {});
inline int instr_cycles(SxuOpcode op, const TensorCoreConfig& cfg = {}) {  // an instruction with zero fields
  return instr_cycles(Instr{uint8_t(op)}, cfg);
}

}  // namespace tinytpu
