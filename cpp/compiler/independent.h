#pragma once
#include <cstdint>
#include <vector>

#include "compiler/plan.h"

namespace tinytpu::compiler {

// A plan's independent groups of runs, by their first runs (none: fewer than two). A group is a run and the
// runs after it that read kept tiles it or they keep (the parts of a long chunk). From the first independent
// group on, no group reads a kept tile that another of them keeps (each reads only kept tiles it keeps itself
// first, or that the runs before them left), none reads or stores a memo buffer or stores through computed
// indices, and no element is stored by two of them. Given the kept tiles the runs before them leave, such
// groups give the same results in any order, or at once (a call's threads, runtime/executor.cc): loads read
// the buffers as they were when the kernel started, so a group sees nothing of another's but kept tiles.
// `sizes`: elements per slot, as compiled.
std::vector<size_t> independent_groups(const Plan& plan, const std::vector<int64_t>& sizes);

}  // namespace tinytpu::compiler
