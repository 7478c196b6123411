#pragma once
#include <functional>
#include <set>

#include "compiler/mxu_dot.h"
#include "compiler/plan.h"
#include "compiler/tracer.h"

namespace tinytpu::compiler {

// The compiler. It splits exact divisions (split_divisions), then runs its passes over the kernel a batch
// of chunks at a time and returns the plan the runtime executes:
//   trace     Tracer::trace_chunk: the iteration space unrolled into tile nodes, a tile's lanes per chunk
//   shape     batch_shape: a batch equal to an earlier one up to a shift of each buffer's element
//             indices runs that batch's launches with its indices shifted (replay.h); the rest is skipped.
//             Chunks that repeat earlier ones a whole period on (ChunkPeriod, proved from the IR) are not
//             even traced: their batches replay the earlier ones' with the period's shift
//   fuse_mxu  fuse_mxu_dots: int8 dot-product chains onto the MXU, except those `choices` veto
//   pack      pack_lanes: isomorphic work packed into idle lanes
//   lower     lower: instructions, registers, VMEM slots, launches within the hardware limits
//   plan      PlanBuilder: each launch's bundle validated once, and where its data comes from and goes
// `cfg`: the TensorCore to compile for (its limits cut launches; the plan runs on it). `sizes`: elements
// per buffer slot. `traced(chunks done, chunks)` is called after every chunk. `limits`: how much of a
// chunk is traced before its batch compiles (Tracer).
Plan compile(const Kernel& k, const TensorCoreConfig& cfg, const std::vector<int64_t>& vals,
             const std::vector<int64_t>& sizes, const Choices& choices = {},
             const std::function<void(int64_t, int64_t)>& traced = {}, const TraceLimits& limits = {});

}  // namespace tinytpu::compiler
