#pragma once
#include <cstdint>

namespace tinytpu {

// How a kernel call's counters take a run's counter (sim/counters.def's RUN rows).
enum class Combine : uint8_t {
  kSum,   // added up over the call's launches and threads
  kNone,  // a cycle within one run: kept per run, not combined
};
constexpr const char* combine_name(Combine c) { return c == Combine::kSum ? "sum" : "none"; }

}  // namespace tinytpu

// In a RUN row's expansion: the rest of the arguments when its combine is kSum (a kernel call's counter too),
// nothing when it is kNone.
#define TINYTPU_IF_SUMMED(combine, ...) TINYTPU_IF_SUMMED_##combine(__VA_ARGS__)
#define TINYTPU_IF_SUMMED_kSum(...) __VA_ARGS__
#define TINYTPU_IF_SUMMED_kNone(...)
