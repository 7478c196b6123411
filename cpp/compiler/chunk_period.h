#pragma once
// Which chunks of a kernel trace alike, proved from its index arithmetic before any is traced: compile()
// replays such chunks' batches without tracing them. A lane-parallel range is affine when its value reaches
// nothing but element indices of global buffers, through ADD, SUB, NEG, and MUL or SHL by a value fixed for
// the whole kernel: advancing it by one then moves each buffer's element indices by one step. When the outer
// ranges are affine and every chunk lies within one of their points, chunk c traces to the program of chunk
// c % chunks with each buffer's element indices moved by one amount: the two chunks' lanes differ only in
// those ranges' values, by the same amount in every lane.
#include <cstdint>
#include <vector>

#include "compiler/chunking.h"
#include "compiler/ir.h"

namespace tinytpu::compiler {

struct ChunkPeriod {
  int64_t chunks = 0;  // 0: no chunks trace alike this way
  int64_t units = 1;   // how far `chunks` chunks move the outer ranges' point (more than 1: one outer range)
  // The outer ranges' trip counts, outermost first: the digits of c / chunks * units.
  std::vector<int64_t> bounds;
  // steps[r][slot]: how far the slot's element indices move when outer range r advances by one.
  std::vector<std::vector<int64_t>> steps;
  // Per buffer slot, chunk `to`'s element indices minus chunk `from`'s (chunks apart by a multiple of
  // `chunks`); false if it overflows.
  [[nodiscard]] bool shift(int64_t from, int64_t to, std::vector<int64_t>& by) const;
};

// The period of kernel `k`'s chunks as `chunking` takes them. `vals`: the scalar variables' values by PARAM
// slot; `sizes`: elements per buffer slot.
ChunkPeriod chunk_period(const Kernel& k, const Chunking& chunking, const std::vector<int64_t>& vals,
                         const std::vector<int64_t>& sizes);

}  // namespace tinytpu::compiler
