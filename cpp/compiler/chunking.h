#pragma once
// How the tracer maps a kernel's iteration space onto chunks of kLanes lanes (tracer.h). Every RANGE outside
// all REDUCE ranges is lane-parallel, and they nest in one chain. A chunk takes kLanes consecutive points of
// their flattened product; or, blocked, a kRows x kRows block of the two innermost (lane kRows * r + c: block
// row r, column c, the shape of an MXU output tile), the outer ranges' point the same in all its lanes.
#include <array>
#include <cstdint>
#include <vector>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

struct Chunking {
  std::vector<int> ranges;      // lane-parallel RANGE nodes, outermost first
  std::vector<int64_t> bounds;  // their trip counts
  int64_t points = 1;           // the product of the trip counts
  int64_t chunks = 0;
  bool blocked = false;

  // Blocks across the two innermost ranges: along the innermost (columns), along the next (rows).
  int64_t block_cols() const { return (bounds[bounds.size() - 1] + kRows - 1) / kRows; }
  int64_t block_rows() const { return (bounds[bounds.size() - 2] + kRows - 1) / kRows; }
  // Chunk `chunk`'s lanes: at[r][l], range r's value in lane l, and whether the lane is a point of the
  // kernel (`active`; one past the ranges' edges repeats a real point).
  void lanes(int64_t chunk, std::vector<Lanes>& at, std::array<bool, kLanes>& active) const;
};

}  // namespace tinytpu::compiler
