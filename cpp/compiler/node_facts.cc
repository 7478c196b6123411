#include "compiler/node_facts.h"

#include "compiler/value_ranges.h"

namespace tinytpu::compiler {

NodeFacts::NodeFacts(const TileProgram& p)
    : to_vmem(p.nodes.size(), false),
      in_range(ValueRanges(p).in_range),
      made_by(p.nodes.size(), -1),
      outputs(p.mxu.size()) {
  uniform.reserve(p.nodes.size());
  for (const TileNode& n : p.nodes) uniform.push_back(uniform_bits(p, n));
  if (p.mxu.empty()) return;  // no MXU results (counting uses is a pass over a whole batch)
  for (int i = 0; i < int(p.nodes.size()); ++i) {
    const TileNode& n = p.nodes[i];
    if (n.op != Op::MXU_DOT || !p.mxu[n.mxu].across) continue;
    std::vector<int>& out = outputs[n.mxu];
    if (out.empty()) {
      out.assign(p.mxu[n.mxu].chains.size(), -1);
    } else {  // (nodes come in program order: the first found makes the others)
      for (int o : out)
        if (o >= 0 && made_by[o] < 0) made_by[i] = o;
    }
    out[n.lane] = i;
  }
  const std::vector<int> reads = node_uses(p).count;
  for (const TileStore& st : p.stores) {
    const TileNode& n = p.nodes[st.value];
    if (n.op != Op::MXU_DOT || reads[st.value] != 1 || n.a >= 0) continue;
    const MxuDot& m = p.mxu[n.mxu];
    to_vmem[st.value] = m.single_dispatch() && !m.epilogue_op;
  }
}

}  // namespace tinytpu::compiler
