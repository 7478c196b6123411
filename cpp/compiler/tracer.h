#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "compiler/ir.h"

namespace tinytpu::compiler {

constexpr int kLanes = 16;
using Lanes = std::array<int64_t, kLanes>;

// One lane's operand of a leaf tile: an element of a kernel buffer, or a constant (32-bit pattern).
struct LeafLane {
  int buf = -1;  // PARAM slot; -1 for a constant
  int64_t index = 0;
  uint32_t bits = 0;
};

// A node of the tile-level dataflow graph: 16 lanes computed by the same operation.
struct TileNode {
  Op op;                      // ALU op, CAST, BITCAST; LOAD marks a leaf
  DType dtype;                // result dtype
  DType from = DType::kVoid;  // CAST/BITCAST source dtype
  int a = -1, b = -1, c = -1;
  std::array<LeafLane, kLanes> leaf{};
  // A gather whose element indices are data: lanes with buf >= 0 read element `a`'s value (an int32 tile
  // computed by an earlier launch) of that buffer. The loader only moves data; it does no arithmetic.
  bool dynamic = false;
  // The load sits under a data-dependent gate: lanes whose index is out of range read 0, which the gate's
  // select then discards. Without a gate an out-of-range index is an error.
  bool gated = false;
  int mxu = -1;  // MXU_DOT: index into TileProgram::mxu
};

struct TileStore {
  int after;  // emitted once this many tile nodes exist (keeps stores in program order)
  int buf;
  Lanes index;
  std::array<bool, kLanes> active;
  int value;  // TileNode
  // Data-dependent stores: a bool tile gating each lane (IF on loaded data), and an int32 tile of
  // element indices (a scatter). Both are drained beside the value; the loader applies them on the way
  // out, in program order, without computing anything.
  int gate = -1;
  int index_node = -1;
};

// The straight-line tile program for one or more chunks of 16 lanes, in program order.
// Int8 dot products of 16 lanes on the MXU, in weight-stationary dispatches of one activation row:
// lanes 4g..4g+3 share activation row `act` (their common operand), `weight` holds each lane's other
// operand as W[k][c], and the column sums land in PSUM row g (written by a group's first dispatch,
// accumulated by the others). Rows, weights and activations are int8 values read at launch time.
struct MxuDot {
  struct Dispatch {
    int weight, act, row;
    bool accumulate;
  };
  std::vector<std::array<int32_t, 16>> weights;  // 4x4, row-major W[k][c]
  std::vector<std::array<int32_t, 16>> acts;     // activation rows a[k] in lanes 0..3
  std::vector<Dispatch> dispatches;
};

struct TileProgram {
  std::vector<TileNode> nodes;
  std::vector<TileStore> stores;
  std::vector<MxuDot> mxu;
};

// Maps the kernel's iteration space onto lanes: every RANGE outside all REDUCE ranges is lane-parallel,
// and 16 consecutive points of their flattened product form a chunk; REDUCE ranges and everything else
// are unrolled while tracing. Index arithmetic is evaluated per lane here, so loads and stores carry
// concrete element indices: the data plan gathers and scatters them.
class Tracer {
 public:
  Tracer(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& buffer_sizes);
  int64_t num_chunks() const { return (points_ + kLanes - 1) / kLanes; }
  void trace_chunk(int64_t chunk, TileProgram& out);

 private:
  const Kernel& k_;
  std::vector<int64_t> vals_, sizes_;
  std::vector<int> parallel_;    // lane-parallel RANGE nodes, outermost first
  std::vector<int64_t> bounds_;  // their trip counts
  int64_t points_ = 1;
  int64_t uniform_value(int node, const std::vector<int64_t>& known) const;
};

}  // namespace tinytpu::compiler
