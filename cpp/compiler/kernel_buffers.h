#pragma once
// Which buffers a kernel's pointers reach, read off its IR before tracing: what the tracer forwards stores
// for and keeps values of (tracer.h, element_memo.h), which chunks trace alike (chunk_period.h), the data a
// call moves (the runtime) and the table rows a SparseCore may look up (compile.cc).
#include <set>

#include "compiler/ir.h"

namespace tinytpu::compiler {

// The buffer under a pointer: `node` with its INDEX and AFTER wrappers taken off (-1: malformed IR).
int pointer_base(const Kernel& k, int node);

// The buffer slots (global PARAMs by slot) a kernel loads from and stores to, and whether it loads through a
// pointer of another kind, so that any buffer may be read.
struct BuffersTouched {
  std::set<int> read, written;
  bool reads_unknown = false;
};
BuffersTouched buffers_touched(const Kernel& k);
// The buffer slots whose every load's index depends on a scalar variable: tables whose rows a launch-time
// value picks (an embedding row at a token, a position embedding at a position).
std::set<int> rows_picked_by_variables(const Kernel& k);

}  // namespace tinytpu::compiler
