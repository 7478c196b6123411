#pragma once
#include <array>
#include <vector>

#include "compiler/node_facts.h"
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// A leaf: lanes the loader fills. Leaves are not events: each is filled right before its first read in a
// launch, so it costs no register while it waits and a cut never spills it (the loader fills it again).
inline bool is_leaf(const TileProgram& p, int node) { return p.nodes[node].op == Op::LOAD; }

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
//   then advance together and read each leaf in one launch.
enum class EmitOrder { kByStore, kProgram };

// A batch's events, the computed nodes that are not emitted by a store (NodeFacts::to_vmem) or by another
// node's event (NodeFacts::made_by) and the stores, in emission order, and the position of each node's last
// read in it, which register allocation and the spills at a cut go by.
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
};
Schedule schedule(const TileProgram& p, const NodeFacts& facts, EmitOrder order);

}  // namespace tinytpu::compiler
