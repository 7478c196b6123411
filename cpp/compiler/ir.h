#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tinytpu::compiler {

// A kernel tinygrad asks for that this backend cannot lower. Python: NotImplementedError.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The dtypes the compiler has lanes for (dtypes.def's LANES rows); kOther: any other.
enum class DType : uint8_t {
#define LANES(name, ...) name,
#include "compiler/dtypes.def"
  kOther
};
int dtype_bytes(DType d);
// Inline: the tracer asks per node.
constexpr bool is_float(DType d) {
  switch (d) {
#define LANES(name, code, tinygrad, bytes, floating, ...) \
  case DType::name:                                       \
    return floating;
#include "compiler/dtypes.def"
    default:
      return false;
  }
}
bool is_signed(DType d);
bool is_lane_int(DType d);  // an integer a 32-bit lane holds: int8..int32, uint8..uint32
const char* dtype_name(DType d);

// The UOps the renderer serialises (tinygrad/uop Ops names).
enum class Op : uint8_t {
  SINK,
  PARAM,
  BUFFER,
  CONST,
  CAST,
  BITCAST,
  RANGE,
  END,
  INDEX,
  LOAD,
  STORE,
  AFTER,
  GROUP,
  IF,
  ENDIF,
  NOOP,
  BARRIER,
  STACK,
  ADD,
  SUB,
  MUL,
  NEG,
  MAX,
  CMPLT,
  CMPNE,
  CMPEQ,
  WHERE,
  AND,
  OR,
  XOR,
  SHL,
  SHR,
  CDIV,
  CMOD,
  RECIPROCAL,
  SQRT,
  TRUNC,
  EXP2,
  LOG2,
  SIN,
  FDIV,
  DIV_SCALE,  // compiler-internal: exact division's halves (compiler/divide.h)
  DIV_EXACT,
  MXU_DOT,         // compiler-internal: an int8 dot-product block on the MXU (compiler/mxu_dot.h)
  LANE_REDUCE,     // compiler-internal: a cross-lane reduce of one tile (compiler/lane_pack.h)
  LANE_BROADCAST,  // compiler-internal: one lane (row, column) of a tile copied to others
                   // (compiler/lane_pack.h)
  MIN,             // compiler-internal: the smaller of two signed integers (compiler/clamps.h)
  kCount
};
const char* op_name(Op op);

struct Node {
  Op op;
  DType dtype;
  std::string dtype_text;  // as serialised, for messages
  std::vector<int> src;
  int64_t ivalue = 0;   // CONST int value; PARAM slot; RANGE axis
  uint32_t fbits = 0;   // CONST float value as float32 bits
  bool global = true;   // PARAM: buffer (true) or scalar variable (false)
  bool reduce = false;  // RANGE: AxisType.REDUCE
  // ADD, MUL: made by tinygrad's lowering of a REDUCE (the renderer's "reduce" word), so a float chain of
  // them may be summed in another order; a chain the user wrote keeps tinygrad's order (lane_pack.h)
  bool reassociable = false;
};

struct Kernel {
  std::string name;
  bool fast_math = false;  // TINYTPU_FAST_MATH: FRECIP alone, TranscUnit EXP2/LOG2/SIN (approximate)
  // TINYTPU_DOTS=mxu: dot products go to the MXU wherever they fit it, even where the estimate finds the VPU
  // faster (int8 weights then stay int8 on their way from HBM: a quarter of the VPU's 32-bit lanes' bytes)
  bool dots_on_mxu = false;
  std::vector<Node> nodes;
};

// Parses the renderer's text IR and checks every op/dtype pair is one the lowering handles.
Kernel parse_kernel(std::string_view text);
// Whether the kernel computes with bfloat16 tensors, as tinygrad emulates them on TINYTPU (no bfloat16
// lanes): a 2-byte uint16 buffer whose loads are decoded to float32, and float32 products.
bool reads_bfloat16_storage(const Kernel& k);

}  // namespace tinytpu::compiler
