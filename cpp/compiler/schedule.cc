#include "compiler/schedule.h"

namespace tinytpu::compiler {

StoreReads store_reads(const TileStore& s) {
  StoreReads r{{s.value}, 1};
  if (s.gate >= 0) r.nodes[r.count++] = s.gate;
  if (s.index_node >= 0) r.nodes[r.count++] = s.index_node;
  return r;
}

namespace {

// An event of the node unless it is a leaf or emitted by its store.
bool is_event(const TileProgram& p, const std::vector<bool>& to_vmem, int node) {
  return !is_leaf(p, node) && !to_vmem[node];
}

// kByStore: each store after the post-order of what it reads and is not yet computed.
void store_order(const TileProgram& p, const std::vector<bool>& to_vmem,
                 std::vector<Schedule::Event>& events) {
  std::vector<char> done(p.nodes.size(), false);  // (bytes: this visits every node of a batch)
  std::vector<std::pair<int, int>> stack;         // node, operands looked at
  for (size_t s = 0; s < p.stores.size(); ++s) {
    for (int root : store_reads(p.stores[s])) {
      if (!done[root]) stack.push_back({root, 0});
      while (!stack.empty()) {
        auto& [n, k] = stack.back();
        const TileNode& t = p.nodes[n];
        int next = -1;  // the first operand from k on not yet done
        while (k < 3 && next < 0) {
          const int o = k == 0 ? t.a : k == 1 ? t.b : t.c;
          ++k;
          if (o >= 0 && !done[o]) next = o;
        }
        if (next >= 0) {
          stack.push_back({next, 0});
          continue;
        }
        done[n] = true;
        if (is_event(p, to_vmem, n)) events.push_back({true, n});
        stack.pop_back();
      }
    }
    events.push_back({false, int(s)});
  }
}

// The nodes the stores read, directly or through operands: operands come before their readers, so one
// sweep back from the last node (a search from each store, as store_order() does, misses the cache).
std::vector<bool> needed(const TileProgram& p) {
  std::vector<bool> needed(p.nodes.size(), false);
  for (const TileStore& st : p.stores)
    for (int r : store_reads(st)) needed[r] = true;
  for (int i = int(p.nodes.size()) - 1; i >= 0; --i)
    if (needed[i])
      for (int o : {p.nodes[i].a, p.nodes[i].b, p.nodes[i].c})
        if (o >= 0) needed[o] = true;
  return needed;
}

// kProgram: the needed nodes in program order, each store as soon as every node it reads is made.
void program_order(const TileProgram& p, const std::vector<bool>& to_vmem,
                   std::vector<Schedule::Event>& events) {
  const std::vector<bool> need = needed(p);
  std::vector<bool> made(p.nodes.size(), false);
  size_t s = 0;
  auto ready = [&](size_t st) {
    for (int r : store_reads(p.stores[st]))
      if (is_event(p, to_vmem, r) && !made[r]) return false;
    return true;
  };
  for (int i = 0; i < int(p.nodes.size()); ++i) {
    if (need[i] && is_event(p, to_vmem, i)) {
      events.push_back({true, i});
      made[i] = true;
    }
    while (s < p.stores.size() && ready(s)) events.push_back({false, int(s++)});
  }
}

// Each node's last read: by a node or a store, and a dynamic leaf's gather indices where the leaf is read.
std::vector<int> last_uses(const TileProgram& p, const std::vector<Schedule::Event>& events) {
  std::vector<int> last_use(p.nodes.size(), -1);
  auto read = [&](int node, int e) {
    last_use[node] = e;
    if (is_leaf(p, node) && p.nodes[node].dynamic) last_use[p.nodes[node].a] = e;  // its gather indices
  };
  for (int e = 0; e < int(events.size()); ++e) {
    auto [is_node, id] = events[e];
    if (!is_node) {
      for (int n : store_reads(p.stores[id])) read(n, e);
      continue;
    }
    for (int o : {p.nodes[id].a, p.nodes[id].b, p.nodes[id].c})
      if (o >= 0) read(o, e);
  }
  return last_use;
}

}  // namespace

Schedule schedule(const TileProgram& p, const std::vector<bool>& to_vmem, EmitOrder order) {
  Schedule s;
  s.events.reserve(p.nodes.size() + p.stores.size());
  if (order == EmitOrder::kProgram)
    program_order(p, to_vmem, s.events);
  else
    store_order(p, to_vmem, s.events);
  s.last_use = last_uses(p, s.events);
  return s;
}

}  // namespace tinytpu::compiler
