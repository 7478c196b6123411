#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/activity.h"
#include "sim/counters.h"
#include "sim/runner.h"

namespace tinytpu {

// A kernel call's counters (sim/counters.def): how it ran its launches (CALL rows), and the sums of its
// launches' RUN counters that add up, their units' busy cycles and what they did (`activity`).
struct KernelStats {
#define CALL(name, type, doc) type name = 0;
#define RUN(name, type, combine, energy, doc) TINYTPU_IF_SUMMED(combine, type name = 0;)
#define BUSY(unit, name, type, doc) type name = 0;
#include "sim/counters.def"
  Activity activity;
  std::vector<std::string> tasm;  // each launch's program, when asked for

  void add(const RunResult& run);                 // a launch's run: its counters that add up
  KernelStats& operator+=(const KernelStats& o);  // another thread's part of the call: every counter
};

}  // namespace tinytpu
