#pragma once
#include <cstdint>

#include "base/tile.h"

namespace tinytpu {

// FpReducer#(16) (hardware.md §2.4): walks the flattened tile in row-major order, acc = x[0], then
// acc = op(acc, x[i]) for i = 1..15, one element per cycle. This computes the final value; the VPU
// model supplies the 16-cycle timing.
enum class FpReduceOp : uint8_t { kSum, kMax, kMin, kProd };
uint32_t fp_reduce(FpReduceOp op, const Tile& x);

}  // namespace tinytpu
