#include "compiler/tile_program.h"

namespace tinytpu::compiler {

std::optional<uint32_t> uniform_bits(const TileProgram& p, const TileNode& n) {
  if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0) return std::nullopt;
  const LeafLanes& lanes = p.lanes(n);
  for (const auto& l : lanes)
    if (l.buf >= 0 || l.bits != lanes[0].bits) return std::nullopt;
  return lanes[0].bits;
}

NodeUses node_uses(const TileProgram& p) {
  int n = int(p.nodes.size());
  NodeUses u{std::vector<int>(n, 0), std::vector<std::array<bool, kLanes>>(n, std::array<bool, kLanes>{})};
  for (const auto& s : p.stores)
    for (int r : {s.value, s.gate, s.index_node})
      if (r >= 0) {
        ++u.count[r];
        for (int l = 0; l < kLanes; ++l) u.live[r][l] |= s.active[l];
      }
  for (int i = n - 1; i >= 0; --i) {  // operands come before their readers
    const TileNode& t = p.nodes[i];
    bool crosses = t.op == Op::LANE_REDUCE || t.op == Op::LANE_BROADCAST;  // reads lanes it does not write
    for (int o : {t.a, t.b, t.c}) {
      if (o < 0) continue;
      ++u.count[o];
      // bitwise, not ||: the lanes then combine as one vector op (this runs over every node of a batch)
      for (int l = 0; l < kLanes; ++l) u.live[o][l] |= u.live[i][l] | crosses;
    }
  }
  return u;
}

}  // namespace tinytpu::compiler
