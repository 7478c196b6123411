#include "runtime/kernel_stats.h"

namespace tinytpu {

void KernelStats::add(const RunResult& run) {
#define RUN(name, type, combine, energy, doc) TINYTPU_IF_SUMMED(combine, name += run.name;)
#define BUSY(unit, name, type, doc) name += run.busy.unit;
#include "sim/counters.def"
}

KernelStats& KernelStats::operator+=(const KernelStats& o) {
#define CALL(name, type, doc) name += o.name;
#define RUN(name, type, combine, energy, doc) TINYTPU_IF_SUMMED(combine, name += o.name;)
#define BUSY(unit, name, type, doc) name += o.name;
#include "sim/counters.def"
  activity += o.activity;
  return *this;
}

}  // namespace tinytpu
