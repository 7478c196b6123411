#pragma once
#include <vector>

#include "base/tile.h"
#include "compiler/launch.h"
#include "compiler/mxu_dot.h"
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// Instruction selection, register and VMEM allocation, and splitting into launches.
// Constant tiles the code needs are returned in `constants` (uniform values, and each launch's palette). An
// MXU operand with the values of one already loaded in the launch (`choices`) reuses it. What the testbench
// takes to run launches by the compiler's estimate (compiler/cost.h), their fills, MXU fills and drains being
// the data records.
int64_t estimated_cycles(const std::vector<Launch>& launches);

std::vector<Launch> lower(const TileProgram& prog, const TensorCoreConfig& cfg, std::vector<Tile>& constants,
                          bool fast_math = false, const Choices& choices = {});

}  // namespace tinytpu::compiler
