#pragma once
#include "sim/datapath.h"
#include "sim/sxu.h"

// The EXEC-cycle behaviour of each SXU opcode, one function per sxu_ops.def row (named by its fn column),
// defined in sim/sxu.cc for one core's Datapath and a BatchDatapath (sim/batch.h). Called with the SXU in its
// EXEC phase for the instruction `s.cur`.
namespace tinytpu::sxu_exec {
#define X(opcode, name, mnemonic, fn, ...) \
  template <class DP>                      \
  Exec fn(Sxu& s, DP& tc);
#include "isa/sxu_ops.def"
#undef X
}  // namespace tinytpu::sxu_exec
