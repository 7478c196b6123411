#include "sim/vpu.h"

#include "sim/memories.h"

namespace tinytpu {

Vpu::Vpu() { fill_uninit(result); }

void Vpu::execute(const VpuOpInfo& op, const Tile& a, const Tile& b) {
  ++busy_cycles;
  if (op.kind == VpuKind::kComb) {
    Tile out;
    op.fn(a, b, result, out);
    result = out;
    return;
  }
  op.fn(a, b, result, pending);
  // Collect happens at T + latency - 1, so the unit stays busy for latency - 1 further cycles.
  busy_left = vpu_done_latency(op) - 1;
}

}  // namespace tinytpu
