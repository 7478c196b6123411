#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/tile.h"
#include "compiler/launch.h"
#include "compiler/mxu_dot.h"
#include "compiler/schedule.h"
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// Instruction selection, register and VMEM allocation, and splitting into launches.
// Constant tiles the code needs are returned in `constants` (uniform values, and each launch's palette). An
// MXU operand with the values of one already loaded in the launch (`choices`) reuses it. What a core takes to
// run launches one after the other by the compiler's estimate (compiler/cost.h) and config_fields.def's
// switches: their fills and MXU fills the data records, their programs and drains (the output list) the
// others. With resident_program the others are not sent when the distinct programs fit program memory
// together (Residency); with dma_overlap the SXU starts once the others are in and the data records stream in
// under its run; with prefetch_launches a launch's loading is hidden under the run of the launch before it,
// unless it reads a value that one spilled.
enum class Residency {
  kAllOrNone,  // programs that do not fit together are all sent by every launch (how the emissions are
               // chosen)
  kRing,       // then only by the launches whose program the runtime's ring dropped (how launch sizes are)
};
int64_t estimated_cycles(const std::vector<Launch>& launches, const TensorCoreConfig& cfg,
                         Residency residency = Residency::kAllOrNone);

// The emissions of a batch lower() weighs beyond the two orders of the program as it is (emitter.h): both
// orders and the interleaved one with groups of kGroups stores, of the program as it is and with broadcast
// operands (lane_pack.h); and on a core with resident programs whose batch would send them again and again,
// the way taken with launches of fewer VMEM tiles (halving the depth, down to the reference's 32), weighed
// by Residency::kRing. A kernel's batches are mostly alike: the first that has a choice tries every one and
// the two orders, and the others only the way it took (the two orders, as before, when it took one of
// them or its way does not fit the batch).
struct Emissions {
  static constexpr int kGroups[] = {2, 4, 8};
  struct Way {
    EmitOrder order = EmitOrder::kByStore;
    int group = 0;  // kInterleaved's stores a group
    bool broadcast = false;
    int slots = 0;  // VMEM tiles a launch uses at most, below the core's depth (0: its depth)
  };
  bool decided = false;
  std::optional<Way> other;  // the way the first batch took, when not one of the two orders as they were
  // The estimated cycles of the batch that chose (the last tried, until one has a choice): in the better of
  // the two orders as they were, and in the way it took.
  std::pair<int64_t, int64_t> estimates;
};
std::string describe(const Emissions::Way& way);  // the decision log's words

// `prog` becomes the program the launches were emitted from (with broadcast operands, say). `emissions`: the
// kernel's choice so far, kept across its batches (decided without a way: the two orders alone); without it,
// every emission is tried.
std::vector<Launch> lower(TileProgram& prog, const TensorCoreConfig& cfg, std::vector<Tile>& constants,
                          bool fast_math = false, const Choices& choices = {},
                          Emissions* emissions = nullptr);

}  // namespace tinytpu::compiler
