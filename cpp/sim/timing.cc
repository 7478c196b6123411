#include "sim/timing.h"

#include "isa/vpu_ops.h"
#include "sim/controller.h"

namespace tinytpu {

int instr_cycles(const Instr& i, const TensorCoreConfig& cfg) {
  const SxuOpInfo& row = kSxuOps[i.op % kNumSxuOps];
  switch (row.timing) {
    case SxuTiming::kFixed:
    case SxuTiming::kWait:
      return row.cycles;
    case SxuTiming::kVpu: {  // DISPATCH_VPU's own op; SELECT's second op (its first, COPY, has its own cycle)
      const VpuOpcode op = SxuOpcode(i.op) == SxuOpcode::kDispatchSelect ? VpuOpcode::kSelect
                                                                         : VpuOpcode(i.vpuOp % kNumVpuOps);
      return row.cycles + vpu_done_latency(kVpuOps[size_t(op)]);
    }
    case SxuTiming::kMxu:
      return row.cycles + ws_dispatch_interval(i.mxuTLen % cfg.depth);
    case SxuTiming::kPsumBuckets:
      return row.cycles + cfg.psum_buckets;
  }
  return row.cycles;  // unreachable: every SxuTiming is handled above
}

}  // namespace tinytpu
