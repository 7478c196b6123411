#pragma once
#include <cstdint>
#include <vector>

#include "base/config.h"
#include "isa/instr.h"

namespace tinytpu::compiler {

// The compiler's one cycle estimate: what a core takes to run code, as far as the choices of code generation
// change it (hardware.md §2.7, §4.4). Every pass that weighs alternatives emits the instructions each would
// run and counts them here.
//
// The SXU's run of a straight-line program (no branch is taken), first FETCH through HALT: each
// instruction's instr_cycles() (its sxu_ops.def row, with the VPU's and the MXU's latencies), one cycle less
// each but the first with cfg.fetch_overlap (the next FETCH in the last EXEC cycle), and the SXU's stalls:
// an instruction whose row waits_for_mxu waits in EXEC for the asynchronous dispatch before it to be Done
// (controller.h's intervals); one whose row's vpu_wb_wait is guarded waits for a DISPATCH_VPU_BG's result to
// be collected, vpu_done_latency cycles after the dispatch's EXEC.
int64_t estimated_sxu_cycles(const std::vector<Instr>& program, const TensorCoreConfig& cfg = {});
// A launch's on the testbench's timing: cfg.record_cycles for every data record and every instruction's
// record, and the SXU's run. The testbench's fixed 4 cycles and its output lines are left out.
int64_t estimated_cycles(int64_t data_records, const std::vector<Instr>& program,
                         const TensorCoreConfig& cfg = {});

}  // namespace tinytpu::compiler
