#pragma once
#include <optional>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// Packs work that leaves lanes idle into fewer tiles. A tile op is lane-wise, and a leaf is a gather
// that can put any element in any lane, so isomorphic trees computed in different tiles (or in
// different iterations of a reduce) can be computed side by side in one tile from re-laned leaves:
//
// - Stores: consecutive stores to one buffer with the same live lanes, whose values are isomorphic
//   trees, become one store (tinygrad's UPCAST writes y[4i+k] for k = 0..3 as four 4-lane stores).
// - Reductions: a chain ADD/MUL/MAX(t_0, ..., t_{n-1}) over isomorphic terms, whose live lanes hold
//   one output each, computes several terms of one output side by side and finishes with one
//   cross-lane LANE_REDUCE: over the whole tile for a single output, else over each column (or row)
//   for up to four outputs in distinct columns (rows), one such group per occupied row (column).
//   Integer ADD/MUL wrap and MAX are associative, so integer results are unchanged; a float32 sum of
//   more than two terms from a REDUCE is reassociated (added in another order, as any device's own split
//   of a reduce does); a float32 chain the user wrote, ((a+b)+c)+d, keeps tinygrad's order: only its
//   ops' two terms are packed (TileNode::reassociable). Padding lanes hold -0.0, so a two-term float add
//   stays bit-exact. A float32 MAX keeps its terms' order (ReductionPacker::emit_ordered): bit-exact,
//   NaNs and signed zeros too.
// - Replicated values: a tree whose live lanes repeat one value across the tile (each row, each column),
//   such as a matmul's row operand under an elementwise prologue, is computed for up to sixteen (four)
//   such isomorphic trees side by side, and each tree's value is copied back to its lanes by one XLU
//   broadcast. The same ops on the same values in every lane: results are bit-identical.
//
// Each packing is taken only when a node (or cycle) count says it saves instructions. MXU_DOT, pinned and
// data-indexed leaves are never moved.
void pack_lanes(TileProgram& prog);

// Broadcast operands: gathers of data whose live lanes repeat one element (across the tile, each row, each
// column) become broadcasts of one lane (column, row) of a shared source gather (lane_pack.cc); nullopt when
// the program has none. An alternative the lowering weighs (lower.h), not part of pack_lanes: a launch
// reading one such element costs more this way (the source's fill and LOAD, then the broadcast).
std::optional<TileProgram> broadcast_operands(const TileProgram& prog);

}  // namespace tinytpu::compiler
