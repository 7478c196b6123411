#pragma once
// The tile IR every pass after tracing reads: a straight-line program of tile nodes, each computing the 16
// lanes of one tile by one operation, with the leaves the loader fills (per lane an element of a buffer or a
// constant), the stores it drains, and the MXU dot products fused from them. The tracer (tracer.h) writes it
// from the kernel's IR; fusing (mxu_dot.h), packing (lane_pack.h), lowering (lower.h) and replay (replay.h)
// read and rewrite it. Nodes come before their readers; a node is named by its index in
// TileProgram::nodes.
#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "base/tile.h"
#include "compiler/ir.h"
#include "isa/vpu_ops.h"

namespace tinytpu::compiler {

constexpr int kLanes = kTileElems;  // the points of a chunk: one tile's lanes
using Lanes = std::array<int64_t, kLanes>;
using LaneMask = std::bitset<kLanes>;  // one bit per lane

// One lane's operand of a leaf tile: an element of a kernel buffer, or a constant (32-bit pattern).
struct LeafLane {
  int buf = -1;  // PARAM slot; -1 for a constant
  uint32_t bits = 0;
  int64_t index = 0;  // after bits: 16 bytes, not 24
  LeafLane() = default;
  LeafLane(int buf, int64_t index, uint32_t bits = 0) : buf(buf), bits(bits), index(index) {}
  auto key() const { return std::tie(buf, index, bits); }
  bool operator==(const LeafLane& o) const { return key() == o.key(); }
  bool operator<(const LeafLane& o) const { return key() < o.key(); }
};

// One lane of an MXU operand tile: a leaf lane, negated when the term it belongs to is subtracted. A
// constant is negated when compiled; an element only as the loader fills it, which also checks that
// the value fits int8 (MXU data is read at launch time, so the range check is too).
struct MxuLane {
  LeafLane src;
  bool negate = false;
  bool operator==(const MxuLane& o) const { return src == o.src && negate == o.negate; }
  bool operator<(const MxuLane& o) const { return std::tie(src, negate) < std::tie(o.src, o.negate); }
};
using MxuTile = std::array<MxuLane, kLanes>;
using LeafLanes = std::array<LeafLane, kLanes>;
// The counter slot, one past the kernel's buffer slots: its "elements" are their own indices. An integer
// constant that differs across lanes (a chunk's point numbers, a random kernel's counter) is a leaf of this
// slot, so that a batch whose counters move with the chunk has the shape of an earlier batch with its
// indices shifted, and is replayed (replay.h). The loader fills it like any leaf.
// `slots`: one entry per buffer slot (the tracer's sizes, the executor's buffers).
template <class Slots>
int counter_slot(const Slots& slots) {
  return int(slots.size());
}
// Memo slots follow the counter slot: memo buffer i (element_memo.h) is slot counter_slot + 1 + i.
template <class Slots>
int memo_slot(const Slots& slots, int i) {
  return counter_slot(slots) + 1 + i;
}
// Pinned tile numbers: the uniform prefix's i-th tile is 3i (bank 0); a cut's i-th is 3i+1 in bank 1 or 3i+2
// in bank 2, by the cut's parity. A part of a long chunk reads one bank and fills the other.
inline int prefix_pin(int i) { return 3 * i; }
inline int cut_pin(int i, int bank) { return 3 * i + bank; }
inline int pin_bank(int pin) { return pin % 3; }
inline int other_bank(int pin) { return pin_bank(pin) == 0 ? pin : pin_bank(pin) == 1 ? pin + 1 : pin - 1; }

// Which lanes a LANE_REDUCE combines (the 4x4 tile is row-major: lane 4r+c is row r, column c): all
// sixteen, the four of each row, or the four of each column; every combined lane gets the result. For
// a LANE_BROADCAST, which lanes get one value: all sixteen take lane `lane` of the operand, each row its
// column `lane`, or each column its row `lane`. kPair (LANE_REDUCE only): lanes 2j and 2j+1, combined
// into lane 2j.
enum class LaneAxis : uint8_t { kTile, kRow, kCol, kPair };

// A node of the tile-level dataflow graph: 16 lanes computed by the same operation.
struct TileNode {
  Op op;                      // ALU op, CAST, BITCAST; LOAD marks a leaf
  DType dtype;                // result dtype
  DType from = DType::kVoid;  // CAST/BITCAST source dtype
  int a = -1, b = -1, c = -1;
  int leaf = -1;  // LOAD: its lanes are TileProgram::leaves[leaf]; -1: every lane reads the constant 0
  // A gather whose element indices are data: lanes with buf >= 0 read element `a`'s value (an int32 tile
  // computed by an earlier launch) of that buffer. The loader only moves data; it does no arithmetic.
  bool dynamic = false;
  // The load sits under a data-dependent gate: lanes whose index is out of range read 0, which the gate's
  // select then discards. Without a gate an out-of-range index is an error.
  bool gated = false;
  int mxu = -1;         // MXU_DOT: index into TileProgram::mxu (operand a: its epilogue's other input, or a
                        // seeded float block's seed)
  int pinned = -1;      // a leaf whose lanes are pinned tile #pinned (the uniform prefix's values)
  Op reduce = Op::ADD;  // LANE_REDUCE: ADD, MUL or MAX
  bool reassociable = false;        // ADD, MUL: from a REDUCE (ir.h Node::reassociable)
  LaneAxis axis = LaneAxis::kTile;  // LANE_REDUCE, LANE_BROADCAST
  uint8_t lane =
      0;  // LANE_BROADCAST: the operand's lane (kTile), column (kRow) or row (kCol); MXU_DOT: its output
};

struct TileProgram;
// A leaf whose sixteen lanes hold one constant (no gather, no pinned tile): its lane bits.
std::optional<uint32_t> uniform_bits(const TileProgram& p, const TileNode& n);
// How many of the low bits of every lane's 32 bits are zero, for certain (by the node's operations and
// constants, whatever the data): 16 or more makes each value a bfloat16's (a bfloat16 MXU's operand).
int low_zero_bits(const TileProgram& p, int node);

struct TileStore {
  int buf;
  Lanes index;
  std::array<bool, kLanes> active;
  int value;  // TileNode
  // Data-dependent stores: a bool tile gating each lane (IF on loaded data), and an int32 tile of
  // element indices (a scatter). Both are drained beside the value; the loader applies them on the way
  // out, in program order, without computing anything.
  int gate = -1;
  int index_node = -1;
  int pin = -1;  // not a memory store: keep the value as pinned tile #pin for later chunks
};

// Int8 dot products of 16 lanes on the MXU, in weight-stationary dispatches of one activation row:
// lanes 4g..4g+3 share activation row `act` (their common operand), `weight` holds each lane's other
// operand as W[k][c], and the column sums land in PSUM row g (written by a group's first dispatch,
// accumulated by the others). Rows, weights and activations name the lanes the loader fills them from
// (int8 values at launch time).
// With `os` (output-stationary, when lanes form a 4x4 block whose rows share one factor and columns
// the other): one MXU_OS dispatch per K-slice of up to 4 terms accumulates the whole 4x4 result in the
// PEs; `acts` then holds k activation rows X[.][k] (row k in lanes 4k..4k+3) and the live matrix rows
// are read back through PSUM.
// With `across` too (OS across chains, when the chains' lane groups share their weight-stationary weight
// tiles: a convolution's channels, each chain one channel): the MXU's rows are the chains, its outputs, and
// each pass (a dispatch that does not accumulate begins one) takes one group of four lanes, its `row`:
// the pass's matrix row r is that group's lanes of output r. Each output is an MXU_DOT node of the same
// `mxu`, its number in TileNode::lane.
struct MxuDot {
  struct Dispatch {
    int weight, act, row;  // row: the PSUM row (WS), the group of lanes (OS across chains)
    bool accumulate;
    int k = 1;      // OS: terms in this slice (activation rows)
    int group = 0;  // float32: the float PEs' runs of products (DISPATCH_MXU_OS_FLOAT's group)
  };
  std::vector<MxuTile> weights;  // 4x4, row-major W[k][c]
  std::vector<MxuTile> acts;     // WS: activation row a[k] in lanes 0..3
  std::vector<int> chains;       // the dot-product chains it computes (fuse_mxu_dots numbers them), by output
  std::vector<Dispatch> dispatches;
  bool os = false;
  bool across = false;
  std::array<bool, kRows> live_rows{};  // OS: matrix rows with live lanes
  // float32 (a float MXU): output-stationary on the float PEs, its terms in tinygrad's order. `seeded`: a
  // K-block after the first, which goes on from the sums of the block before (the MXU_DOT node's operand a,
  // set into the accumulators by MXU_SEED) as one launch would have.
  bool float32 = false;
  bool seeded = false;
  // A single row-0 dispatch may fold the following lane-wise int32 op into DISPATCH_MXU_VPU_EPILOGUE
  // (46): result row 0 = op(column sums, operand a's row 0).
  std::optional<VpuOpcode> epilogue_op;
  // One weight-stationary dispatch into row 0: its column sums are the result, one MXU_VPU_EPILOGUE.
  bool single_dispatch() const { return !os && dispatches.size() == 1 && dispatches[0].row == 0; }
};

// The straight-line tile program for one or more chunks of 16 lanes, in program order.
struct TileProgram {
  std::vector<TileNode> nodes;
  // The LOAD nodes' lanes, apart from the nodes: most nodes are not leaves, and a small node is cheap to
  // make, copy and keep.
  std::vector<LeafLanes> leaves;
  std::vector<TileStore> stores;
  std::vector<MxuDot> mxu;

  const LeafLanes& lanes(const TileNode& n) const {
    static const LeafLanes kZero{};
    return n.leaf < 0 ? kZero : leaves[n.leaf];
  }
  // A node's lanes to write, made on first use (the reference lasts until the next leaf is made).
  LeafLanes& lanes(TileNode& n) {
    if (n.leaf < 0) {
      n.leaf = int(leaves.size());
      leaves.emplace_back();
    }
    return leaves[n.leaf];
  }
  void clear() {
    nodes.clear();
    leaves.clear();
    stores.clear();
    mxu.clear();
  }
};

// How often each node is read (by nodes and stores), and in which lanes its value is needed: a store's
// active lanes, passed down to operands (every lane for the input of a cross-lane LANE_REDUCE).
struct NodeUses {
  std::vector<int> count;
  std::vector<std::array<bool, kLanes>> live;
};
NodeUses node_uses(const TileProgram& p);

}  // namespace tinytpu::compiler
