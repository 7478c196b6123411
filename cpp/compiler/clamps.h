#pragma once
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// Integer clamps as the VPU's MAX and MIN. tinygrad writes a clip (and a ReLU after it) as selects of
// comparisons, compares a shifted value before its shift (a requantisation's a - c < lo as a < lo + c), and
// pushes a narrowing cast into the selects: two instructions a select (SELECT alone takes 4 cycles) and three
// for each cast's wrap. This pass rewrites, in place, on signed lanes:
// - l < r ? r' : l' into MAX(l', r'), and l < r ? l' : r' into MIN(l', r'), where each primed value is its
//   operand moved by one constant that cannot overflow (an ADD of it, or a constant for a constant), or the
//   operand narrowed to the select's dtype (then the new node narrows it the same way);
// - c ? K : CAST(v), when c ? K' : v is a node and K is K' narrowed: a narrowing of that node, for the above;
// - MAX(MIN(MAX(v, a), hi), lo) with a <= lo <= hi into MAX(MIN(v, hi), lo) (a clamp, then a ReLU);
// - a narrowing cast of x + c (or x - c), c a multiple of 2^bits, into the cast of x (quantize_tensor's
//   rounding subtracts a float's bits that end in zero bytes).
// Every rewritten node has the value it had, lane for lane, and stays in its place; the nodes left without
// readers are not lowered.
void fold_clamps(TileProgram& p);

}  // namespace tinytpu::compiler
