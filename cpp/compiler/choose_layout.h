#pragma once
// A kernel's chunk layout (tracer.h): which lanes a chunk takes, chosen by compiling its first chunk each
// way.
#include <cstdint>
#include <vector>

#include "compiler/ir.h"
#include "compiler/lower.h"
#include "compiler/mxu_dot.h"
#include "compiler/tracer.h"

namespace tinytpu::compiler {

// Whether the batch is compiled after tracing chunk `chunk` into it: it holds kBatchNodes nodes, or the chunk
// pinned the prefix, whose program runs before any chunk reads the pinned tiles. An integer reduction's 4x4
// blocks (its MXU's output tiles) of one row read the same rows of the left operand: a batch holds up to
// four of them, so that their MXU blocks of one K-range share a launch's activation rows (schedule.h).
bool batch_ends(const TileProgram& prog, int64_t chunk, const Tracer& tracer);

// The chunk layout compile() traces in, and its first chunk packed and lowered when choosing the layout did
// it.
struct FirstChunk {
  ChunkLayout layout = ChunkLayout::kAuto;
  BlockRanges block;
  bool compiled = false;  // chunk 0 is a batch of its own, and `packed`, `launches` and `consts` are its
  TileProgram packed;
  std::vector<Launch> launches;
  std::vector<Tile> consts;
  Emissions emissions;  // the way its lowering took, for the kernel's other batches
};

// A float reduction's chunk layout, by compiling its first chunk both ways in the two orders of the program
// as it is: the one whose estimated cycles over all its chunks are fewer (a first chunk traced in parts, by
// its first part's). On a float MXU's core the ways are 16 consecutive points and blocks of each pair of
// parallel ranges whose blocks fill chunks (Tracer::float_blocks; a convolution's pixels by its output
// channels), its float chains fused; a pair other than the two innermost only when the MXU takes blocks in
// it. (Not by register blocking's emissions: lane packing may add a float sum in another order in one layout,
// so the layout is chosen as before, which keeps every float result as it was.) The chosen layout's first
// chunk is then lowered in every emission, and when compile() will compile it as a batch of its own, that
// packing and lowering are kept: tracing is deterministic, so compile() traces the same program again
// (cheaply) and, when the MXU pass fused nothing in it, takes these instead of packing and lowering it a
// second time.
FirstChunk choose_layout(const Kernel& k, const TensorCoreConfig& cfg, const std::vector<int64_t>& vals,
                         const std::vector<int64_t>& sizes, const Choices& choices,
                         const TraceLimits& limits);

}  // namespace tinytpu::compiler
