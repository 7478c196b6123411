#include "compiler/cost.h"

#include <algorithm>

#include "isa/sxu_ops.h"
#include "isa/vpu_ops.h"
#include "sim/controller.h"
#include "sim/timing.h"

namespace tinytpu::compiler {

namespace {

// An MXU dispatch's cycles from its EXEC to the first cycle the Controller shows Done (controller.h's
// intervals), or 0 for an instruction that starts no asynchronous dispatch.
int mxu_interval(const Instr& in, const TensorCoreConfig& cfg) {
  const std::optional<MxuStart> start = kSxuOps[in.op].mxu_start;
  if (!start || synchronous(*start)) return 0;
  return output_stationary(*start) ? os_done_cycles(in.mxuTLen, float_dispatch(*start), cfg)
                                   : ws_dispatch_interval(in.mxuTLen);
}

// The cycle an instruction's first EXEC cycle takes at the earliest (`ready`, the cycle after its FETCH), as
// its row's guards hold it: the MXU Done (`mxu_done`), a pending VPU write-back collected in `collect`.
int64_t exec_cycle(const SxuOpInfo& row, int64_t ready, int64_t mxu_done, int64_t collect) {
  int64_t exec = row.waits_for_mxu ? std::max(ready, mxu_done) : ready;
  if (row.vpu_wb_wait == VpuWbWait::kGuarded) exec = std::max(exec, collect + 1);
  if (row.vpu_wb_wait == VpuWbWait::kCollect && exec == collect) ++exec;
  return exec;
}

}  // namespace

int64_t estimated_sxu_cycles(const std::vector<Instr>& program, const TensorCoreConfig& cfg) {
  // The SXU runs on while the MXU and a background VPU op work, and stalls in EXEC on an instruction that
  // needs them done.
  const int fetch = cfg.fetch_overlap ? 0 : 1;  // the cycles a FETCH adds after the instruction before
  int64_t t = 0;                       // the cycle of the next instruction's FETCH, or the one it overlaps
  int64_t mxu_done = 0, collect = -1;  // collect: the last VPU_BG's write-back cycle
  int64_t mxu_takes = 0;               // the first cycle a pipelined MXU takes an output-stationary dispatch
  int64_t bank_ready = 0;              // the first cycle its output bank may be read
  for (const Instr& in : program) {
    const SxuOpInfo& row = kSxuOps[in.op];
    if (SxuOpcode(in.op) == SxuOpcode::kHalt) return t + 1;  // HALT retires in its FETCH cycle
    const bool behind = cfg.mxu_pipelined && row.mxu_start && output_stationary(*row.mxu_start);
    int64_t exec = exec_cycle(row, t + 1, behind ? mxu_takes : mxu_done, collect);
    if (SxuOpcode(in.op) == SxuOpcode::kLoadMxuBank) exec = std::max(exec, bank_ready);
    int64_t end = exec + instr_cycles(in) - 2;  // its last EXEC cycle
    if (row.vpu_wb_wait == VpuWbWait::kGuardedStep2) end = std::max(end, collect + 1);
    if (SxuOpcode(in.op) == SxuOpcode::kDispatchVpuBg) collect = exec + vpu_done_latency(kVpuOps[in.vpuOp]);
    if (row.waits_for_mxu) {
      const int interval = mxu_interval(in, cfg);
      if (behind && replacing(*row.mxu_start)) bank_ready = mxu_done;  // the dispatches before it are Done
      mxu_done = interval > 0 ? std::max(mxu_done, exec + interval) : std::max(mxu_done, end + 1);
      mxu_takes = behind ? exec + os_issue_cycles(in.mxuTLen) : mxu_done;
    }
    t = end + fetch;
  }
  return t;
}

int64_t estimated_cycles(int64_t data_records, const std::vector<Instr>& program,
                         const TensorCoreConfig& cfg) {
  return cfg.record_cycles * (data_records + int64_t(program.size())) + estimated_sxu_cycles(program, cfg);
}

}  // namespace tinytpu::compiler
