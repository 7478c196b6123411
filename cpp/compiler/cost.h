#pragma once
#include <cstdint>
#include <vector>

#include "isa/instr.h"

namespace tinytpu::compiler {

// The compiler's one cycle estimate: what the reference testbench takes to run code, as far as the choices of
// code generation change it (hardware.md §2.7, §4.4). Every pass that weighs alternatives emits the
// instructions each would run and counts them here: kRecordCycles for every data record and every
// instruction's record, each instruction's instr_cycles() (its sxu_ops.def row, with the VPU's and the MXU's
// latencies), and the SXU's stalls on the MXU: an instruction whose row waits_for_mxu waits in EXEC for the
// asynchronous dispatch before it to be Done (controller.h's intervals). The testbench's fixed 4 cycles a
// launch are left out.
int64_t estimated_cycles(int64_t data_records, const std::vector<Instr>& program);

}  // namespace tinytpu::compiler
