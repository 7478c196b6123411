#include "sim/config.h"

#include <stdexcept>

namespace tinytpu {

namespace {

void need(bool ok, const char* field, int value, const std::string& what) {
  if (!ok)
    throw std::invalid_argument("TensorCoreConfig." + std::string(field) + " = " + std::to_string(value) +
                                ": " + what);
}

bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

void wrapping(const char* field, int value, int max) {
  need(power_of_two(value) && value <= max, field, value,
       "must be a power of two from 1 to " + std::to_string(max));
}

}  // namespace

void TensorCoreConfig::check() const {
  wrapping("depth", depth, kMaxDepth);
  need(depth >= kRows, "depth", depth,
       "must be at least " + std::to_string(kRows) + ": an MXU K-slice fills " + std::to_string(kRows) +
           " WMEM tiles or AMEM rows");
  wrapping("vregs", vregs, kMaxVregs);
  wrapping("psum_buckets", psum_buckets, kMaxPsumBuckets);
  need(prog_depth >= 1 && prog_depth <= kMaxProgDepth, "prog_depth", prog_depth,
       "must be from 1 to " + std::to_string(kMaxProgDepth));
  need(loop_depth >= 1 && loop_depth <= kMaxLoopDepth, "loop_depth", loop_depth,
       "must be from 1 to " + std::to_string(kMaxLoopDepth));
  need(max_outputs >= 1 && max_outputs <= kMaxOutputs, "max_outputs", max_outputs,
       "must be from 1 to " + std::to_string(kMaxOutputs));
}

std::string TensorCoreConfig::describe() const {
  return "depth=" + std::to_string(depth) + " vregs=" + std::to_string(vregs) +
         " psum_buckets=" + std::to_string(psum_buckets) + " prog_depth=" + std::to_string(prog_depth) +
         " loop_depth=" + std::to_string(loop_depth) + " max_outputs=" + std::to_string(max_outputs);
}

}  // namespace tinytpu
