#include "compiler/schedule.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
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

using Event = Schedule::Event;
using Part = Schedule::Part;

// An event of the node unless it is a leaf, emitted by its store or made by another node's event.
bool is_event(const TileProgram& p, const NodeFacts& f, int node) {
  return !is_leaf(p, node) && !f.to_vmem[node] && f.made_by[node] < 0;
}

bool is_os_dot(const TileProgram& p, int node) {
  return p.nodes[node].op == Op::MXU_DOT && p.mxu[p.nodes[node].mxu].os;
}

// A node's events: an OS MXU block's dispatches and read-back, else one.
void add_node(const TileProgram& p, int node, std::vector<Event>& events) {
  if (is_os_dot(p, node)) events.push_back({true, node, Part::kDispatch});
  events.push_back({true, node, is_os_dot(p, node) ? Part::kReadBack : Part::kWhole});
}

// The post-order of what store s reads and is not yet `done` (marked done as it goes): its events (a node
// made by another's event after that node). A node reached again while it waits for its operands reads
// itself: Unsupported (an internal fault, where the walk would otherwise grow without end).
template <class Event>
void post_order(const TileProgram& p, const NodeFacts& f, size_t s, std::vector<char>& done, Event event) {
  enum : char { kNew, kDone, kWaiting };
  std::vector<std::pair<int, int>> stack;  // node, operands looked at
  for (int root : store_reads(p.stores[s])) {
    if (done[root] == kNew) {
      done[root] = kWaiting;
      stack.push_back({root, 0});
    }
    while (!stack.empty()) {
      auto& [n, k] = stack.back();
      const TileNode& t = p.nodes[n];
      int next = -1;  // the first operand from k on not yet done
      while (k < 4 && next < 0) {
        const int o = k == 0 ? t.a : k == 1 ? t.b : k == 2 ? t.c : f.made_by[n];
        ++k;
        if (o >= 0 && done[o] != kDone) next = o;
      }
      if (next >= 0) {
        if (done[next] == kWaiting)
          throw Unsupported("internal: node " + std::to_string(next) + " reads itself (through " +
                            op_name(p.nodes[next].op) + "'s operands or an MXU block's outputs)");
        done[next] = kWaiting;
        stack.push_back({next, 0});
        continue;
      }
      done[n] = kDone;
      if (is_event(p, f, n)) event(n);
      stack.pop_back();
    }
  }
}

// kByStore: each store after the post-order of what it reads and is not yet computed (a node made by
// another's event after that node).
void store_order(const TileProgram& p, const NodeFacts& f, std::vector<Event>& events) {
  std::vector<char> done(p.nodes.size(), false);  // (bytes: this visits every node of a batch)
  for (size_t s = 0; s < p.stores.size(); ++s) {
    post_order(p, f, s, done, [&](int n) { add_node(p, n, events); });
    events.push_back({false, int(s)});
  }
}

// The nodes the stores read, directly or through operands (and the nodes making them): operands come before
// their readers, so one sweep back from the last node (a search from each store, as store_order() does,
// misses the cache).
std::vector<bool> needed(const TileProgram& p, const NodeFacts& f) {
  std::vector<bool> needed(p.nodes.size(), false);
  for (const TileStore& st : p.stores)
    for (int r : store_reads(st)) needed[r] = true;
  for (int i = int(p.nodes.size()) - 1; i >= 0; --i)
    if (needed[i])
      for (int o : {p.nodes[i].a, p.nodes[i].b, p.nodes[i].c, f.made_by[i]})
        if (o >= 0) needed[o] = true;
  return needed;
}

// The OS MXU blocks of each event node that read the same activation rows, in program order (by a hash of
// them; equal ones checked).
std::vector<std::vector<int>> alike_blocks(const TileProgram& p, const NodeFacts& f,
                                           const std::vector<bool>& need) {
  std::map<uint64_t, std::vector<int>> by_hash;
  for (int i = 0; i < int(p.nodes.size()); ++i) {
    if (!need[i] || !is_event(p, f, i) || !is_os_dot(p, i)) continue;
    uint64_t h = 0;
    for (const MxuTile& t : p.mxu[p.nodes[i].mxu].acts)
      for (const MxuLane& l : t)
        h = (h ^ (uint64_t(l.src.buf) ^ uint64_t(l.src.index) << 8 ^ uint64_t(l.src.bits) << 40 ^ l.negate)) *
            0x100000001b3ull;
    by_hash[h].push_back(i);
  }
  std::vector<std::vector<int>> out;
  for (auto& [h, nodes] : by_hash)
    if (nodes.size() > 1) out.push_back(std::move(nodes));
  return out;
}

