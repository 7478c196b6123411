#pragma once
#include <algorithm>
#include <bitset>
#include <map>
#include <optional>
#include <vector>

#include "compiler/constant_tiles.h"
#include "compiler/schedule.h"
#include "compiler/vmem_slots.h"

namespace tinytpu::compiler {

// Which constants the lowering asks for next, so that the allocator gives up the vreg of the constant asked
// for again latest (or never). A node's lowering asks for the same constants, in the same order, every time
// its op and dtype recur (learned from its first emission); a leaf operand with a uniform value asks for
// that.
class ConstantForecast {
 public:
  static constexpr int kEvents = 32;  // how far ahead a forecast looks
  ConstantForecast(const TileProgram& p, const Schedule& s,
                   const std::vector<std::optional<uint32_t>>& uniform)
      : p_(p), schedule_(s), uniform_(uniform) {}

  // Asks from here on are a leaf's constant (Emitter::fill_leaf), not its reader's lowering's.
  bool for_leaf = false;
  void begin_event(int pos) {
    pos_ = pos;
    event_asks_.clear();
  }
  void ask(Content c) {
    if (!for_leaf) event_asks_.push_back(c);
  }
  // The event's node asked for what it did: nodes of its op and dtype will ask for the same.
  void learn(const TileNode& n) { op_asks_.try_emplace(key(n), event_asks_); }

  // Calls asked(content, events ahead) for each constant asked for from the current event on, nearest first:
  // the rest of the current event's lowering (0 ahead), then the kEvents events after it, while `asked`
  // returns true.
  template <class Asked>
  void ahead(Asked asked) const {
    bool more = true;
    if (const Schedule::Event& now = schedule_.events[pos_]; now.is_node)
      if (auto it = op_asks_.find(key(p_.nodes[now.id])); it != op_asks_.end())
        for (size_t k = event_asks_.size(); k < it->second.size(); ++k) more = asked(it->second[k], 0);
    const int end = std::min(int(schedule_.events.size()), pos_ + kEvents + 1);
    for (int e = pos_ + 1; e < end && more; ++e) {
      if (!schedule_.events[e].is_node) continue;
      const TileNode& n = p_.nodes[schedule_.events[e].id];
      for (int o : {n.a, n.b, n.c})
        if (o >= 0 && is_leaf(p_, o))
          if (auto bits = uniform_[o]) more = asked(const_content(int32_t(*bits)), e - pos_);
      if (auto it = op_asks_.find(key(n)); it != op_asks_.end())
        for (Content c : it->second) more = asked(c, e - pos_);
    }
  }

 private:
  static std::pair<Op, DType> key(const TileNode& n) { return {n.op, n.dtype}; }
  const TileProgram& p_;
  const Schedule& schedule_;
  const std::vector<std::optional<uint32_t>>& uniform_;
  int pos_ = 0;  // the current event
  std::map<std::pair<Op, DType>, std::vector<Content>> op_asks_;
  std::vector<Content> event_asks_;  // the current event's lowering's asks so far
};

// Register allocation in a launch: which vregs are busy, which node each holds, and the constant each holds,
// kept after it is released until an instruction writes it, so that a later use of the constant takes the
// vreg back instead of filling another. A free vreg is one holding no constant, else the one whose constant
// the forecast asks for again latest; with none free, a leaf's vreg is taken (its slot still holds it).
class VregAllocator {
 public:
  using Set = std::bitset<TensorCoreConfig::kMaxVregs>;
  // The registers' state, which a transaction saves whole.
  struct File {
    Set busy;
    Set leaves;  // busy vregs holding a leaf
    std::array<Content, TensorCoreConfig::kMaxVregs> content{};
  };
  File file;

  VregAllocator(const TileProgram& p, int vregs) : p_(p), vregs_(vregs), vreg_(p.nodes.size(), -1) {}
  void begin_launch();
  // An event starts: its operands are marked as it reads them.
  void begin_event() {
    event_regs_.reset();
    event_undo_ = undo_.size();
  }
  // The registers between two events of the launch, to which rollback() returns (the bindings since are
  // undone).
  struct Mark {
    File file;
    size_t undo;
  };
  Mark mark() const { return {file, undo_.size()}; }
  void rollback(const Mark& m);

  // The vreg holding the node in this launch, or -1.
  int of(int node) const { return vreg_[node]; }
  void bind(int node, int r);
  // The event reads r: it is not evicted before the event ends.
  void mark_operand(int r) { event_regs_.set(r); }

  // A free vreg, made busy, or -1.
  int take_free(const ConstantForecast& forecast, const ConstantTiles& consts);
  // A free vreg still holding `content`, or -1 (take it with take()).
  int free_holding(Content content) const;
  void take(int r) { file.busy.set(r); }
  // The vreg of a leaf the current event (at `pos`) does not read, unbound (it stays busy: it changes hands);
  // -1 without: the leaf read again latest (`by_next_read`), else the one whose last read is furthest.
  int evict_leaf(const VmemSlots& slots, const Schedule& schedule, int pos, bool by_next_read);
  // The computed value in a vreg that an event after `pos` reads latest, neither read nor bound by the
  // current event; -1 without.
  int latest_read_value(const Schedule& schedule, int pos) const;
  void release(int r) {
    file.busy.reset(r);
    file.leaves.reset(r);
  }
  // An instruction writes r: it no longer holds its constant.
  void written(int r) { file.content[r % vregs_] = kNothing; }
  void hold(int r, Content c) { file.content[r] = c; }

  int busy() const { return int(file.busy.count()); }
  // Vregs a cut would save: busy ones not holding a leaf (the loader refills leaves). One count: every
  // leaf's vreg is busy but in an event past no_room, whose room checks no longer change anything.
  int spillable() const { return int((file.busy & ~file.leaves).count()); }
  // The computed values held in vregs that an event from `pos` on reads, each once and in node order.
  void live(int pos, const std::vector<int>& last_use, std::vector<int>& out) const;

 private:
  bool refillable(const VmemSlots& slots, int node) const;
  // Of the free vregs, all holding constants, the one whose constant the forecast asks for again latest.
  int latest_asked_free(const ConstantForecast& forecast, const ConstantTiles& consts) const;

  const TileProgram& p_;
  const int vregs_;
  std::vector<int> vreg_;  // node -> vreg holding it in the current launch, or -1
  // Nodes given a vreg in the current launch, and the (node, previous vreg) bindings made in it: resetting,
  // cutting and rolling back touch only these, so emission stays linear in the program's size however long
  // it is.
  std::vector<int> bound_;
  std::vector<std::pair<int, int>> undo_;
  Set event_regs_;         // operands of the current event: never evicted
  size_t event_undo_ = 0;  // undo_ when the current event began: the bindings after are its own
};

}  // namespace tinytpu::compiler
