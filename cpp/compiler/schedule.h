#pragma once
#include <array>
#include <vector>

#include "compiler/node_facts.h"
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// A leaf: lanes the loader fills (a gather), or one lane (column, row) of a gather copied to every lane (each
// row, column) by the XLU: a LANE_BROADCAST of a gather (lane_pack's broadcast operands), which the emitter
// makes from its source's vreg. Leaves are not events: each is made right before its first read in a
// launch, so it costs no register while it waits and a cut never spills it (the loader fills it again).
inline bool is_gather(const TileProgram& p, int node) { return p.nodes[node].op == Op::LOAD; }
inline bool is_broadcast_leaf(const TileProgram& p, int node) {
  const TileNode& n = p.nodes[node];
  return n.op == Op::LANE_BROADCAST && is_gather(p, n.a);
}
inline bool is_leaf(const TileProgram& p, int node) {
  return is_gather(p, node) || is_broadcast_leaf(p, node);
}

// The nodes a store reads: its value, then its gate and its element indices when it has them. (In place,
// not a vector: program order asks for a waiting store's reads after every node.)
struct StoreReads {
  std::array<int, 3> nodes;
  int count;
  const int* begin() const { return nodes.data(); }
  const int* end() const { return nodes.data() + count; }
};
StoreReads store_reads(const TileStore& s);

// The two orders a batch is emitted in (lower() emits both and keeps the cheaper):
// - kByStore: the stores in program order, each preceded by whatever it needs that is not yet computed
//   (post-order), so a value is made right before its first use and holds no register earlier;
// - kProgram: the needed nodes in program order, each store as soon as its value is (stores keep their
//   order); chains that share leaves (a matmul's upcast accumulators, which the trace updates term by term)
//   then advance together and read each leaf in one launch;
// - kInterleaved: register blocking. The stores in groups of a few that read the most leaves in common
//   (weighed by what reading one again costs), a group's events together, its stores' chains advanced term
//   by term: an event's term is the number of data leaves its chain has read up to it, and a group's events
//   go by term, then by store. The running values of a group's dot products (an accumulator, a partial sum)
//   then stay in vregs while each operand is read by every chain of the group in turn, where the other
//   orders finish one chain's terms (or all chains' at once) before the next. Only for stores that may be
//   reordered (interleavable()).
enum class EmitOrder { kByStore, kProgram, kInterleaved };

// A batch's events, the computed nodes that are not emitted by a store (NodeFacts::to_vmem) or by another
// node's event (NodeFacts::made_by) and the stores, in emission order, and the positions of each node's reads
// in it, which register allocation and the spills at a cut go by.
//
// An output-stationary MXU block is two events: its first dispatches (kDispatch) and its read-back
// (kReadBack, which makes its value). The MXU works while the SXU runs on, so each block's dispatches come
// right after the read-back of the block before it, and what reads that block's value (its epilogue, its
// store) right after them: the work of one block runs under the next one's dispatches (Emitter: it is issued
// between them).
struct Schedule {
  enum class Part : uint8_t { kWhole, kDispatch, kReadBack };
  struct Event {
    bool is_node;
    int id;  // node or store index
    Part part = Part::kWhole;
  };
  std::vector<Event> events;
  std::vector<int> last_use;  // node -> event position of its last read, -1 when nothing reads it
  // node -> the positions of the events reading it, in order: reads_at[read_start[node], read_start[node +
  // 1])
  std::vector<int> read_start, reads_at;
  // The position of the node's first read after `pos`, INT_MAX when none.
  int next_read(int node, int pos) const;
};
// `group`: kInterleaved's stores a group, at most.
Schedule schedule(const TileProgram& p, const NodeFacts& facts, EmitOrder order, int group = 0);
// Whether kInterleaved may emit the stores out of their order: plain stores, no two of one element, and no
// MXU block (those are pipelined instead).
bool interleavable(const TileProgram& p);

}  // namespace tinytpu::compiler
