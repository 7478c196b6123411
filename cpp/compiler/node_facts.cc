#include "compiler/node_facts.h"

#include "compiler/value_ranges.h"

namespace tinytpu::compiler {

NodeFacts::NodeFacts(const TileProgram& p) : to_vmem(p.nodes.size(), false), in_range(ValueRanges(p).in_range) {
  uniform.reserve(p.nodes.size());
  for (const TileNode& n : p.nodes) uniform.push_back(uniform_bits(p, n));
  if (p.mxu.empty()) return;  // no MXU results (counting uses is a pass over a whole batch)
  const std::vector<int> reads = node_uses(p).count;
  for (const TileStore& st : p.stores) {
    const TileNode& n = p.nodes[st.value];
    if (n.op != Op::MXU_DOT || reads[st.value] != 1 || n.a >= 0) continue;
    const MxuDot& m = p.mxu[n.mxu];
    to_vmem[st.value] = m.single_dispatch() && !m.epilogue_op;
  }
}

}  // namespace tinytpu::compiler
