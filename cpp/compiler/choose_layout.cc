#include "compiler/choose_layout.h"

#include <algorithm>
#include <limits>

#include "compiler/clamps.h"
#include "compiler/lane_pack.h"
#include "compiler/log.h"

namespace tinytpu::compiler {

constexpr size_t kBatchNodes = 96;  // tile nodes traced before a batch of chunks is compiled

// Whether the batch is compiled after tracing chunk `chunk` into it: it holds kBatchNodes nodes, or the chunk
// pinned the prefix, whose program runs before any chunk reads the pinned tiles. An integer reduction's 4x4
// blocks (its MXU's output tiles) of one row read the same rows of the left operand: a batch holds up to
// four of them, so that their MXU blocks of one K-range share a launch's activation rows (schedule.h).
bool batch_ends(const TileProgram& prog, int64_t chunk, const Tracer& tracer) {
  if (chunk == 0 && tracer.pinned_prefix()) return true;
  if (prog.nodes.size() < kBatchNodes) return false;
  const int64_t in_row = (chunk + 1) % tracer.blocks_per_row();
  return !tracer.blocked() || tracer.layout_open() || in_row % kRows == 0;
}

FirstChunk choose_layout(const Kernel& k, const TensorCoreConfig& cfg, const std::vector<int64_t>& vals,
                         const std::vector<int64_t>& sizes, const Choices& choices,
                         const TraceLimits& limits) {
  std::vector<FirstChunk> tried{{ChunkLayout::kLinear}, {ChunkLayout::kBlocked}};
  bool open = false;  // the two innermost ranges' blocks are a candidate whatever the MXU takes
  {
    const Tracer t(k, vals, sizes, limits, ChunkLayout::kLinear);
    const bool float_mxu = limits.keep_dot_operands != KeepDotOperands::kNo && !t.float_blocks().empty();
    open = t.layout_open();
    if (!open && !float_mxu) return {};  // the same answer for either layout
    constexpr size_t kMostPairs = 6;     // (each tried costs its first chunk's compile)
    if (float_mxu) {  // a float MXU's blocks: any pair of ranges whose rows and columns may share the factors
      tried.pop_back();
      for (const BlockRanges& b : t.float_blocks())
        if (tried.size() <= kMostPairs) tried.push_back({ChunkLayout::kBlocked, b});
    }
  }
  std::vector<int64_t> cost(tried.size());
  // a float MXU's computed factors are kept from the first few batches on: the steady state is estimated (and
  // chunk 0, traced so, is compiled again)
  TraceLimits estimated = limits;
  if (limits.keep_dot_operands == KeepDotOperands::kYes)
    estimated.keep_dot_operands = KeepDotOperands::kAssumed;
  for (FirstChunk& f : tried) {
    Tracer t(k, vals, sizes, estimated, f.layout, f.block);
    TileProgram prog;
    const bool whole = t.trace_chunk(0, prog);
    f.compiled = whole && !prog.stores.empty() && batch_ends(prog, 0, t) && t.memo_reads() == 0;
    fold_clamps(prog);
    if (limits.keep_dot_operands != KeepDotOperands::kNo)  // a float MXU takes float chains
      fuse_mxu_dots(prog, cfg, 0, choices, t.bfloat16_slots());
    // another layout only for the float MXU's blocks: the VPU's float sums keep the layout they had (lane
    // packing may sum a float reduction in another order in another layout)
    if (&f - tried.data() > int(open) && prog.mxu.empty()) {
      cost[&f - tried.data()] = std::numeric_limits<int64_t>::max();
      continue;
    }
    pack_lanes(prog);
    Emissions as_it_is;
    as_it_is.decided = true;  // the two orders alone
    const std::vector<Launch> launches = lower(prog, cfg, f.consts, k.fast_math, choices, &as_it_is);
    // a chunk traced in parts: its cycles estimated from its first part's, by the share of it traced
    const double share = whole ? 1.0 : std::max(t.cut_share(), 1e-6);
    cost[&f - tried.data()] = int64_t(double(estimated_cycles(launches, cfg)) / share) * t.num_chunks();
    f.packed = std::move(prog);
  }
  decision_log().debug("kernel {}: chunks of 16 consecutive points (~{} cycles) or 4x4 blocks (~{}{})",
                       k.name, cost[0], fmt::join(cost.begin() + 1, cost.end(), ", ~"),
                       tried.size() > 2 ? ": ranges' pairs in the nest, the innermost first" : "");
  FirstChunk& chosen = tried[size_t(std::min_element(cost.begin(), cost.end()) - cost.begin())];
  chosen.launches = lower(chosen.packed, cfg, chosen.consts, k.fast_math, choices, &chosen.emissions);
  return std::move(chosen);
}

}  // namespace tinytpu::compiler
