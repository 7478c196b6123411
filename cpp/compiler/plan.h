#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/errors.h"
#include "compiler/ir.h"
#include "compiler/tile_program.h"
#include "isa/bundle.h"
#include "sim/activity.h"

namespace tinytpu::compiler {

// A tile's elements of one buffer: lane l < lanes reads element base + (l % kRows) * col + (l / kRows) *
// row, the others read 0 (the reference's 4x4 tiles, below). The layouts of a chunk that tinygrad's affine
// indices give: 16 consecutive elements (col 1, row 4), a 4x4 block (row = its stride), an MXU activation row
// (4 lanes).
struct StridedGather {
  int buf;
  int lanes;
  int64_t base, col, row;
  int64_t index(int l) const { return base + (l % kRows) * col + (l / kRows) * row; }  // lane l's element
};

// A tile whose lanes read one buffer, lane l element base + offsets[l] (Plan::lane_offsets[offsets]), but its
// constant lanes: the common gather that is not strided (a broadcast, an im2col window, one with padding).
// The offset patterns are few and interned, so that a gather reads a small table that stays in cache, not 16
// indices of its own.
struct OffsetGather {
  int buf;
  int offsets;
  int64_t base;
};
struct LaneOffsets {
  std::array<int32_t, kLanes> at;  // a constant lane's is 0
  int32_t lo, hi;                  // the least and greatest offset: one bounds check for the tile
  LaneMask constant;               // lanes that read a constant: its bits in `constants`
  Tile constants;
  bool operator==(const LaneOffsets& o) const {
    return at == o.at && constant == o.constant && constants == o.constants;
  }
};

// A gather of an element that is not in its buffer: when the plan is compiled for a static index, when
// a call runs for a computed one.
inline SimError gather_outside(int64_t index, int buf, int64_t size) {
  return SimError("gather index " + std::to_string(index) + " outside buffer " + std::to_string(buf) +
                  " of " + std::to_string(size) + " elements");
}
inline void check_gather(int64_t index, int buf, int64_t size) {
  if (index < 0 || index >= size) throw gather_outside(index, buf, size);
}

// Where a tile's lanes come from when a launch runs. Every index of a static gather that is not gated
// was checked against the buffer sizes the plan was compiled for; a gated one is checked as it runs
// (out of range, it reads 0: the gate's select discards it, or nothing stores it).
struct TileSource {
  enum class Kind : uint8_t {
    kStrided,  // Plan::strided[id]
    kOffsets,  // Plan::offset_gathers[id]
    kLanes,    // Plan::lanes[id]: per lane an element (of any buffer) or a constant
    kDynamic,  // Plan::lanes[id] gives each lane's buffer (or constant); element indices are tile `index`
    kPinned,   // pinned tile #id (a uniform prefix's value)
    kScratch,  // scratch tile #id (a value an earlier launch spilled)
  };
  Kind kind;
  int id;
  int index = -1;      // kDynamic: the source (Plan::sources) of its int32 element indices
  bool gated = false;  // an index out of range reads 0 (else it is an error: a static one when compiled)
  LaneMask negate;     // MXU operands: lanes of subtracted terms, whose elements the loader negates
};

// One drained value stored to a buffer: lane l goes to element base + offsets[l] (Plan::lane_offsets, as a
// gather's) or to the drained index tile's, where active and (with a gate) the drained gate tile is non-zero.
// Outputs are positions in the launch's OUTPUT_VMEM order.
struct Scatter {
  int buf;
  int value;
  int gate = -1, index_tile = -1;
  int offsets = -1;  // when not index_tile; an inactive lane's offset is 0
  int64_t base = 0;
  LaneMask active;
};
// A drained value kept for later launches: scratch tile #id (a spill) or pinned tile #id.
struct Keep {
  int output;
  bool pinned;
  int id;
};

// A launch's program and records, validated once: VMEM, WMEM and AMEM records hold constants, or zeros
// where `fills` put this run's data.
struct Image {
  Bundle bundle;
  std::vector<DType> fill_dtypes;  // the dtype in each VMEM record, for listings (DEBUG=4)
  // Per VMEM record, whether it is a table row a launch-time variable picked: rows_picked_by_variables'
  // tables, the tile's elements at a constant stride. On a core with a SparseCore (config.h sparse_core) the
  // loader may hand such a record to it as a lookup.
  std::vector<bool> table_rows;
  Activity activity;  // what one run of it does (straight-line: the compiler's programs have no branches)
};

struct PlanLaunch {
  std::shared_ptr<const Image> image;  // shared by the launches that differ only in their data
  struct Fill {
    int record;
    int source;  // Plan::sources
  };
  std::vector<Fill> fills;  // VMEM tiles
  struct MxuFill {
    int record;
    int operand;  // Plan::mxu_operands
  };
  std::vector<MxuFill> mxu_fills;  // WMEM tiles and AMEM rows, int8 (or a float block's words) at run time
  std::vector<Scatter> scatters;   // in program order
  std::vector<Keep> keeps;
};

// A distinct WMEM tile or AMEM row (lanes 0..3) of a plan, and the dot-product chains that read it.
struct MxuOperand {
  MxuTile lanes;
  bool weight;
  int source;  // Plan::sources
  std::vector<int> chains;
  bool words = false;  // MxuFill::words: filled as 32-bit words, never vetoed
};

// Launches [first, first + count) of Plan::launches, run with every static element index of buffer b
// moved by shift[b] (Plan::shifts[shift]; -1: not moved). A batch of chunks that compiles like an
// earlier one with its indices shifted runs that batch's launches (compiler/replay.h).
// With swap_banks, pinned tile numbers are read as the other bank's (other_bank): a part of a long chunk that
// is an earlier part with the banks it reads and fills exchanged.
struct LaunchRun {
  int64_t first, count;
  int shift = -1;
  bool swap_banks = false;
};

// A compiled kernel for one set of symbolic-variable values and buffer sizes: everything a call does
// but move data and tick the model. Before it runs, a call reads the MXU operands (Choices says why).
struct Plan {
  TensorCoreConfig config;  // the core it was compiled for, and runs on
  std::vector<PlanLaunch> launches;
  std::vector<LaunchRun> runs;  // in order: what a call runs
  std::vector<std::vector<int64_t>> shifts;
  std::vector<TileSource> sources;
  std::vector<StridedGather> strided;
  std::vector<OffsetGather> offset_gathers;
  std::vector<LaneOffsets> lane_offsets;
  std::vector<std::array<LeafLane, kLanes>> lanes;
  std::vector<MxuOperand> mxu_operands;
  int scratch_tiles = 0, pinned_tiles = 0;
  std::vector<bool> written;  // per buffer slot: the kernel stores to it
  // Elements of each memo buffer (memo_slot): scratch a call stores values into and later reads back.
  std::vector<int64_t> memo_sizes;
  // The first runs of its independent groups of runs, which can run in any order, or at once
  // (compiler/independent.h).
  std::vector<size_t> independent_groups;
};

// Where the executor keeps a kept tile (scratch tile or pinned tile #id): the scratch tiles, then the pinned
// tiles, whose banks a run with swap_banks reads and fills exchanged.
inline int kept_place(const Plan& p, bool pinned, int id, bool swap) {
  return pinned ? p.scratch_tiles + (swap ? other_bank(id) : id) : id;
}
inline int kept_place(const Plan& p, const TileSource& s, bool swap) {
  return kept_place(p, s.kind == TileSource::Kind::kPinned, s.id, swap);
}
inline bool is_kept(const TileSource& s) {
  return s.kind == TileSource::Kind::kScratch || s.kind == TileSource::Kind::kPinned;
}

// f(source) for source `id` and, for a dynamic gather, the sources its element indices come from.
template <class F>
void for_each_source(const Plan& p, int id, F f) {
  for (; id >= 0;) {
    const TileSource& s = p.sources[size_t(id)];
    f(s);
    id = s.kind == TileSource::Kind::kDynamic ? s.index : -1;
  }
}

// Whether a source reads a memo buffer (the slots after the counter slot).
inline bool reads_memo(const Plan& p, const TileSource& s) {
  const int counter = counter_slot(p.written);
  switch (s.kind) {
    case TileSource::Kind::kStrided:
      return p.strided[size_t(s.id)].buf > counter;
    case TileSource::Kind::kOffsets:
      return p.offset_gathers[size_t(s.id)].buf > counter;
    case TileSource::Kind::kLanes:
    case TileSource::Kind::kDynamic:
      for (const LeafLane& l : p.lanes[size_t(s.id)])
        if (l.buf > counter) return true;
      return false;
    default:
      return false;
  }
}

}  // namespace tinytpu::compiler
