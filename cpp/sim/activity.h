#pragma once
#include <cstdint>
#include <optional>

#include "base/config.h"
#include "isa/bundle.h"
#include "isa/vpu_ops.h"

namespace tinytpu {

// What a launch does, counted by action (counters.def's ACTIVITY rows): the inputs of the energy model
// (tinytpu.energy prices each).
struct Activity {
#define ACTIVITY(name, type, energy, doc) type name = 0;
#include "sim/counters.def"

  uint64_t& lane_ops(VpuEnergy datapath);  // the VPU's lane ops on one datapath (vpu_int_ops, ...)
  Activity& operator+=(const Activity& o);
};

// The activity of a bundle whose program runs straight through (no loop, skip or halt before its end: what
// the compiler emits), each instruction once: none for another program.
std::optional<Activity> straight_line_activity(const Bundle& bundle, const TensorCoreConfig& cfg);

}  // namespace tinytpu
