#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/tile.h"
#include "compiler/ir.h"
#include "compiler/lowerings.h"
#include "isa/vpu_ops.h"

namespace tinytpu::compiler {

// The result dtypes the lowering implements for an op (index integers are folded, never lowered).
enum class Accepts : uint8_t {
  kAny,          // no value of its own (SINK, RANGE, INDEX, ...)
  kNever,        // made by the compiler, never read from IR
  kInt,          // integers
  kIntOrBool,    // integers and bool
  kIntOrF32,     // integers and float32
  kF32,          // float32
  kF32FastMath,  // float32 under TINYTPU_FAST_MATH: the TranscUnit (tinygrad decomposes it otherwise)
  kBool,         // comparisons
  kValue,        // integers, bool, float32
  kCast,         // a value, or the weak float of a literal
  kParam,        // a buffer of values, or a scalar variable (an index)
  kStack,        // the empty STACK of a scalar PARAM's shape
};

// A VPU op per lane axis of a cross-lane reduction: a whole tile, each row, each column.
struct ReduceOps {
  VpuOpcode tile, row, col;
};

// Index arithmetic on known lane values (the tracer), with the result wrapped to the dtype: one lane, and
// all of a tile's lanes in one call (the same fold, instantiated over the lanes: the tracer's hottest loop).
struct Fold {
  int64_t (*one)(DType d, int64_t a, int64_t b, int64_t c) = nullptr;
  void (*lanes)(DType d, const int64_t* a, const int64_t* b, const int64_t* c, int64_t* out) = nullptr;
  explicit operator bool() const { return one != nullptr; }
};

// One row per tinygrad op: what the IR may hold, how index arithmetic folds it, how it lowers (the VPU
// instruction it is when that is one instruction, else a function of lowerings.h: float MAX with tinygrad's
// NaN rule, unsigned compares and division, exact float division, shifts of signed lanes, ...), and how a
// reduction over it runs. A pass reads these columns instead of listing ops, so changing a property touches
// one row.
struct OpInfo {
  Op op;
  const char* name;  // as the renderer serialises it
  int sources;       // the fewest sources a well-formed IR line has
  Accepts accepts;
  Fold fold;                                // none for floats, memory and control
  std::optional<VpuOpcode> int_op, f32_op;  // the one instruction on integer / float32 lanes
  bool mxu_epilogue;  // the MXU's generic epilogue (46) computes it on the column sums (its int_op)
  bool alu;           // a tinygrad ALU op the renderer hands the compiler (lowered_ops())
  Lowering lower;     // the lowering longer than one instruction; none: int_op / f32_op
  bool wraps;         // a narrow integer result is wrapped to its dtype after the lowering
  // Cross-lane reductions (lane packing): integer lanes (signed only when `signed_reduce`), float32
  // lanes, and the padding lanes' value as lane bits.
  std::optional<ReduceOps> int_reduce, f32_reduce;
  bool signed_reduce;
  uint32_t (*identity)(DType d);
};

const OpInfo& op_info(Op op);
const OpInfo* find_op(std::string_view name);  // by serialised name; nullptr when unknown
bool accepts(const OpInfo& info, const Node& n, bool fast_math);
int64_t wrap(DType d, int64_t v);
// An integer of any width, bool and index included: what index arithmetic folds (Fold) and wrap() wraps.
constexpr bool is_int_like(DType d) { return !is_float(d) && d != DType::kVoid; }
// The ALU ops the compiler lowers, by serialised name: what the renderer may pass (the rest tinygrad
// rewrites).
std::vector<std::string>
lowered_ops();  // two's-complement wrap of a mathematical integer to the dtype's width

}  // namespace tinytpu::compiler
