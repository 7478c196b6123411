#pragma once
#include <optional>
#include <vector>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// What both emission orders of a batch read of its program (lower.h), found once for the two:
// - uniform: node -> uniform_bits(), which the vreg forecast asks for every leaf read in the events ahead;
// - to_vmem: MXU results that one store alone reads as they are, from a single weight-stationary dispatch:
//   the MXU_VPU_EPILOGUE writes them straight into the store's output slot (no vreg, no STORE). They are
//   not events of their own; the store emits them;
// - in_range: narrow integer results whose lanes hold a value of their dtype's range before any wrap, so
//   that the wrap (Emitter::emit_node) would change nothing (value_ranges.h);
// - made_by: an output of an MXU block across chains (MxuDot::across) that the block's first output in
//   program order makes with its own (its event reads the block back whole): that node, else -1; and
//   outputs: per MxuDot, its output nodes by number.
struct NodeFacts {
  std::vector<std::optional<uint32_t>> uniform;
  std::vector<bool> to_vmem;
  std::vector<bool> in_range;
  std::vector<int> made_by;
  std::vector<std::vector<int>> outputs;

  explicit NodeFacts(const TileProgram& p);
};

}  // namespace tinytpu::compiler
