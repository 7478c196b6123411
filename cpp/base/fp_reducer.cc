#include "base/fp_reducer.h"

#include "base/fp32.h"

namespace tinytpu {
namespace {

uint32_t step(FpReduceOp op, uint32_t acc, uint32_t x) {
  switch (op) {
    case FpReduceOp::kSum:
      return fp32::add(acc, x);
    case FpReduceOp::kProd:
      return fp32::mul(acc, x);
    case FpReduceOp::kMax:
      return fp32::max_of(acc, x);
    case FpReduceOp::kMin:
      return fp32::min_of(acc, x);
  }
  return acc;  // unreachable: every FpReduceOp is handled above
}

}  // namespace

uint32_t fp_reduce(FpReduceOp op, const Tile& x) {
  uint32_t acc = uint32_t(x[0]);
  for (int i = 1; i < kTileElems; ++i) acc = step(op, acc, uint32_t(x[i]));
  return acc;
}

}  // namespace tinytpu
