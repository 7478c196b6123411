#pragma once
#include <functional>

#include "compiler/tracer.h"

namespace tinytpu::compiler {

// Moves integer dot products onto the MXU: a chain ADD(..., MUL(x_k, y_k), ...) over int32 lanes whose
// factors are leaves (optionally cast from a narrower integer) becomes MXU_DOT nodes when, at launch
// time, every live lane's factors fit int8 and each group of four lanes shares one factor per term
// (the shape of a matmul row block). Otherwise the chain stays on the VPU, which is exact for any data.
// `leaf_values(node)` returns a leaf's 16 lanes as the loader would fill them.
//
// Schedules (lowering emits them; see MxuDot): weight-stationary dispatches into PSUM rows, or
// output-stationary MXU_OS over a 4x4 lane block, whichever a cycle estimate finds cheaper per block.
// Dispatches are asynchronous and issued back to back, so the MXU never waits for the SXU; results are
// read with instructions that block until Done (LOAD_MXU_RESULT, LOAD_MXU_MATRIX_ROW) or after one
// WAIT_MXU. In the kernels tinygrad emits, what follows a dot product reads its result, so there is no
// independent work to move before the wait. Epilogues: the generic one (46) is exact for ADD/SUB/MUL/
// MAX on the column sums and is used for a lone row-0 dispatch; the legacy one (42) works on the per-PE
// products of a weight-stationary pass, not on dot products, so it never matches a matmul epilogue.
void fuse_mxu_dots(TileProgram& prog, const std::function<std::array<int32_t, 16>(int)>& leaf_values);

}  // namespace tinytpu::compiler