// kProgram: the needed nodes in program order, each store as soon as every node it reads is made; an OS MXU
// block with the ones after it that read the same activation rows (they read no node but a seed: they may
// come at once when it is made), so that a launch loads those rows once for them all (blocks of one K-range
// of a matmul's row of output blocks, compile.cc's batches).
void program_order(const TileProgram& p, const NodeFacts& f, std::vector<Event>& events) {
  const std::vector<bool> need = needed(p, f);
  std::vector<bool> made(p.nodes.size(), false);
  std::vector<int> alike(p.nodes.size(), -1);  // -> its list in `lists`
  const std::vector<std::vector<int>> lists = alike_blocks(p, f, need);
  for (size_t l = 0; l < lists.size(); ++l)
    for (int n : lists[l]) alike[n] = int(l);
  size_t s = 0;
  auto ready = [&](size_t st) {
    for (int r : store_reads(p.stores[st])) {
      const int maker = f.made_by[r] >= 0 ? f.made_by[r] : r;
      if (is_event(p, f, maker) && !made[maker]) return false;
    }
    return true;
  };
  auto add = [&](int i) {
    add_node(p, i, events);
    made[i] = true;
  };
  auto seed_made = [&](int j) {  // a seeded float block reads its seed
    const int seed = p.mxu[p.nodes[j].mxu].seeded ? p.nodes[j].a : -1;
    const int maker = seed < 0 || f.made_by[seed] < 0 ? seed : f.made_by[seed];
    return maker < 0 || !is_event(p, f, maker) || made[maker];
  };
  for (int i = 0; i < int(p.nodes.size()); ++i) {
    if (need[i] && is_event(p, f, i) && !made[i]) {
      add(i);
      if (alike[i] >= 0)
        for (int j : lists[alike[i]])
          if (!made[j] && p.mxu[p.nodes[j].mxu].acts == p.mxu[p.nodes[i].mxu].acts && seed_made(j)) add(j);
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
void interleaved_order(const TileProgram& p, const NodeFacts& f, int group_size,
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
      post_order(p, f, size_t(group[chain]), done, [&](int n) {
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
      const int id = items[size_t(i)].event.id;
      auto wait_for = [&](int o) {
        if (o >= 0 && item_of[o] >= 0) {
          items[size_t(item_of[o])].readers.push_back(i);
          ++items[size_t(i)].waits;
        }
      };
      if (items[size_t(i)].event.is_node) {
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

// What each event reads: its operands' nodes (a store's value, gate and indices), and a dynamic leaf's gather
// indices and a broadcast leaf's source where the leaf is read. An OS block's dispatches read nothing but a
// seeded float block's seed, which its read-back reads too (a read-back in a later launch dispatches again).
template <class Read>
void reads_of(const TileProgram& p, const Event& e, Read read) {
  auto node = [&](int n) {
    read(n);
    if ((is_gather(p, n) && p.nodes[n].dynamic) || is_broadcast_leaf(p, n)) read(p.nodes[n].a);
  };
  if (!e.is_node) {
    for (int n : store_reads(p.stores[size_t(e.id)])) node(n);
  } else if (e.part != Part::kDispatch || p.mxu[p.nodes[size_t(e.id)].mxu].seeded) {
    for (int o : {p.nodes[size_t(e.id)].a, p.nodes[size_t(e.id)].b, p.nodes[size_t(e.id)].c})
      if (o >= 0) node(o);
  }
}

// Each node's reads (Schedule::read_start, reads_at) and last read.
void index_reads(const TileProgram& p, Schedule& s) {
  auto for_each_read = [&](auto read) {
    for (int e = 0; e < int(s.events.size()); ++e)
      reads_of(p, s.events[size_t(e)], [&](int n) { read(n, e); });
  };
  s.read_start.assign(p.nodes.size() + 1, 0);
  for_each_read([&](int node, int) { ++s.read_start[size_t(node) + 1]; });
  for (size_t i = 1; i < s.read_start.size(); ++i) s.read_start[i] += s.read_start[i - 1];
  s.reads_at.resize(size_t(s.read_start.back()));
  std::vector<int> next(s.read_start.begin(), s.read_start.end() - 1);
  s.last_use.assign(p.nodes.size(), -1);
  for_each_read([&](int node, int e) {
    s.reads_at[size_t(next[size_t(node)]++)] = e;
    s.last_use[size_t(node)] = e;
  });
}

// The pipelining of OS MXU blocks (Schedule): events move only earlier, each after what it reads, and the
// MXU's events keep their order.
class Pipeline {
 public:
  Pipeline(const TileProgram& p, const NodeFacts& f, const std::vector<Event>& events)
      : p_(p), f_(f), in_(events), placed_(events.size(), false), waiting_(events.size(), 0) {}

  std::vector<Event> run() {
    link();
    std::vector<int> next_mxu(in_.size() + 1, int(in_.size()));  // the first MXU event from each on
    for (int e = int(in_.size()) - 1; e >= 0; --e) next_mxu[e] = mxu(e) ? e : next_mxu[e + 1];
    for (int e = 0; e < int(in_.size()); ++e) {
      if (placed_[e]) continue;
      place(e);
      if (in_[e].part != Part::kReadBack) continue;
      const int next = next_mxu[e + 1];
      if (next < int(in_.size()) && in_[next].part == Part::kDispatch && waiting_[next] == 0) {  // (a seed)
        place(next);
        pull(e);
      }
    }
    return std::move(out_);
  }

 private:
  const TileProgram& p_;
  const NodeFacts& f_;
  const std::vector<Event>& in_;
  std::vector<Event> out_;
  std::vector<bool> placed_;
  std::vector<int> waiting_;  // per event: the events it reads not yet placed
  std::vector<int> first_reader_,
      readers_;              // per event, the events reading it: readers_[first_reader_[e]...]
  std::vector<int> stores_;  // the store events, in order
  size_t open_store_ = 0;    // stores_ before it are placed

  // Whether the event uses the MXU: an MXU block's events, a store of an MXU result it writes itself.
  bool mxu(int e) const {
    const Event& ev = in_[e];
    if (ev.is_node) return p_.nodes[ev.id].op == Op::MXU_DOT;
    for (int n : store_reads(p_.stores[ev.id]))
      if (f_.to_vmem[n]) return true;
    return false;
  }

  // The events each event reads (a node made by another's event: that event; leaves: none).
  void link() {
    std::vector<int> maker(p_.nodes.size(), -1);
    for (int e = 0; e < int(in_.size()); ++e)
      if (!in_[e].is_node)
        stores_.push_back(e);
      else if (in_[e].part != Part::kDispatch)
        maker[in_[e].id] = e;
    std::vector<std::pair<int, int>> edges;  // (read event, reader)
    for (int e = 0; e < int(in_.size()); ++e)
      reads_of(p_, in_[e], [&](int n) {
        const int m = maker[f_.made_by[n] >= 0 ? f_.made_by[n] : n];
        if (m >= 0) edges.push_back({m, e});
      });
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    first_reader_.assign(in_.size() + 1, 0);
    for (auto [from, to] : edges) {
      ++first_reader_[from + 1];
      ++waiting_[to];
      readers_.push_back(to);
    }
    for (size_t e = 0; e < in_.size(); ++e) first_reader_[e + 1] += first_reader_[e];
  }

  void place(int e) {
    out_.push_back(in_[e]);
    placed_[e] = true;
    for (int r = first_reader_[e]; r < first_reader_[e + 1]; ++r) --waiting_[readers_[r]];
  }

  // The events that read e's value, directly or through others pulled, as soon as all they read is placed.
  void pull(int e) {
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // in their order
    auto offer = [&](int from) {
      for (int r = first_reader_[from]; r < first_reader_[from + 1]; ++r) {
        const int reader = readers_[r];
        if (!placed_[reader] && waiting_[reader] == 0 && !mxu(reader)) ready.push(reader);
      }
    };
    offer(e);
    while (!ready.empty()) {
      const int r = ready.top();
      ready.pop();
      if (placed_[r] || (!in_[r].is_node && !store_may_move(r))) continue;
      place(r);
      offer(r);
    }
  }

  // A store moves before earlier stores only when each writes other elements than it: static stores (no data
  // gate or indices) to other buffers or other elements, or pinned tiles.
  bool store_may_move(int e) {
    constexpr int kLookBack = 64;  // earlier stores compared, at most
    while (open_store_ < stores_.size() && placed_[stores_[open_store_]]) ++open_store_;
    const TileStore& s = p_.stores[in_[e].id];
    int compared = 0;
    for (size_t i = open_store_; i < stores_.size() && stores_[i] < e; ++i) {
      const int o = stores_[i];
      if (placed_[o]) continue;
      if (++compared > kLookBack || !apart(p_.stores[in_[o].id], s)) return false;
    }
    return true;
  }
  static bool apart(const TileStore& a, const TileStore& b) {
    if (a.pin >= 0 || b.pin >= 0) return true;
    if (a.gate >= 0 || b.gate >= 0 || a.index_node >= 0 || b.index_node >= 0) return false;
    if (a.buf != b.buf) return true;
    for (int i = 0; i < kLanes; ++i)
      for (int j = 0; j < kLanes; ++j)
        if (a.active[i] && b.active[j] && a.index[i] == b.index[j]) return false;
    return true;
  }
};

}  // namespace

Schedule schedule(const TileProgram& p, const NodeFacts& facts, EmitOrder order, int group) {
  Schedule s;
  s.events.reserve(p.nodes.size() + p.stores.size());
  if (order == EmitOrder::kProgram)
    program_order(p, facts, s.events);
  else if (order == EmitOrder::kInterleaved)
    interleaved_order(p, facts, group, s.events);
  else
    store_order(p, facts, s.events);
  if (!p.mxu.empty()) s.events = Pipeline(p, facts, s.events).run();
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
  if (!p.mxu.empty()) return false;  // MXU blocks are pipelined instead (Schedule)
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
