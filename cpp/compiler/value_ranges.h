#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// The signed values an integer lane may hold, [lo, hi].
struct ValueRange {
  int64_t lo, hi;
  bool within(const ValueRange& r) const { return lo >= r.lo && hi <= r.hi; }
};

// A range analysis of a batch's integer lanes, in program order (operands first):
// - range: the values each node's lanes hold as lowered (a narrow result wrapped unless in_range), none where
//   unknown (float and bool lanes, unsigned ones that may reach 2^31);
// - in_range: narrow integer results whose value is within their dtype's range before any wrap, so that the
//   wrap (Emitter::emit_node) would change nothing: the larger or smaller of two such values, a select of
//   them, a cast of a value the program has already bounded (a clamp, say), a sum that cannot overflow.
struct ValueRanges {
  std::vector<std::optional<ValueRange>> range;
  std::vector<bool> in_range;

  explicit ValueRanges(const TileProgram& p);
};

// A leaf holding one integer constant in every lane, as the lanes hold it (sign-extended for a signed dtype).
std::optional<int64_t> int_constant(const TileProgram& p, int node);

}  // namespace tinytpu::compiler
