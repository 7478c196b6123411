#include "compiler/tile_program.h"

#include <algorithm>
#include <functional>

namespace tinytpu::compiler {

std::optional<uint32_t> uniform_bits(const TileProgram& p, const TileNode& n) {
  if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0) return std::nullopt;
  const LeafLanes& lanes = p.lanes(n);
  for (const auto& l : lanes)
    if (l.buf >= 0 || l.bits != lanes[0].bits) return std::nullopt;
  return lanes[0].bits;
}

int low_zero_bits(const TileProgram& p, int node) {
  constexpr int kDepth = 24;  // deeper operations count as unknown (a bfloat16's decoding is a few deep)
  std::function<int(int, int)> zeros = [&](int i, int depth) -> int {
    if (i < 0 || depth > kDepth) return 0;
    const TileNode& n = p.nodes[size_t(i)];
    const bool integer = !is_float(n.dtype);
    auto of = [&](int o) { return zeros(o, depth + 1); };
    switch (n.op) {
      case Op::LOAD: {
        const auto bits = uniform_bits(p, n);
        return bits ? (*bits ? __builtin_ctz(*bits) : 32) : 0;
      }
      case Op::BITCAST:  // the same 32 bits
        return of(n.a);
      case Op::CAST:  // between integers the low bits stay (widened or wrapped)
        return integer && !is_float(n.from) ? of(n.a) : 0;
      case Op::NEG:  // an integer's -x ends in as many zeros as x; a float's flips its sign bit
        return integer ? of(n.a) : std::min(of(n.a), 31);
      case Op::SHL: {
        const auto by = uniform_bits(p, p.nodes[size_t(n.b)]);
        return integer && by && *by < 32 ? std::min(32, of(n.a) + int(*by)) : 0;
      }
      case Op::MUL:
        return integer ? std::min(32, of(n.a) + of(n.b)) : 0;
      case Op::AND:
        return integer ? std::max(of(n.a), of(n.b)) : 0;
      case Op::OR:
      case Op::XOR:
      case Op::ADD:
      case Op::SUB:
        return integer ? std::min(of(n.a), of(n.b)) : 0;
      case Op::WHERE:  // either value (floats included: a select moves bits)
        return std::min(of(n.b), of(n.c));
      default:
        return 0;
    }
  };
  return zeros(node, 0);
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
