#pragma once
#include "sim/datapath.h"
#include "sim/sxu.h"

// The EXEC-cycle behaviour of each SXU opcode, one function per sxu_ops.def row (its exec column), defined
// in sim/sxu.cc. Called with the SXU in its EXEC phase for the instruction `s.cur`.
namespace tinytpu::sxu_exec {
#define X(opcode, name, mnemonic, exec, ...) Exec exec(Sxu& s, Datapath& tc);
#include "isa/sxu_ops.def"
#undef X
}  // namespace tinytpu::sxu_exec
