#include "compiler/schedule.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <set>
#include <tuple>

#include "compiler/cost.h"
#include "isa/instr_builders.h"

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

// The post-order of what store s reads and is not yet `done` (marked done as it goes): its events.
template <class Event>
void post_order(const TileProgram& p, const std::vector<bool>& to_vmem, size_t s, std::vector<char>& done,
                Event event) {
  std::vector<std::pair<int, int>> stack;  // node, operands looked at
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
      if (is_event(p, to_vmem, n)) event(n);
      stack.pop_back();
    }
  }
}

// kByStore: each store after the post-order of what it reads and is not yet computed.
void store_order(const TileProgram& p, const std::vector<bool>& to_vmem,
                 std::vector<Schedule::Event>& events) {
  std::vector<char> done(p.nodes.size(), false);  // (bytes: this visits every node of a batch)
  for (size_t s = 0; s < p.stores.size(); ++s) {
    post_order(p, to_vmem, s, done, [&](int n) { events.push_back({true, n}); });
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

// What reading a leaf again costs by the estimate (cost.h): a gather's fill record and LOAD, a broadcast
// leaf's XLU broadcast; nothing for a constant (VZERO, VFILL or the palette's broadcast, in any order).
int reread_cycles(const TileProgram& p, int leaf) {
  static const int kGather = int(estimated_cycles(1, {instr::load(0, 0)})),
                   kBroadcast = int(estimated_cycles(0, {instr::broadcast_scalar(0, 0, 0, 0)}));
  if (is_broadcast_leaf(p, leaf)) return kBroadcast;
  return uniform_bits(p, p.nodes[leaf]) ? 0 : kGather;
}

constexpr int kGroupWindow = 64;      // unassigned stores ahead that a group looks at for its next member
constexpr int kLeafSearch = 1 << 12;  // nodes under a store looked at for its leaves

// kInterleaved's groups of stores, each of up to `size`: a group starts at the first store not in one and
// takes, one at a time, the store whose leaves the group already reads cost the most to read again, while
// there is one that shares any.
std::vector<std::vector<int>> store_groups(const TileProgram& p, int size) {
  const int stores = int(p.stores.size());
  std::vector<std::vector<std::pair<int, int>>> leaves(stores);  // per store: (leaf, cycles to read it)
  std::vector<int> seen(p.nodes.size(), -1);
  for (int s = 0; s < stores; ++s) {
    const StoreReads reads = store_reads(p.stores[size_t(s)]);
    std::vector<int> walk(reads.begin(), reads.end());
    for (int budget = kLeafSearch; !walk.empty() && budget > 0; --budget) {
      const int i = walk.back();
      walk.pop_back();
      if (seen[i] == s) continue;
      seen[i] = s;
      if (!is_leaf(p, i)) {
        for (int o : {p.nodes[i].a, p.nodes[i].b, p.nodes[i].c})
          if (o >= 0) walk.push_back(o);
      } else if (const int cycles = reread_cycles(p, i)) {
        leaves[s].push_back({i, cycles});
      }
    }
  }
  std::vector<int> holder(p.nodes.size(), -1);  // leaf -> the last group that reads it
  std::vector<bool> taken(stores, false);
  std::vector<std::vector<int>> groups;
  auto join = [&](int s) {
    groups.back().push_back(s);
    taken[s] = true;
    for (auto [leaf, cycles] : leaves[s]) holder[leaf] = int(groups.size()) - 1;
  };
  for (int s = 0; s < stores; ++s) {
    if (taken[s]) continue;
    groups.emplace_back();
    join(s);
    while (int(groups.back().size()) < size) {
      int best = -1, most = 0;
      for (int t = s + 1, looked = 0; t < stores && looked < kGroupWindow; ++t) {
        if (taken[t]) continue;
        ++looked;
        int shared = 0;
        for (auto [leaf, cycles] : leaves[t]) shared += holder[leaf] == int(groups.size()) - 1 ? cycles : 0;
        if (shared > most) std::tie(best, most) = std::pair{t, shared};
      }
      if (best < 0) break;
      join(best);
    }
  }
  return groups;
}

// Whether a node reads a data leaf (a gather of data, or a broadcast leaf): a term of its chain.
bool reads_data(const TileProgram& p, int node) {
  for (int o : {p.nodes[node].a, p.nodes[node].b, p.nodes[node].c})
    if (o >= 0 && is_leaf(p, o) && reread_cycles(p, o) > 0) return true;
  return false;
}

// kInterleaved: per group, its stores' post-orders (a node reached by an earlier store is that store's),
// each event numbered with its chain's term; then the group's events in the order of (term, store, post-order
// position) among those whose operands are made (a node two chains share may come late in the first's).
void interleaved_order(const TileProgram& p, const std::vector<bool>& to_vmem, int group_size,
                       std::vector<Schedule::Event>& events) {
  struct Item {
    std::tuple<int, int, int> key;  // term, chain, position
    Schedule::Event event;
    int waits = 0;             // operands not yet emitted
    std::vector<int> readers;  // items that wait for it
  };
  std::vector<char> done(p.nodes.size(), false);
  std::vector<int> item_of(p.nodes.size(), -1);  // node -> its item in the current group
  for (const std::vector<int>& group : store_groups(p, group_size)) {
    std::vector<Item> items;
    for (int chain = 0; chain < int(group.size()); ++chain) {
      int term = 0;
      post_order(p, to_vmem, size_t(group[chain]), done, [&](int n) {
        term += reads_data(p, n);
        item_of[n] = int(items.size());
        items.push_back({{term, chain, int(items.size())}, {true, n}});
      });
      items.push_back({{term, chain, int(items.size())}, {false, group[chain]}});
    }
    std::priority_queue<std::pair<std::tuple<int, int, int>, int>,
                        std::vector<std::pair<std::tuple<int, int, int>, int>>, std::greater<>>
        ready;
    for (int i = 0; i < int(items.size()); ++i) {
      auto [is_node, id] = items[size_t(i)].event;
      auto wait_for = [&](int o) {
        if (o >= 0 && item_of[o] >= 0) {
          items[size_t(item_of[o])].readers.push_back(i);
          ++items[size_t(i)].waits;
        }
      };
      if (is_node) {
        for (int o : {p.nodes[id].a, p.nodes[id].b, p.nodes[id].c}) wait_for(o);
      } else {
        for (int o : store_reads(p.stores[id])) wait_for(o);
      }
      if (items[size_t(i)].waits == 0) ready.push({items[size_t(i)].key, i});
    }
    while (!ready.empty()) {
      const Item& it = items[size_t(ready.top().second)];
      ready.pop();
      events.push_back(it.event);
      for (int r : it.readers)
        if (--items[size_t(r)].waits == 0) ready.push({items[size_t(r)].key, r});
    }
    for (const Item& it : items)
      if (it.event.is_node) item_of[it.event.id] = -1;
  }
}

// Calls read(node, position) for each read of a node by an event, in order: by a node or a store, and a
// dynamic leaf's gather indices and a broadcast leaf's source where the leaf is read.
template <class Read>
void for_each_read(const TileProgram& p, const std::vector<Schedule::Event>& events, Read read) {
  auto leaf_read = [&](int node, int e) {
    read(node, e);
    if ((is_gather(p, node) && p.nodes[node].dynamic) || is_broadcast_leaf(p, node)) read(p.nodes[node].a, e);
  };
  for (int e = 0; e < int(events.size()); ++e) {
    auto [is_node, id] = events[size_t(e)];
    if (!is_node) {
      for (int n : store_reads(p.stores[size_t(id)])) leaf_read(n, e);
      continue;
    }
    for (int o : {p.nodes[size_t(id)].a, p.nodes[size_t(id)].b, p.nodes[size_t(id)].c})
      if (o >= 0) leaf_read(o, e);
  }
}

// Each node's reads (Schedule::read_start, reads_at) and last read.
void index_reads(const TileProgram& p, Schedule& s) {
  s.read_start.assign(p.nodes.size() + 1, 0);
  for_each_read(p, s.events, [&](int node, int) { ++s.read_start[size_t(node) + 1]; });
  for (size_t i = 1; i < s.read_start.size(); ++i) s.read_start[i] += s.read_start[i - 1];
  s.reads_at.resize(size_t(s.read_start.back()));
  std::vector<int> next(s.read_start.begin(), s.read_start.end() - 1);
  s.last_use.assign(p.nodes.size(), -1);
  for_each_read(p, s.events, [&](int node, int e) {
    s.reads_at[size_t(next[size_t(node)]++)] = e;
    s.last_use[size_t(node)] = e;
  });
}

}  // namespace

Schedule schedule(const TileProgram& p, const std::vector<bool>& to_vmem, EmitOrder order, int group) {
  Schedule s;
  s.events.reserve(p.nodes.size() + p.stores.size());
  if (order == EmitOrder::kProgram)
    program_order(p, to_vmem, s.events);
  else if (order == EmitOrder::kInterleaved)
    interleaved_order(p, to_vmem, group, s.events);
  else
    store_order(p, to_vmem, s.events);
  index_reads(p, s);
  return s;
}

int Schedule::next_read(int node, int pos) const {
  const auto first = reads_at.begin() + read_start[size_t(node)],
             end = reads_at.begin() + read_start[size_t(node) + 1];
  const auto it = std::upper_bound(first, end, pos);
  return it == end ? INT_MAX : *it;
}

bool interleavable(const TileProgram& p) {
  std::set<std::pair<int, int64_t>> elements;
  for (const TileStore& st : p.stores) {
    if (st.gate >= 0 || st.index_node >= 0) return false;
    if (st.pin >= 0) continue;
    for (int l = 0; l < kLanes; ++l)
      if (st.active[l] && !elements.insert({st.buf, st.index[l]}).second) return false;
  }
  return true;
}

}  // namespace tinytpu::compiler
