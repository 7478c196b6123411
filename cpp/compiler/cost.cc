#include "compiler/cost.h"

#include <algorithm>

#include "isa/sxu_ops.h"
#include "sim/controller.h"
#include "sim/timing.h"

namespace tinytpu::compiler {

namespace {

// An MXU dispatch's cycles from its EXEC to the first cycle the Controller shows Done (controller.h's
// intervals), or 0 for an instruction that starts no asynchronous dispatch.
int mxu_interval(const Instr& in) {
  const std::optional<MxuStart> start = kSxuOps[in.op].mxu_start;
  if (!start || synchronous(*start)) return 0;
  return output_stationary(*start) ? os_dispatch_interval(in.mxuTLen) : ws_dispatch_interval(in.mxuTLen);
}

}  // namespace

int64_t estimated_cycles(int64_t data_records, const std::vector<Instr>& program) {
  // The SXU runs on while the MXU works, and stalls in EXEC on an instruction that needs it Done.
  int64_t t = 0, mxu_done = 0;  // t: the cycle the next FETCH takes
  for (const Instr& in : program) {
    if (kSxuOps[in.op].waits_for_mxu) {
      const int interval = mxu_interval(in);
      const int64_t exec = std::max(t + 1, mxu_done);
      t = exec - 1 + instr_cycles(in);
      mxu_done = interval > 0 ? exec + interval : std::max(mxu_done, t);
    } else {
      t += instr_cycles(in);
    }
  }
  return kRecordCycles * (data_records + int64_t(program.size())) + t;
}

}  // namespace tinytpu::compiler
