#pragma once
#include "compiler/ir.h"

namespace tinytpu::compiler {

// Exact float division split in two (outside fast math). The divisor's half, which does not depend on the
// dividend, becomes nodes of its own right after the divisor, and FDIV(a, b) becomes DIV_EXACT(a*s, bs, r):
//   s = DIV_SCALE(b)        a power of two bringing |b| where 1/b neither overflows nor goes subnormal
//   bs = MUL(b, s)
//   r = RECIPROCAL(bs)
//   DIV_EXACT(a*s, bs, r)   the quotient (a*s) * r, corrected by its exact remainder
// The instructions are those of one exact division, so every quotient is the same bit for bit. Placed after
// the divisor, the divisor's half is computed where the divisor is: once per chunk for a divisor computed
// before a loop, once per kernel for one in the uniform prefix (softmax's sum, pinned), once per element
// for a channel's value (memo buffers); several divisions by one divisor share it.
Kernel split_divisions(const Kernel& k);

}  // namespace tinytpu::compiler
