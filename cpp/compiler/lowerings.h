#pragma once

namespace tinytpu::compiler {

class Emitter;  // emitter.h: one emission of a batch, the instruction selection the lowerings are part of
struct TileNode;

// What a lowering is given: the node, whether its lanes are float32, whether MAX is a RELU (one operand), and
// the vregs of its result and its operands (-1 where it has none).
struct Lowered {
  const TileNode& n;
  bool f, relu;
  int d, a, b, c;
};
using Lowering = void (*)(Emitter&, const Lowered&);

// The lowerings longer than one instruction, one per op table row that names one (op_table.cc), defined in
// lower.cc.
// One a line, unformatted: clang-format 14 reflows such a list differently on each pass.
// clang-format off
#define TINYTPU_LOWERINGS(X) \
  X(neg) \
  X(max) \
  X(cmplt) \
  X(equality) \
  X(where) \
  X(shr) \
  X(cdiv) \
  X(cmod) \
  X(bitcast) \
  X(mxu_dot) \
  X(lane_reduce) \
  X(lane_broadcast) \
  X(fdiv) \
  X(div_scale) \
  X(div_exact) \
  X(reciprocal) \
  X(sqrt) \
  X(exp2) \
  X(log2) \
  X(trunc) \
  X(cast)
// clang-format on
namespace lowering {
#define TINYTPU_DECLARE_LOWERING(name) void name(Emitter&, const Lowered&);
TINYTPU_LOWERINGS(TINYTPU_DECLARE_LOWERING)
#undef TINYTPU_DECLARE_LOWERING
}  // namespace lowering

}  // namespace tinytpu::compiler
