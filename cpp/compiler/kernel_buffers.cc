#include "compiler/kernel_buffers.h"

#include <vector>

namespace tinytpu::compiler {

int pointer_base(const Kernel& k, int node) {
  while (node >= 0 && (k.nodes[node].op == Op::INDEX || k.nodes[node].op == Op::AFTER))
    node = k.nodes[node].src.empty() ? -1 : k.nodes[node].src[0];
  return node;
}

BuffersTouched buffers_touched(const Kernel& k) {
  BuffersTouched t;
  for (const Node& n : k.nodes) {
    if (n.op != Op::STORE && n.op != Op::LOAD) continue;
    const int base = n.src.empty() ? -1 : pointer_base(k, n.src[0]);
    const bool global = base >= 0 && k.nodes[base].op == Op::PARAM && k.nodes[base].global;
    if (global) (n.op == Op::STORE ? t.written : t.read).insert(int(k.nodes[base].ivalue));
    if (n.op == Op::LOAD && !global && (base < 0 || k.nodes[base].op != Op::BUFFER))
      t.reads_unknown = true;  // a pointer of another kind: any buffer may be read
  }
  return t;
}

std::set<int> rows_picked_by_variables(const Kernel& k) {
  std::vector<bool> on_variable(k.nodes.size(), false);  // the node's value depends on a scalar variable
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const Node& n = k.nodes[i];
    on_variable[i] = n.op == Op::PARAM && !n.global;
    for (int s : n.src)
      on_variable[i] = on_variable[i] || (s >= 0 && size_t(s) < i && on_variable[size_t(s)]);
  }
  std::set<int> picked, fixed;
  for (const Node& n : k.nodes) {
    if (n.op != Op::LOAD || n.src.empty()) continue;
    const int base = pointer_base(k, n.src[0]);
    if (base < 0 || k.nodes[base].op != Op::PARAM || !k.nodes[base].global) continue;
    const Node& index = k.nodes[n.src[0]];
    const bool by_variable =
        index.op == Op::INDEX && index.src.size() > 1 && on_variable[size_t(index.src[1])];
    (by_variable ? picked : fixed).insert(int(k.nodes[base].ivalue));
  }
  for (int slot : fixed) picked.erase(slot);
  return picked;
}

}  // namespace tinytpu::compiler
