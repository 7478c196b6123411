#pragma once
#include <functional>

#include "compiler/tracer.h"

namespace tinytpu::compiler {

// Moves integer dot products onto the MXU: a chain ADD(..., MUL(x_k, y_k), ...) over int32 lanes whose
// factors are leaves (optionally cast from a narrower integer) becomes MXU_DOT nodes when, at launch
// time, every live lane's factors fit int8 and each group of four lanes shares one factor per term
// (the shape of a matmul row block). Otherwise the chain stays on the VPU, which is exact for any data.
// `leaf_values(node)` returns a leaf's 16 lanes as the loader would fill them.
void fuse_mxu_dots(TileProgram& prog, const std::function<std::array<int32_t, 16>(int)>& leaf_values);

}  // namespace tinytpu::compiler
