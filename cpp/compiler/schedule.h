#pragma once
#include <array>
#include <vector>

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

// A batch's events, the computed nodes that are not emitted by a store (NodeFacts::to_vmem) and the stores,
// in emission order, and the position of each node's last read in it, which register allocation and the
// spills at a cut go by.
struct Schedule {
  struct Event {
    bool is_node;
    int id;  // node or store index
  };
  std::vector<Event> events;
  std::vector<int> last_use;  // node -> event position of its last read, -1 when nothing reads it
};
Schedule schedule(const TileProgram& p, const std::vector<bool>& to_vmem, EmitOrder order);

}  // namespace tinytpu::compiler
