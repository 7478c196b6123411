#pragma once
#include <cstdint>
#include <vector>

#include "compiler/plan.h"

namespace tinytpu::compiler {

// The first run of a plan's independent runs: from it on, no run reads a kept tile that another of them keeps
// (each reads only kept tiles it keeps itself first, or that the runs before them left), none reads or stores
// a memo buffer or stores through computed indices, and no element is stored by two of them. Given the kept
// tiles the runs before them leave, such runs give the same results in any order, or at once (a call's
// threads, runtime/executor.cc): loads read the buffers as they were when the kernel started, so a run sees
// nothing of another's but kept tiles. `sizes`: elements per slot, as compiled. Returns runs.size() when no
// two runs are independent.
size_t independent_from(const Plan& plan, const std::vector<int64_t>& sizes);

}  // namespace tinytpu::compiler
