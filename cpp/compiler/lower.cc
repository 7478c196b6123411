#include "compiler/lower.h"

#include <algorithm>
#include <bitset>
#include <map>

#include "base/fp32.h"
#include "compiler/cost.h"
#include "compiler/op_table.h"
#include "isa/instr_builders.h"

namespace tinytpu::compiler {

namespace {

// A launch's limits, from the configuration: program memory (the code and its HALT), VMEM tiles, vregs,
// output records, and WMEM tiles / AMEM rows for the MXU.
struct Limits {
  int instrs, slots, vregs, drains, mxu_entries;
  explicit Limits(const TensorCoreConfig& c)
      : instrs(c.prog_depth - 1),
        slots(c.depth),
        vregs(c.vregs),
        drains(c.max_outputs),
        mxu_entries(c.depth) {}
};
// The limits an event can find full (Emitter::no_room), named in the decision log.
constexpr const char* kNoInstrs = "instructions";
constexpr const char* kNoSlots = "VMEM tiles";
constexpr const char* kNoOutputs = "outputs";
constexpr const char* kNoVregs = "vregs";

// The VPU reduce opcode of a LANE_REDUCE (the op table's reduce columns): integer ones wrap, the float
// sum rounds per add.
VpuOpcode lane_reduce_opcode(const TileNode& n) {
  const OpInfo& o = op_info(n.reduce);
  const std::optional<ReduceOps>& ops = is_float(n.dtype) ? o.f32_reduce : o.int_reduce;
  if (!ops)
    throw Unsupported("internal: LANE_REDUCE of " + std::string(o.name) + " on " + dtype_name(n.dtype));
  switch (n.axis) {
    case LaneAxis::kTile:
      return ops->tile;
    case LaneAxis::kRow:
      return ops->row;
    case LaneAxis::kCol:
      return ops->col;
    case LaneAxis::kPair:  // a rotate, then the op itself
      return is_float(n.dtype) ? *o.f32_op : *o.int_op;
  }
  throw Unsupported("internal: LANE_REDUCE axis");
}

bool narrow(DType d) { return d == DType::kI8 || d == DType::kU8 || d == DType::kI16 || d == DType::kU16; }

enum class EmitOrder { kByStore, kProgram };

// The signed values a signed integer lane may hold ([lo, hi]); unsigned and float nodes are not bounded.
struct ValueRange {
  int64_t lo, hi;
  bool within(const ValueRange& r) const { return lo >= r.lo && hi <= r.hi; }
};
std::optional<ValueRange> dtype_range(DType d) {
  switch (d) {
    case DType::kI8:
      return ValueRange{INT8_MIN, INT8_MAX};
    case DType::kI16:
      return ValueRange{INT16_MIN, INT16_MAX};
    case DType::kI32:
      return ValueRange{INT32_MIN, INT32_MAX};
    default:
      return std::nullopt;
  }
}

// What both emission orders read of the program, found once for the two.
struct NodeFacts {
  // node -> uniform_bits(), which the vreg forecast asks for every leaf read in the events ahead
  std::vector<std::optional<uint32_t>> uniform;
  // MXU results that one store alone reads as they are, from a single weight-stationary dispatch: the
  // MXU_VPU_EPILOGUE writes them straight into the store's output slot (no vreg, no STORE). They are
  // not events of their own; the store emits them.
  std::vector<bool> to_vmem;

  // Narrow integer results whose lanes hold a value of their dtype's range before any wrap, so that the
  // wrap (emit_node) would change nothing: the larger of two such values, a select of them, a cast of a
  // value the program has already bounded (a clamp, say).
  std::vector<bool> in_range;

  explicit NodeFacts(const TileProgram& p) : to_vmem(p.nodes.size(), false), in_range(p.nodes.size(), false) {
    uniform.reserve(p.nodes.size());
    for (const TileNode& n : p.nodes) uniform.push_back(uniform_bits(p, n));
    bound_values(p);
    if (p.mxu.empty()) return;  // no MXU results (counting uses is a pass over a whole batch)
    const std::vector<int> reads = node_uses(p).count;
    for (const TileStore& st : p.stores) {
      const TileNode& n = p.nodes[st.value];
      if (n.op != Op::MXU_DOT || reads[st.value] != 1 || n.a >= 0) continue;
      const MxuDot& m = p.mxu[n.mxu];
      to_vmem[st.value] = m.single_dispatch() && !m.epilogue_op;
    }
  }

 private:
  // The values of signed integer nodes, in program order (operands first), and in_range from them.
  void bound_values(const TileProgram& p) {
    std::vector<std::optional<ValueRange>> range(p.nodes.size());
    auto of = [&](int i) { return i >= 0 ? range[i] : std::nullopt; };
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const TileNode& n = p.nodes[i];
      const std::optional<ValueRange> full = dtype_range(n.dtype);
      if (!full) continue;
      std::optional<ValueRange> r;  // the value before any wrap
      const auto a = of(n.a), b = of(n.b), c = of(n.c);
      if (n.op == Op::LOAD) {
        r = constant_range(p, n);
      } else if (n.op == Op::CAST && a && is_signed(n.from)) {
        r = a;
      } else if (n.op == Op::MAX && a && b) {
        r = ValueRange{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
      } else if (n.op == Op::WHERE && b && c) {
        const TileNode& cond = p.nodes[n.a];
        if (cond.op == Op::CMPLT && cond.a == n.b && cond.b == n.c)  // p < q ? p : q, the smaller
          r = ValueRange{std::min(b->lo, c->lo), std::min(b->hi, c->hi)};
        else if (cond.op == Op::CMPLT && cond.a == n.c && cond.b == n.b)  // q < p ? p : q, the larger
          r = ValueRange{std::max(b->lo, c->lo), std::max(b->hi, c->hi)};
        else
          r = ValueRange{std::min(b->lo, c->lo), std::max(b->hi, c->hi)};
      }
      in_range[i] = r && r->within(*full);
      range[i] = in_range[i] ? r : full;
    }
    guarded_casts(p, range);
  }
  // A cast read only by a select that takes it where its operand is within constant bounds, and the bounds
  // otherwise (tinygrad writes x.clip(lo, hi).cast(int8) as WHERE(hi < y, hi, CAST(y)) with y = MAX(x, lo)):
  // in range when its operand is, where the select takes it.
  void guarded_casts(const TileProgram& p, const std::vector<std::optional<ValueRange>>& range) {
    std::optional<std::vector<int>> reads;
    for (const TileNode& w : p.nodes) {
      if (w.op != Op::WHERE || p.nodes[w.a].op != Op::CMPLT) continue;
      const TileNode &cond = p.nodes[w.a], &cast = p.nodes[w.c];
      const auto full = dtype_range(cast.dtype);
      if (cast.op != Op::CAST || !full || in_range[w.c] || !range[cast.a]) continue;
      const bool upper = cond.b == cast.a;  // hi < y ? .. : CAST(y); else y < lo ? .. : CAST(y)
      if (!upper && cond.a != cast.a) continue;
      const auto bound = constant_range(p, p.nodes[upper ? cond.a : cond.b]);
      if (!bound) continue;
      if (!reads) reads = node_uses(p).count;
      if ((*reads)[w.c] != 1) continue;
      const ValueRange& y = *range[cast.a];
      const ValueRange taken =
          upper ? ValueRange{y.lo, std::min(y.hi, bound->hi)} : ValueRange{std::max(y.lo, bound->lo), y.hi};
      in_range[w.c] = taken.within(*full);
    }
  }
  // A leaf of constants in every lane: their least and greatest (lanes hold values sign-extended).
  static std::optional<ValueRange> constant_range(const TileProgram& p, const TileNode& n) {
    if (n.op != Op::LOAD || n.dynamic || n.pinned >= 0 || !is_signed(n.dtype)) return std::nullopt;
    std::optional<ValueRange> r;
    for (const auto& l : p.lanes(n)) {
      if (l.buf >= 0) return std::nullopt;
      const int64_t v = int32_t(l.bits);
      r = r ? ValueRange{std::min(r->lo, v), std::max(r->hi, v)} : ValueRange{v, v};
    }
    return r;
  }
};

}  // namespace

class Emitter {
 public:
#define TINYTPU_FRIEND_LOWERING(name) friend void lowering::name(Emitter&, const Lowered&);
  TINYTPU_LOWERINGS(TINYTPU_FRIEND_LOWERING)
#undef TINYTPU_FRIEND_LOWERING
  Emitter(const TileProgram& p, const NodeFacts& facts, const TensorCoreConfig& cfg, bool fast_math,
          const Choices& choices, EmitOrder order)
      : p_(p),
        cfg_(cfg),
        lim_(cfg),
        fast_math_(fast_math),
        choices_(choices),
        uniform_(facts.uniform),
        to_vmem_(facts.to_vmem),
        in_range_(facts.in_range),
        vreg_(p.nodes.size(), -1),
        spilled_(p.nodes.size(), false) {
    // Emission order, kByStore: the stores in program order, each preceded by whatever it needs that is
    // not yet computed (post-order), so a value is made right before its first use and holds no
    // register earlier. kProgram: the needed nodes in program order, each store as soon as its value is
    // (stores keep their order); chains that share leaves (a matmul's upcast accumulators, which the
    // trace updates term by term) then advance together and read each leaf in one launch. Leaves are
    // not events: each is filled right before its first read in a launch, so it costs no register
    // while it waits and a cut never spills it (the loader fills it again). Positions in this order
    // give every read a last-use time.
    events_.reserve(p.nodes.size() + p.stores.size());
    if (order == EmitOrder::kProgram)
      program_order(needed());
    else
      store_order();
    last_use_.assign(p.nodes.size(), -1);
    for (int e = 0; e < int(events_.size()); ++e) {
      auto [is_node, id] = events_[e];
      if (!is_node) {
        for (int n : store_reads(p.stores[id])) {
          last_use_[n] = e;
          if (is_leaf(n) && p.nodes[n].dynamic) last_use_[p.nodes[n].a] = e;  // its gather indices
        }
        continue;
      }
      for (int o : {p.nodes[id].a, p.nodes[id].b, p.nodes[id].c}) {
        if (o < 0) continue;
        last_use_[o] = e;
        if (is_leaf(o) && p.nodes[o].dynamic) last_use_[p.nodes[o].a] = e;  // its gather indices
      }
    }
    begin_launch();
  }

  // kByStore: each store after the post-order of what it reads and is not yet computed.
  void store_order() {
    std::vector<char> done(p_.nodes.size(), false);  // (bytes: this visits every node of a batch)
    std::vector<std::pair<int, int>> stack;          // node, operands looked at
    for (size_t s = 0; s < p_.stores.size(); ++s) {
      for (int root : store_reads(p_.stores[s])) {
        if (!done[root]) stack.push_back({root, 0});
        while (!stack.empty()) {
          auto& [n, k] = stack.back();
          const TileNode& t = p_.nodes[n];
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
          if (!is_leaf(n) && !to_vmem_[n]) events_.push_back({true, n});
          stack.pop_back();
        }
      }
      events_.push_back({false, int(s)});
    }
  }
  // The nodes the stores read, directly or through operands: operands come before their readers, so one
  // sweep back from the last node (a search from each store, as store_order() does, misses the cache).
  std::vector<bool> needed() const {
    std::vector<bool> needed(p_.nodes.size(), false);
    for (const TileStore& st : p_.stores)
      for (int r : store_reads(st)) needed[r] = true;
    for (int i = int(p_.nodes.size()) - 1; i >= 0; --i)
      if (needed[i])
        for (int o : {p_.nodes[i].a, p_.nodes[i].b, p_.nodes[i].c})
          if (o >= 0) needed[o] = true;
    return needed;
  }

  void program_order(const std::vector<bool>& needed) {
    events_.clear();
    std::vector<bool> made(p_.nodes.size(), false);
    size_t s = 0;
    auto ready = [&](size_t st) {
      for (int r : store_reads(p_.stores[st]))
        if (!is_leaf(r) && !to_vmem_[r] && !made[r]) return false;
      return true;
    };
    for (int i = 0; i < int(p_.nodes.size()); ++i) {
      if (needed[i] && !is_leaf(i) && !to_vmem_[i]) {
        events_.push_back({true, i});
        made[i] = true;
      }
      while (s < p_.stores.size() && ready(s)) events_.push_back({false, int(s++)});
    }
  }

  std::vector<Launch> run() {
    for (pos_ = 0; pos_ < int(events_.size()); ++pos_) {
      bool is_node = events_[pos_].first;
      int id = events_[pos_].second;
      transact([&] {
        event_asks_.clear();
        is_node ? emit_node(id) : emit_store(id);
      });
      if (is_node) op_asks_.try_emplace(op_key(p_.nodes[id]), event_asks_);
    }
    finish_launch();
    return std::move(launches_);
  }

 private:
  const TileProgram& p_;
  const TensorCoreConfig& cfg_;
  const Limits lim_;
  bool fast_math_;
  const Choices& choices_;
  const std::vector<std::optional<uint32_t>>& uniform_;  // NodeFacts'
  const std::vector<bool>& to_vmem_;                     // NodeFacts'
  const std::vector<bool>& in_range_;                    // NodeFacts'
  std::vector<int> vreg_;  // node -> vreg holding it in the current launch, or -1
  // Nodes given a vreg in the current launch, and the (node, previous vreg) writes of the current
  // event: resetting, cutting and rolling back touch only these, so emission stays linear in the
  // program's size however long it is.
  std::vector<int> bound_;
  std::vector<std::pair<int, int>> undo_;
  std::vector<int> held_;                     // cut()'s values to spill, in storage kept across launches
  std::vector<bool> spilled_;                 // node value saved in scratch by an earlier launch
  std::vector<std::pair<bool, int>> events_;  // (is a node, node or store index) in emission order
  std::vector<int> last_use_;                 // event position of the last read
  std::vector<Launch> launches_;
  Launch cur_;
  std::bitset<TensorCoreConfig::kMaxVregs> busy_;
  std::bitset<TensorCoreConfig::kMaxVregs> leaf_regs_;  // busy vregs holding a leaf
  // VMEM slots; those past the configuration's depth stay kAbsent. A fixed array: a transaction saves it.
  enum SlotState : uint8_t { kFree, kFilled, kUsed, kOut, kAbsent };
  std::array<SlotState, TensorCoreConfig::kMaxDepth> slot_{};  // written through set_slot()
  int out_slots_ = 0;  // slots kOut, counted as they change (room checks ask for every vreg and output)
  // What a consumed (kUsed) slot still holds: a constant, or a leaf node's lanes. A later read in the
  // launch LOADs it again instead of filling another slot, so a leaf's vreg can be given up under
  // pressure (evict_leaf) and the launch goes on.
  static constexpr int64_t kNothing = INT64_MIN, kConstTag = int64_t(1) << 40;
  static int64_t const_content(int32_t value) { return kConstTag + int64_t(uint32_t(value)); }
  std::array<int64_t, TensorCoreConfig::kMaxDepth> slot_content_{};
  // The constant a vreg holds (const_content), kept after it is released until an instruction writes the
  // vreg: a later use of the constant takes the vreg back instead of filling another.
  std::array<int64_t, TensorCoreConfig::kMaxVregs> reg_content_{};
  // The constant forecast: when all free vregs hold constants, the one asked for again latest (or never)
  // is given up. A node's lowering asks for the same constants, in the same order, every time its op and
  // dtype recur (learned from its first emission); a leaf operand with a uniform value asks for that.
  static constexpr int kForecastEvents = 32;  // how far ahead a forecast looks
  static std::pair<Op, DType> op_key(const TileNode& n) { return {n.op, n.dtype}; }
  std::map<std::pair<Op, DType>, std::vector<int64_t>> op_asks_;
  std::vector<int64_t> event_asks_;  // the current event's lowering's asks so far
  bool asking_for_leaf_ = false;
  const char* full_ = nullptr;     // the limit the current event found full (no_room), or null
  bool asking_when_full_ = false;  // asking_for_leaf_ then
  // The launch's constant palette: up to 16 constants in the lanes of one constant tile, each taken into a
  // vreg by BROADCAST_SCALAR (an XLU op: 2 cycles) from the vreg holding the palette, where a constant of
  // its own costs a fill record and a LOAD (3 cycles) in every launch. Lanes 0..15, because the broadcast's
  // lane selector is the 4-bit vregSrc2 (row-major, so lane k on every geometry). A vreg or slot holding it
  // holds kPalette.
  static constexpr int kPaletteLanes = 16;
  static constexpr int64_t kPalette = kConstTag - 1;
  std::vector<int32_t> palette_;                         // its values, lane by lane
  int palette_tile_ = -1;                                // its index in consts_, -1 before its first fill
  int own_consts_ = 0;                                   // constants with fills of their own in the launch
  std::bitset<TensorCoreConfig::kMaxVregs> event_regs_;  // operands of the current event: never evicted
  int pos_ = 0;                                          // current emission position

  void begin_launch() {
    cur_ = Launch{};
    if (!launches_.empty()) {  // as large as the last: a batch's launches are mostly alike
      const Launch& last = launches_.back();
      cur_.program.reserve(last.program.size());
      cur_.fills.reserve(last.fills.size());
      cur_.drains.reserve(last.drains.size());
    }
    busy_.reset();
    leaf_regs_.reset();
    slot_.fill(kAbsent);
    std::fill_n(slot_.begin(), lim_.slots, kFree);
    out_slots_ = 0;
    slot_content_.fill(kNothing);
    reg_content_.fill(kNothing);
    palette_.clear();
    palette_tile_ = -1;
    own_consts_ = 0;
    for (int n : bound_) vreg_[n] = -1;
    bound_.clear();
  }
  void set_vreg(int node, int r) {
    undo_.push_back({node, vreg_[node]});
    if (is_leaf(node)) {
      if (vreg_[node] >= 0) leaf_regs_.reset(vreg_[node]);
      if (r >= 0) leaf_regs_.set(r);
    }
    vreg_[node] = r;
    if (r >= 0) bound_.push_back(node);
  }
  // Vregs a cut would save: busy ones not holding a leaf (the loader refills leaves). One count: every
  // leaf's vreg is busy but in an event past no_room, whose room checks no longer change anything.
  int spillable() const { return int((busy_ & ~leaf_regs_).count()); }
  void finish_launch() {
    if (cur_.program.empty() && cur_.drains.empty()) return;
    cur_.program.push_back(instr::halt());
    launches_.push_back(std::move(cur_));
    begin_launch();
  }
  // Ends the launch: values still to be read move to scratch through output tiles. The invariants kept
  // by emit(), take_out_slot() and alloc_vreg() (room for one STORE and one output per busy vreg)
  // guarantee this fits.
  void cut() {
    // the values read later (or by the current event), each once and in node order: bound_ holds a node
    // once per vreg it was given
    held_.clear();
    for (int n : bound_)
      if (vreg_[n] >= 0 && last_use_[n] >= pos_ && !is_leaf(n)) held_.push_back(n);
    std::sort(held_.begin(), held_.end());
    held_.erase(std::unique(held_.begin(), held_.end()), held_.end());
    for (int n : held_) {
      int s = 0;
      while (slot_[s] == kOut) ++s;
      set_slot(s, kOut);
      cur_.program.push_back(instr::store(s, vreg_[n]));
      cur_.drains.push_back({s, -1, n});
      spilled_[n] = true;
    }
    finish_launch();
  }
  // Runs one event's emission as a transaction against the launch limits. An event only appends to
  // the launch, so undoing it truncates.
  template <class Body>
  void transact(Body body) {
    const Launch& l = cur_;
    const size_t program = l.program.size(), fills = l.fills.size(), drains = l.drains.size(),
                 mxu_fills = l.mxu_fills.size(), consts = consts_.size();
    auto saved_busy = busy_, saved_leaf_regs = leaf_regs_;
    auto saved_slots = slot_;
    const int saved_out_slots = out_slots_;
    auto saved_content = slot_content_;
    auto saved_reg_content = reg_content_;
    const size_t palette = palette_.size();
    const int palette_tile = palette_tile_;
    event_regs_.reset();
    undo_.clear();
    full_ = nullptr;
    body();
    if (!full_) return;
    cur_.cut = full_;
    cur_.program.resize(program);
    cur_.fills.resize(fills);
    cur_.drains.resize(drains);
    cur_.mxu_fills.resize(mxu_fills);
    consts_.resize(consts);
    busy_ = saved_busy;
    leaf_regs_ = saved_leaf_regs;
    slot_ = saved_slots;
    out_slots_ = saved_out_slots;
    slot_content_ = saved_content;
    reg_content_ = saved_reg_content;
    palette_.resize(palette);  // the launch ends here: its palette keeps the lanes it had
    palette_tile_ = palette_tile;
    if (palette_tile_ >= 0)
      std::fill(consts_[palette_tile_].begin() + palette, consts_[palette_tile_].end(), 0);
    event_regs_.reset();
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) vreg_[it->first] = it->second;
    asking_for_leaf_ = asking_when_full_;
    cut();
    full_ = nullptr;
    body();
    if (full_) {
      auto [is_node, id] = events_[pos_];
      throw Unsupported(std::string(is_node ? op_name(p_.nodes[id].op) : "a store") + " needs more " + full_ +
                        " than an empty launch of a TensorCore with " + cfg_.describe() + " has");
    }
  }
  // The event being emitted does not fit the current launch: transact() rolls it back, ends the launch
  // (spilling live values) and emits it again into a fresh one. Noted, not thrown (a throw per launch cost
  // more than the rest of the event): the event goes on to its end with 0 as a stand-in for the register,
  // slot or MXU address it did not get, and whatever it does after this is rolled back or, where not
  // (asking_for_leaf_, read_by), left as at this point, as a throw would. The first limit found names the
  // cut.
  int no_room(const char* why) {
    if (!full_) {
      full_ = why;
      asking_when_full_ = asking_for_leaf_;
    }
    return 0;
  }
  int out_slots() const { return out_slots_; }
  void set_slot(int s, SlotState state) {
    out_slots_ += int(state == kOut) - int(slot_[s] == kOut);
    slot_[s] = state;
  }
  // An output slot; `unfilled` when the loader fills it (a slot an earlier fill used would be refilled
  // before the program reads it).
  int take_out_slot(bool unfilled = false) {
    if (out_slots() + 1 + spillable() > lim_.slots) return no_room(kNoSlots);
    if (int(cur_.drains.size()) + 1 + spillable() > lim_.drains) return no_room(kNoOutputs);
    for (int s = 0; s < lim_.slots; ++s)
      if ((slot_[s] == kUsed && !unfilled) || slot_[s] == kFree) {
        set_slot(s, kOut);
        slot_content_[s] = kNothing;
        return s;
      }
    return no_room(kNoSlots);
  }
  // Every busy vreg but a leaf's may need a STORE and an output tile if the launch is cut: keep room.
  bool room_for_one_more_vreg() {
    int busy = spillable() + 1;
    const char* full = int(cur_.program.size()) + busy > lim_.instrs  ? kNoInstrs
                       : out_slots() + busy > lim_.slots              ? kNoSlots
                       : int(cur_.drains.size()) + busy > lim_.drains ? kNoOutputs
                                                                      : nullptr;
    if (full) no_room(full);
    return !full;
  }
  // A free vreg: one holding no constant first, else the one whose constant is asked for again latest.
  int alloc_vreg() {
    if (!room_for_one_more_vreg()) return 0;  // no_room's stand-in
    int pick = -1;
    for (int r = 0; r < lim_.vregs && (pick < 0 || reg_content_[pick] != kNothing); ++r)
      if (!busy_[r]) pick = r;
    if (pick >= 0 && reg_content_[pick] != kNothing) pick = latest_asked_free_vreg();
    if (pick >= 0) {
      busy_.set(pick);
      return pick;
    }
    if (int r = evict_leaf(); r >= 0) return r;
    return no_room(kNoVregs);
  }
  // Of the free vregs, all holding constants, the one whose constant the forecast asks for again latest.
  int latest_asked_free_vreg() const {
    std::array<int, TensorCoreConfig::kMaxVregs> when;  // events ahead, kForecastEvents + 1: not foreseen
    int open = 0;
    for (int r = 0; r < lim_.vregs; ++r) {
      when[r] = busy_[r] ? -1 : kForecastEvents + 1;
      open += !busy_[r];
    }
    auto asked = [&](int64_t content, int ahead) {
      const bool in_palette =
          std::find(palette_.begin(), palette_.end(), int32_t(content - kConstTag)) != palette_.end();
      for (int r = 0; r < lim_.vregs; ++r)
        if (when[r] == kForecastEvents + 1 &&
            (reg_content_[r] == content || (in_palette && reg_content_[r] == kPalette))) {
          when[r] = ahead;
          --open;
        }
    };
    if (auto [is_node, id] = events_[pos_]; is_node)  // the rest of the current event's lowering
      if (auto it = op_asks_.find(op_key(p_.nodes[id])); it != op_asks_.end())
        for (size_t k = event_asks_.size(); k < it->second.size(); ++k) asked(it->second[k], 0);
    for (int e = pos_ + 1; e < int(events_.size()) && e <= pos_ + kForecastEvents && open > 0; ++e) {
      auto [is_node, id] = events_[e];
      if (!is_node) continue;
      const TileNode& n = p_.nodes[id];
      for (int o : {n.a, n.b, n.c})
        if (o >= 0 && is_leaf(o))
          if (auto bits = uniform_[o]) asked(const_content(int32_t(*bits)), e - pos_);
      if (auto it = op_asks_.find(op_key(n)); it != op_asks_.end())
        for (int64_t content : it->second) asked(content, e - pos_);
    }
    int pick = -1;
    for (int r = 0; r < lim_.vregs; ++r)
      if (when[r] >= 0 && (pick < 0 || when[r] > when[pick])) pick = r;
    return pick;
  }
  int slot_holding(int64_t content) const {
    auto s = std::find(slot_content_.begin(), slot_content_.end(), content);
    return s == slot_content_.end() ? -1 : int(s - slot_content_.begin());
  }
  // Takes the vreg of a leaf that the current event does not read, the one whose last read is furthest
  // (its slot still holds it: a later read LOADs it again), or -1.
  int evict_leaf() {
    int victim = -1;
    for (int n : bound_) {
      int r = vreg_[n];
      // (the cheap tests first: most nodes bound in a launch would not be taken over the victim so far)
      if (r < 0 || event_regs_[r] || (victim >= 0 && last_use_[n] <= last_use_[victim])) continue;
      if (is_leaf(n) && slot_holding(n) >= 0) victim = n;
    }
    if (victim < 0) return -1;
    int r = vreg_[victim];
    set_vreg(victim, -1);
    return r;  // stays busy: it changes hands
  }
  void release(int r) {
    busy_.reset(r);
    leaf_regs_.reset(r);
  }
  void emit(Instr in) {
    if (int(cur_.program.size()) + 1 + spillable() > lim_.instrs) {
      no_room(kNoInstrs);
      return;
    }
    cur_.program.push_back(in);
    // every instruction that writes a vreg names it in vregDst
    if (may_write_vreg_dst(in.op)) reg_content_[in.vregDst % lim_.vregs] = kNothing;
  }
  // A combinational op is dispatched in the background: its write-back lands in the next instruction's
  // FETCH, which reads no vreg, so every later instruction sees it and the op costs 2 cycles, not
  // DISPATCH_VPU's 3 (the collect's cycle is bsc's schedule, checked on the reference: test_sxu.cc).
  void vpu(VpuOpcode op, int d, int a, int b = 0) {
    emit(kVpuOps[size_t(op)].kind == VpuKind::kComb ? instr::vpu_bg(d, op, a, b) : instr::vpu(d, op, a, b));
  }

  // A VMEM tile filled by the loader (a leaf, a constant, or a spilled value), loaded into a fresh vreg.
  int load_fill(int node, DType const_dtype = DType::kI32) {
    int s = int(std::find(slot_.begin(), slot_.end(), kFree) - slot_.begin());
    if (s >= lim_.slots) s = no_room(kNoSlots);  // the fill is still made: callers read it back
    set_slot(s, kUsed);  // consumed by the LOAD below, so the slot can take an output later
    cur_.fills.push_back({s, node, node >= 0 ? p_.nodes[node].dtype : const_dtype});
    int r = alloc_vreg();
    emit(instr::load(r, s));
    return r;
  }
  // A released vreg still holding `content` (a constant, or the palette), taken back busy; -1 without.
  int take_back(int64_t content) {
    for (int r = 0; r < lim_.vregs; ++r)
      if (!busy_[r] && reg_content_[r] == content) {
        if (room_for_one_more_vreg()) busy_.set(r);
        return r;
      }
    return -1;
  }
  // A constant tile: VZERO/VFILL when the value allows, else a loader constant.
  int constant(int32_t value, DType dtype = DType::kI32) {
    const int64_t content = const_content(value);
    if (!asking_for_leaf_) event_asks_.push_back(content);
    if (int r = take_back(content); r >= 0) return r;
    int r;
    if (value == 0) {
      r = alloc_vreg();
      emit(instr::vzero(r));
    } else if (value == int8_t(value)) {  // VFILL's immediate is one sign-extended byte
      r = alloc_vreg();
      emit(instr::vfill(r, int8_t(value)));
    } else if (int lane = busy_.count() + 2 <= size_t(lim_.vregs) ? palette_lane(value) : -1; lane >= 0) {
      // (two free vregs: the palette's and the constant's; with fewer, a fill of its own takes one)
      int palette = palette_vreg();
      r = alloc_vreg();
      emit(instr::broadcast_scalar(r, palette, lane / kRows, lane % kRows));
      release(palette);
    } else if (int s = slot_holding(const_content(value)); s >= 0) {
      r = alloc_vreg();  // filled earlier in this launch: LOAD it again
      emit(instr::load(r, s));
    } else {
      consts_.emplace_back().fill(value);
      ++own_consts_;
      r = load_fill(-int(consts_.size()), dtype);  // negative node ids name constants
      slot_content_[cur_.fills.back().slot] = content;
    }
    reg_content_[r] = content;
    return r;
  }

  // The constant's lane in the launch's palette, given one while there is room; -1 without.
  int palette_lane(int32_t value) {
    auto it = std::find(palette_.begin(), palette_.end(), value);
    if (it != palette_.end()) return int(it - palette_.begin());
    if (int(palette_.size()) == kPaletteLanes) return -1;
    // A launch's first loader constant keeps a fill of its own (a fill and a LOAD: 7 cycles, where the
    // palette's fill, LOAD and broadcast take 11); the second starts the palette.
    if (palette_.empty() && own_consts_ == 0) return -1;
    if (palette_tile_ >= 0)
      consts_[palette_tile_][palette_.size()] = value;  // loaded or not: VMEM is filled first
    palette_.push_back(value);
    return int(palette_.size()) - 1;
  }
  // The palette in a busy vreg: a released vreg still holding it, a LOAD from its slot, or its fill.
  int palette_vreg() {
    if (int r = take_back(kPalette); r >= 0) return r;
    int r;
    if (int s = slot_holding(kPalette); s >= 0) {
      r = alloc_vreg();
      emit(instr::load(r, s));
    } else {
      if (palette_tile_ < 0) {
        palette_tile_ = int(consts_.size());
        Tile& t = consts_.emplace_back();
        t.fill(0);
        std::copy(palette_.begin(), palette_.end(), t.begin());
      }
      r = load_fill(-(palette_tile_ + 1));
      slot_content_[cur_.fills.back().slot] = kPalette;
    }
    reg_content_[r] = kPalette;
    return r;
  }

 public:
  std::vector<Tile> consts_;  // constant tiles, named -1, -2, ... in SlotFill::node

 private:
  bool is_leaf(int node) const { return p_.nodes[node].op == Op::LOAD; }
  // A leaf's lanes: a uniform constant (VZERO/VFILL or a constant tile), or a loader gather whose dynamic
  // indices must already be in scratch.
  int fill_leaf(int node) {
    const TileNode& n = p_.nodes[node];
    // the gather's indices come from an earlier launch, or are themselves a leaf the loader reads
    if (n.dynamic && !spilled_[n.a] && !is_leaf(n.a))
      return no_room("gather indices computed in this launch");
    if (auto bits = uniform_[node]) {
      asking_for_leaf_ = true;
      int r = constant(int32_t(*bits), n.dtype);
      asking_for_leaf_ = false;
      return r;
    }
    if (int s = slot_holding(node); s >= 0) {  // filled earlier in this launch, its vreg given up
      int r = alloc_vreg();
      emit(instr::load(r, s));
      return r;
    }
    int r = load_fill(node);
    slot_content_[cur_.fills.back().slot] = node;
    return r;
  }
  int operand(int node) {
    if (vreg_[node] < 0) {
      if (!is_leaf(node) && !spilled_[node]) throw Unsupported("internal: operand not computed");
      set_vreg(node, is_leaf(node) ? fill_leaf(node) : load_fill(node));
    }
    event_regs_.set(vreg_[node]);
    return vreg_[node];
  }
  void drop_dead(int node) {
    for (int o : {p_.nodes[node].a, p_.nodes[node].b, p_.nodes[node].c})
      if (o >= 0 && vreg_[o] >= 0 && last_use_[o] <= pos_) {
        release(vreg_[o]);
        set_vreg(o, -1);
      }
  }

  // Narrow integer results wrap at their width; lanes hold them sign- or zero-extended.
  void wrap(DType d, int r) {
    if (!narrow(d)) return;
    int bits = d == DType::kI8 || d == DType::kU8 ? 8 : 16;
    int m = constant((1 << bits) - 1);
    vpu(VpuOpcode::kAnd, r, r, m);
    release(m);
    if (d == DType::kI8 || d == DType::kI16) {  // (x ^ sign) - sign
      int s = constant(1 << (bits - 1));
      vpu(VpuOpcode::kXor, r, r, s);
      vpu(VpuOpcode::kSub, r, r, s);
      release(s);
    }
  }
  // isnan(x) as 0/1 into d.
  void isnan(int d, int x) {
    int m = constant(0x7FFFFFFF), inf = constant(0x7F800000);
    vpu(VpuOpcode::kAnd, d, x, m);
    vpu(VpuOpcode::kCmplt, d, inf, d);
    release(m);
    release(inf);
  }
  // a != b on float32 lanes: ordered less either way, or a NaN operand. x != x is isnan(x); an operand
  // known not to be a NaN (a constant) needs no NaN test. Against a constant c that is neither a NaN nor a
  // zero, x != c is the bits' inequality (c has no other encoding, and a NaN x differs from it); against
  // +-0, the bits but the sign's (tinygrad's exp2 tests x against +-inf this way, say).
  void float_ne(int d, const TileNode& n, int a, int b) {
    if (n.a == n.b) {
      isnan(d, a);
      return;
    }
    for (auto [node, x] : {std::pair{n.b, a}, {n.a, b}}) {
      const auto c = uniform_[node];
      if (!c || fp32::is_nan(*c)) continue;
      if ((*c & 0x7FFFFFFFu) != 0) {
        vpu(VpuOpcode::kCmpne, d, a, b);
        return;
      }
      int m = constant(0x7FFFFFFF), zero = constant(0);
      vpu(VpuOpcode::kAnd, d, x, m);
      vpu(VpuOpcode::kCmpne, d, d, zero);
      release(m);
      release(zero);
      return;
    }
    int t = alloc_vreg();
    vpu(VpuOpcode::kFcmplt, d, a, b);
    vpu(VpuOpcode::kFcmplt, t, b, a);
    vpu(VpuOpcode::kOr, d, d, t);
    for (auto [node, r] : {std::pair{n.a, a}, {n.b, b}}) {
      auto bits = uniform_[node];
      if (bits && !fp32::is_nan(*bits)) continue;
      isnan(t, r);
      vpu(VpuOpcode::kOr, d, d, t);
    }
    release(t);
  }
  // Arithmetic shift right of 32-bit lanes: the VPU's SHR is logical, so shift a with its sign bits
  // flipped (s = a < 0 ? ~0 : 0) and flip them back: ((a ^ s) >> n) ^ s.
  void sar(int d, int a, int n) {
    int zero = constant(0), s = alloc_vreg();
    vpu(VpuOpcode::kCmplt, s, a, zero);
    emit(instr::vneg(s, s));  // 0 or all ones
    vpu(VpuOpcode::kXor, d, a, s);
    vpu(VpuOpcode::kShr, d, d, n);
    vpu(VpuOpcode::kXor, d, d, s);
    release(zero);
    release(s);
  }
  // An int32 node that is F2I of a float32 one: a value with at most 24 significant bits (F2I
  // truncates, and its overflow keeps at most 24 of the mantissa's bits), which I2F converts exactly.
  bool from_float_to_i32(int node) const {
    const TileNode& t = p_.nodes[node];
    return t.op == Op::CAST && t.dtype == DType::kI32 && is_float(t.from);
  }
  // int32/uint32 -> float32 with round-to-nearest-even: I2F truncates above 2^24, so convert the
  // 16-bit halves exactly and let one FADD round.
  void int_to_float(int d, int x, bool is_signed) {
    int mag = alloc_vreg(), lo = alloc_vreg(), sign = alloc_vreg();
    if (is_signed) {
      int zero = constant(0);
      vpu(VpuOpcode::kCmplt, sign, x, zero);
      release(zero);
      emit(instr::vabs(mag, x));  // INT_MIN stays 0x80000000 = 2^31 unsigned
    } else {
      emit(instr::vzero(sign));
      vpu(VpuOpcode::kAnd, mag, x, x);
    }
    int k16 = constant(16), m16 = constant(0xFFFF);
    vpu(VpuOpcode::kAnd, lo, mag, m16);
    vpu(VpuOpcode::kShr, mag, mag, k16);
    vpu(VpuOpcode::kI2f, mag, mag);
    vpu(VpuOpcode::kI2f, lo, lo);
    int scale = constant(0x47800000, DType::kF32);  // 65536.0f
    vpu(VpuOpcode::kFmul, mag, mag, scale);
    vpu(VpuOpcode::kFadd, d, mag, lo);
    int k31 = constant(31);
    vpu(VpuOpcode::kShl, sign, sign, k31);
    vpu(VpuOpcode::kXor, d, d, sign);
    for (int r : {mag, lo, sign, k16, m16, scale, k31}) release(r);
  }

  // 1/x from exact ops: FRECIP's estimate plus one more Newton step (within an ulp or two), with the
  // operand scaled by a power of two where the estimate breaks down (|x| >= 2^125, |x| < 2^-125) and
  // IEEE's answers for 0, inf and NaN selected in. `in_range`: x is known to be within [2^-72, 2^101) or
  // 0, inf or NaN (a divisor after div_scale), so it is not scaled.
  void reciprocal(int d, int x, bool in_range = false) {
    int ax = alloc_vreg(), c = alloc_vreg(), t = alloc_vreg(), xs = in_range ? x : alloc_vreg();
    int post = in_range ? -1 : alloc_vreg();
    vpu(VpuOpcode::kFabs, ax, x);
    auto scale_if = [&](uint32_t limit, bool above, uint32_t in_scale, uint32_t out_scale) {
      int lim = constant(int32_t(limit));
      vpu(VpuOpcode::kCmplt, c, above ? lim : ax, above ? ax : lim);
      release(lim);
      int k = constant(int32_t(in_scale));
      vpu(VpuOpcode::kFmul, t, x, k);
      release(k);
      emit(instr::select(xs, c, t, xs));
      int o = constant(int32_t(out_scale));
      emit(instr::select(post, c, o, post));
      release(o);
    };
    if (!in_range) {
      vpu(VpuOpcode::kAnd, xs, x, x);
      int one = constant(int32_t(0x3F800000), DType::kF32);
      vpu(VpuOpcode::kAnd, post, one, one);
      release(one);
      scale_if(0x7E000000u, true, 0x3E800000u, 0x3E800000u);   // |x| > 2^125: 1/(x/4) / 4
      scale_if(0x01000000u, false, 0x4B800000u, 0x4B800000u);  // |x| < 2^-125: 1/(x*2^24) * 2^24
    }
    vpu(VpuOpcode::kFrecip, d, xs);
    vpu(VpuOpcode::kFmul, t, xs, d);
    int two = constant(int32_t(0x40000000), DType::kF32);
    vpu(VpuOpcode::kFsub, t, two, t);
    release(two);
    vpu(VpuOpcode::kFmul, d, d, t);
    if (!in_range) {
      vpu(VpuOpcode::kFmul, d, d, post);
      release(xs);
      release(post);
    }
    // Specials: 1/±0 = ±inf, 1/±inf = ±0, NaN stays NaN.
    int inf = constant(0x7F800000);
    vpu(VpuOpcode::kXor, t, x, ax);      // x's sign bit
    vpu(VpuOpcode::kCmpeq, c, ax, inf);  // |x| == inf -> ±0
    emit(instr::select(d, c, t, d));
    vpu(VpuOpcode::kOr, t, t, inf);
    int zero = constant(0);
    vpu(VpuOpcode::kCmpeq, c, ax, zero);  // x == ±0 -> ±inf
    emit(instr::select(d, c, t, d));
    vpu(VpuOpcode::kCmplt, c, inf, ax);  // NaN
    emit(instr::select(d, c, x, d));
    for (int r : {ax, c, t, inf, zero}) release(r);
  }
  // A WMEM weight tile, reusing an identical one already loaded.
  int weight_fill(const MxuTile& data, int chain) {
    const MxuTile values = choices_.canonical(data);
    int used = 0;
    for (MxuFill& f : cur_.mxu_fills)
      if (f.weight) {
        if (choices_.canonical(f.data) == values) {
          read_by(f, chain);
          return f.addr;
        }
        ++used;
      }
    if (used == lim_.mxu_entries) return no_room("WMEM tiles");
    cur_.mxu_fills.push_back({true, used, data, {chain}});
    return used;
  }
  // (A rolled-back event may leave its chain on a fill of the launch it was cut from: harmless, the fill
  // holds the same lanes as the one the chain then reads.)
  void read_by(MxuFill& f, int chain) {
    if (full_) return;  // (the event is cut: see no_room)
    if (std::find(f.chains.begin(), f.chains.end(), chain) == f.chains.end()) f.chains.push_back(chain);
  }
  // k consecutive AMEM rows (row r in lanes 4r..4r+3 of block: one WS activation row, or an OS slice's
  // activations), reusing an identical run already loaded.
  int act_fill(const MxuTile& block, int k, int chain) {
    std::vector<MxuTile> rows(k);
    for (int r = 0; r < k; ++r)
      for (int i = 0; i < kRows; ++i) rows[r][i] = block[r * kRows + i];
    std::map<int, MxuFill*> act;  // address -> row
    for (MxuFill& f : cur_.mxu_fills)
      if (!f.weight) act[f.addr] = &f;
    for (const auto& [addr, fill] : act) {
      bool match = true;
      for (int r = 0; r < k && match; ++r)
        match = act.count(addr + r) && choices_.canonical(act[addr + r]->data) == choices_.canonical(rows[r]);
      if (!match) continue;
      for (int r = 0; r < k; ++r) read_by(*act[addr + r], chain);
      return addr;
    }
    int base = int(act.size());
    if (base + k > lim_.mxu_entries) return no_room("AMEM rows");
    for (int r = 0; r < k; ++r) cur_.mxu_fills.push_back({false, base + r, rows[r], {chain}});
    return base;
  }
  // The operands in WMEM and AMEM, then mxu_dot.h's instructions (OS: a scratch vreg taken for the
  // read-back). `out_slot` >= 0 (a single dispatch with no epilogue op): written to that VMEM slot, not to d.
  void mxu_dot(int d, const MxuDot& m, int epilogue_src, int out_slot = -1) {
    MxuDotPlaces at{{}, {}, d, epilogue_src, out_slot};
    for (const auto& t : m.weights) at.weights.push_back(weight_fill(t, m.chain));
    std::vector<int> rows;  // WS: the AMEM row of each activation row
    if (!m.os)
      for (const auto& t : m.acts) rows.push_back(act_fill(t, 1, m.chain));
    for (const auto& ds : m.dispatches)
      at.acts.push_back(m.os ? act_fill(m.acts[ds.act], ds.k, m.chain) : rows[ds.act]);
    for (const Instr& in : mxu_dot_dispatches(m, at)) emit(in);
    if (m.os) at.scratch = alloc_vreg();
    for (const Instr& in : mxu_dot_readback(m, at)) emit(in);
    if (m.os) release(at.scratch);
  }

  // Exact division a0 / b0 in two halves (compiler/divide.h): a0/b0 = (a0*s)/(b0*s) with s a power of two
  // bringing a tiny |b0| (below 2^-50: exponent field E < 77, subnormals and zeros as E = 0) to exponent
  // 2^-50 and a huge one (2^101 and above, E > 227, infinities and NaNs too) to 2^100, so that b0*s is within
  // [2^-72, 2^101) for every finite non-zero b0 (1/(b0*s) is normal, and div_exact's remainder exact), and
  // a0*s can only overflow or underflow where a0/b0 itself does. In exponent-field terms s is
  // 2^(clamp(E, 77, 227) - E); 1.0 in between. `e`: a scratch vreg.
  void div_scale(int d, int b0, int e) {
    int field = constant(0x7F800000), tiny = constant(77 << 23), huge = constant(227 << 23);
    vpu(VpuOpcode::kAnd, e, b0, field);
    vpu(VpuOpcode::kMax, d, e, tiny);
    vpu(VpuOpcode::kMin, d, d, huge);
    vpu(VpuOpcode::kSub, d, d, e);
    for (int c : {field, tiny, huge}) release(c);
    int one = constant(0x3F800000);
    vpu(VpuOpcode::kAdd, d, d, one);
    release(one);
  }
  // a / b for a = a0*s, b = b0*s (|b| within [2^-72, 2^101), or zero, infinite or NaN) and r =
  // reciprocal(b): q0 = a * r is within an ulp or two; one correction by the exact remainder then rounds
  // like IEEE division but for quotients within ~2^-21 ulp of a midpoint (the error of c below: r's ulp or
  // two, and c's own rounding), which can round the wrong way by one ulp. The remainder a' - q*b comes
  // from Dekker's product (of halves of 12 significant bits) and Sterbenz's exact subtraction, which are
  // exact while q*b and its halves' products are normal, so for q near 1; so the correction runs on q0 and a
  // scaled by t = 2^(127-E), E the exponent field of q0 clamped to [1, 253], which puts q near 1, and its
  // result is scaled back by 1/t:
  //  - normal quotients (|q0| > 1.5*2^-126): q = (a*t)*r, the result (q + c)/t with c = remainder*r: one
  //    rounding where q + c is, then an exact scaling (or IEEE's overflow). q is recomputed from a*t, not
  //    q0*t, so a q0 that overflowed still has a finite q.
  //  - quotients at the bottom (|q0| <= 1.5*2^-126): the result's grid is 2^-149 on both sides of 2^-126,
  //    which no float addition rounds to, so q = q0*t (on that grid, 2^-23 after scaling) and c is
  //    rounded to the grid on its own, by adding and subtracting 1.5 (c is a few grid steps at most):
  //    q + c is then exact, and so is the scaling back.
  // A non-finite correction means a zero, infinite or NaN operand: IEEE's answer is q0. `q`: a scratch
  // vreg.
  void div_exact(int d, int a, int b, int r, int q) {
    vpu(VpuOpcode::kFmul, q, a, r);  // q0
    int e = alloc_vreg(), low = alloc_vreg();
    int bottom = constant(0x00C00000), top = constant(0x7EFFFFFF);  // 1.5*2^-126
    vpu(VpuOpcode::kFabs, e, q);
    vpu(VpuOpcode::kMax, e, e, bottom);      // |q0|'s bits with the exponent field clamped to [1, 253]
    vpu(VpuOpcode::kCmpeq, low, e, bottom);  // |q0| <= 1.5*2^-126
    vpu(VpuOpcode::kMin, e, e, top);
    release(top);
    int t = alloc_vreg(), field = constant(0x7F800000);
    vpu(VpuOpcode::kAnd, t, e, field);
    vpu(VpuOpcode::kFrecip, t, t);  // t = 2^(127-E): FRECIP's estimate is exact on a power of two
    for (int c : {bottom, field}) release(c);
    int as = alloc_vreg();
    vpu(VpuOpcode::kFmul, as, a, t);  // exact: a*t is q*b, with q near 1
    vpu(VpuOpcode::kFmul, t, q, t);
    vpu(VpuOpcode::kFmul, q, as, r);
    emit(instr::select(q, low, t, q));
    release(t);
    sub_exact_product(as, q, b);       // the remainder a*t - q*b
    vpu(VpuOpcode::kFmul, as, as, r);  // c
    int ok = alloc_vreg(), u = alloc_vreg();
    field = constant(0x7F800000);
    vpu(VpuOpcode::kFabs, u, as);
    vpu(VpuOpcode::kCmplt, ok, u, field);  // c finite
    vpu(VpuOpcode::kAnd, e, e, field);     // 1/t
    release(field);
    int to_grid = constant(0x3FC00000, DType::kF32);  // 1.5: c + 1.5 rounds c to a multiple of 2^-23
    vpu(VpuOpcode::kFadd, u, as, to_grid);
    vpu(VpuOpcode::kFsub, u, u, to_grid);
    release(to_grid);
    emit(instr::select(as, low, u, as));
    vpu(VpuOpcode::kFadd, q, q, as);
    vpu(VpuOpcode::kFmul, q, q, e);
    vpu(VpuOpcode::kFmul, e, a, r);  // q0 again
    int sign = constant(int32_t(0x80000000u));
    vpu(VpuOpcode::kAnd, u, e, sign);  // the quotient's sign: q + c above rounds a zero to +0
    release(sign);
    vpu(VpuOpcode::kOr, q, q, u);
    emit(instr::select(d, ok, q, e));
    for (int x : {e, low, as, ok, u}) release(x);
  }

  // The two halves in one (a division split_divisions left whole).
  void divide(int d, int a0, int b0) {
    int a = alloc_vreg(), b = alloc_vreg(), r = alloc_vreg(), s = alloc_vreg();
    div_scale(s, b0, r);
    vpu(VpuOpcode::kFmul, a, a0, s);
    vpu(VpuOpcode::kFmul, b, b0, s);
    reciprocal(r, b, /*in_range*/ true);
    div_exact(d, a, b, r, /*q*/ s);
    for (int x : {a, b, r, s}) release(x);
  }

  // x -= u*v, exactly but for the one rounding of the result: Dekker's product from halves of 12
  // significant bits (a square when u == v) and Sterbenz's exact subtraction. Exact while u*v and its halves'
  // products are normal and x is within a few ulps of u*v.
  void sub_exact_product(int x, int u, int v) {
    const bool square = u == v;
    int h1 = alloc_vreg(), l1 = alloc_vreg();
    int h2 = square ? h1 : alloc_vreg(), l2 = square ? l1 : alloc_vreg();
    int high = constant(int32_t(0xFFFFF000u));  // sign, exponent and the leading 12 significant bits
    auto split = [&](int w, int h, int l) {     // w = h + l, each of 12 significant bits at most
      vpu(VpuOpcode::kAnd, h, w, high);
      vpu(VpuOpcode::kFsub, l, w, h);
    };
    split(u, h1, l1);
    if (!square) split(v, h2, l2);
    release(high);
    int p = alloc_vreg(), err = alloc_vreg();
    vpu(VpuOpcode::kFmul, p, u, v);
    vpu(VpuOpcode::kFmul, err, h1, h2);  // err = u*v - p exactly: ((h1*h2 - p) + h1*l2 + l1*h2) + l1*l2
    vpu(VpuOpcode::kFsub, err, err, p);
    vpu(VpuOpcode::kFsub, x, x, p);  // exact: p is within a few ulps of x
    release(p);
    if (square) {  // h*l + l*h = 2*h*l, exactly
      vpu(VpuOpcode::kFmul, h1, h1, l1);
      vpu(VpuOpcode::kFadd, h1, h1, h1);
      vpu(VpuOpcode::kFadd, err, err, h1);
    } else {
      vpu(VpuOpcode::kFmul, h1, h1, l2);
      vpu(VpuOpcode::kFadd, err, err, h1);
      vpu(VpuOpcode::kFmul, h2, l1, h2);
      vpu(VpuOpcode::kFadd, err, err, h2);
    }
    vpu(VpuOpcode::kFmul, l1, l1, l2);
    vpu(VpuOpcode::kFadd, err, err, l1);
    vpu(VpuOpcode::kFsub, x, x, err);
    for (int r : {h1, l1, err}) release(r);
    if (!square) {
      release(h2);
      release(l2);
    }
  }

  // sqrt(x), rounded like IEEE's but for results within ~2^-21 ulp of a midpoint (as division). x is scaled
  // by an even power of two 2^-2k into [1, 4) in its bits (a subnormal x first by 2^24); there y ~ 1/sqrt
  // from the bit-pattern estimate (3.4% off) and three Newton steps y(1.5 - (x/2)y^2) (an ulp or two), s =
  // x*y, then one correction by the exact residual (sub_exact_product). The result is s*2^k, scaled in its
  // bits too: sqrt never leaves the normal range. IEEE's answers: +-0, +inf and NaN are x; below zero, NaN.
  // Fast math: two Newton steps and no correction (~4e-6 relative error).
  void square_root(int d, int x) {
    int xs = alloc_vreg(), back = alloc_vreg(), sub = alloc_vreg(), k = alloc_vreg();
    int low = constant(0x01000000), up = constant(0x4B800000, DType::kF32);  // 2^-125; 2^24
    vpu(VpuOpcode::kCmplt, sub, x, low);
    vpu(VpuOpcode::kFmul, xs, x, up);
    emit(instr::select(xs, sub, xs, x));
    for (int c : {low, up}) release(c);
    int one_bits = constant(0x3F800000), even = constant(int32_t(0xFF000000u));
    vpu(VpuOpcode::kSub, k, xs, one_bits);
    vpu(VpuOpcode::kAnd, k, k, even);  // 2k << 23: the exponent, rounded down to even
    vpu(VpuOpcode::kSub, xs, xs, k);   // x * 2^-2k, in [1, 4)
    for (int c : {one_bits, even}) release(c);
    int pre = constant(24 << 23), two = constant(2);
    vpu(VpuOpcode::kSub, back, k, pre);
    emit(instr::select(back, sub, back, k));
    vpu(VpuOpcode::kDiv, back, back, two);  // k << 23 (exact: a multiple of 2^24)
    for (int c : {pre, two}) release(c);
    release(sub);
    int y = alloc_vreg(), half = constant(0x3F000000, DType::kF32);
    int one = constant(1), magic = constant(0x5F3759DF);
    vpu(VpuOpcode::kShr, y, xs, one);
    vpu(VpuOpcode::kSub, y, magic, y);
    for (int c : {one, magic}) release(c);
    int xh = alloc_vreg(), t = k, three_halves = constant(0x3FC00000, DType::kF32);
    vpu(VpuOpcode::kFmul, xh, xs, half);
    for (int step = 0; step < (fast_math_ ? 2 : 3); ++step) {
      vpu(VpuOpcode::kFmul, t, y, y);
      vpu(VpuOpcode::kFmul, t, t, xh);
      vpu(VpuOpcode::kFsub, t, three_halves, t);
      vpu(VpuOpcode::kFmul, y, y, t);
    }
    release(three_halves);
    release(xh);
    int s = alloc_vreg();
    vpu(VpuOpcode::kFmul, s, xs, y);
    if (!fast_math_) {  // s + (x - s^2)*y/2, the residual exact
      sub_exact_product(xs, s, s);
      vpu(VpuOpcode::kFmul, xs, xs, y);
      vpu(VpuOpcode::kFmul, xs, xs, half);
      vpu(VpuOpcode::kFadd, s, s, xs);
    }
    release(half);
    int h = alloc_vreg(), l = alloc_vreg();
    vpu(VpuOpcode::kAdd, s, s, back);
    int zero = constant(0), inf = constant(0x7F800000);
    vpu(VpuOpcode::kCmplt, h, zero, x);  // finite and above zero: in its bits, 0 < x < inf
    vpu(VpuOpcode::kCmplt, l, x, inf);
    vpu(VpuOpcode::kAnd, h, h, l);
    vpu(VpuOpcode::kFcmplt, l, x, zero);
    emit(instr::select(s, h, s, x));
    vpu(VpuOpcode::kFmul, h, inf, zero);  // NaN
    emit(instr::select(d, l, h, s));
    for (int r : {inf, zero, xs, back, y, t, s, h, l}) release(r);
  }

  // t = the polynomial in s with these float32 coefficients, highest degree first, by Horner's rule as
  // tinygrad's polyN evaluates it (its 0*s + c0 folds to c0, so the first step is c0*s).
  void horner(int t, int s, std::initializer_list<uint32_t> coefficients) {
    const uint32_t* c = coefficients.begin();
    int k = constant(int32_t(*c), DType::kF32);
    vpu(VpuOpcode::kFmul, t, k, s);
    release(k);
    while (++c != coefficients.end()) {
      k = constant(int32_t(*c), DType::kF32);
      vpu(VpuOpcode::kFadd, t, t, k);
      release(k);
      if (c + 1 != coefficients.end()) vpu(VpuOpcode::kFmul, t, t, s);
    }
  }

  // 2^x as tinygrad's xexp2 computes it (codegen/decomp/transcendental.py), operation for operation where
  // one rounds, so the result is the bits its decomposition gives lowered node by node, in fewer
  // instructions: x to an integer q = trunc(x +- 0.5), s = x - q, its degree-6 polynomial in s by Horner's
  // rule, times 2^(q/2) and 2^(q - q/2) (q/2 truncated: each a normal power of two, the second product
  // rounding where the result is subnormal); NaN for NaN. xexp2 takes infinities as 0 and selects inf from
  // 128 up and 0 below -150; here x is clamped to [-151, 129] instead, where the same products give those:
  // from 128 up u*2^q is at least 2^128 (u = 2^s to within an ulp) and overflows, below -150 it is under
  // 2^-150 and rounds to 0, and in between nothing changes.
  void exp2_decomposed(int d, int x) {
    int ax = alloc_vreg(), t = alloc_vreg(), xm = alloc_vreg(), q = alloc_vreg();
    vpu(VpuOpcode::kFabs, ax, x);
    int low = constant(int32_t(0xC3170000u), DType::kF32),
        high = constant(0x43010000, DType::kF32);  // -151, 129
    vpu(VpuOpcode::kFmax, xm, x, low);             // a NaN gives -151: its result is replaced below
    vpu(VpuOpcode::kFmin, xm, xm, high);
    for (int c : {low, high}) release(c);
    int sign = constant(int32_t(0x80000000u)), half = constant(0x3F000000, DType::kF32);
    vpu(VpuOpcode::kAnd, t, xm, sign);  // +-0.5 with x's sign (a -0 gives -0.5: q is 0 either way)
    vpu(VpuOpcode::kOr, t, t, half);
    for (int c : {sign, half}) release(c);
    vpu(VpuOpcode::kFadd, t, xm, t);
    vpu(VpuOpcode::kF2i, q, t);  // rounded away from zero
    vpu(VpuOpcode::kI2f, t, q);
    vpu(VpuOpcode::kFsub, xm, xm, t);  // s
    // xexp2's float32 coefficients: 0.1535920892e-3, ... 0.6931471825, 1.0
    horner(t, xm, {0x39210D90, 0x3AAF8A33, 0x3C1D966E, 0x3D63579C, 0x3E75FDEC, 0x3F317218, 0x3F800000});
    int two = constant(2), bias = constant(127), k23 = constant(23);
    vpu(VpuOpcode::kDiv, xm, q, two);  // q/2, truncated as tinygrad's integer division
    vpu(VpuOpcode::kSub, q, q, xm);
    for (int e : {xm, q}) {  // u * 2^e: e + 127 into the exponent field
      vpu(VpuOpcode::kAdd, e, e, bias);
      vpu(VpuOpcode::kShl, e, e, k23);
      vpu(VpuOpcode::kFmul, t, t, e);
    }
    for (int k : {two, bias, k23}) release(k);
    int inf = constant(0x7F800000);
    vpu(VpuOpcode::kCmplt, q, inf, ax);  // NaN
    int nan = constant(0x7FC00000);
    emit(instr::select(d, q, nan, t));
    for (int r : {nan, inf, ax, t, xm, q}) release(r);
  }

  // log2(x) as tinygrad's xlog2 computes it, operation for operation where one rounds (as exp2_decomposed):
  // a = x (below 1e-4, x*2^64), e = the exponent of a*4/3, m = a*2^-e in [0.75, 1.5), y = (m - 1)/(m + 1)
  // (the exact division; m + 1 needs no scaling), its polynomial in y^2, r = ((t*(y*y^2) + e) + y*c1) +
  // y*c2 with e less 64 for a scaled x. Then its specials: inf for inf, -inf for +-0, NaN below zero and
  // for NaN, and -inf where its 1/x test gives -inf (x in [-2^-128, -0]). The exponent is read by a logical
  // shift without its mask: the two differ only for x < 0, whose result is replaced. a and e are computed
  // twice, before and after the division, which needs every other register.
  void log2_decomposed(int d, int x) {
    auto exponent = [&](int e, int a) {  // e = the exponent field of a*4/3 less 127; a = x, scaled
      int tiny = constant(0x38D1B717, DType::kF32), up = constant(0x5F800000, DType::kF32);  // 1e-4, 2^64
      vpu(VpuOpcode::kFcmplt, e, x, tiny);
      vpu(VpuOpcode::kFmul, a, x, up);
      emit(instr::select(a, e, a, x));
      for (int c : {tiny, up}) release(c);
      int four_thirds = constant(0x3FAAAAAB, DType::kF32), k23 = constant(23), bias = constant(127);
      vpu(VpuOpcode::kFmul, e, a, four_thirds);
      vpu(VpuOpcode::kShr, e, e, k23);
      vpu(VpuOpcode::kSub, e, e, bias);
      for (int c : {four_thirds, k23, bias}) release(c);
    };
    int a = alloc_vreg(), m = alloc_vreg();
    exponent(m, a);
    int k23 = constant(23);
    vpu(VpuOpcode::kShl, m, m, k23);
    release(k23);
    vpu(VpuOpcode::kSub, m, a, m);  // a * 2^-e
    int one = constant(0x3F800000, DType::kF32), minus_one = constant(int32_t(0xBF800000u), DType::kF32);
    vpu(VpuOpcode::kFadd, a, m, minus_one);
    vpu(VpuOpcode::kFadd, m, m, one);
    for (int c : {one, minus_one}) release(c);
    int r = alloc_vreg(), q = alloc_vreg();
    reciprocal(r, m, /*in_range*/ true);
    div_exact(d, a, m, r, q);  // y
    for (int v : {r, q}) release(v);
    int e = alloc_vreg(), y = d;
    exponent(e, a);
    vpu(VpuOpcode::kI2f, e, e);
    int tiny = constant(0x38D1B717, DType::kF32), minus64 = constant(int32_t(0xC2800000u), DType::kF32);
    vpu(VpuOpcode::kFcmplt, m, x, tiny);  // scaled
    vpu(VpuOpcode::kFadd, a, e, minus64);
    emit(instr::select(e, m, a, e));
    for (int c : {tiny, minus64}) release(c);
    int y2 = a, t = m;
    vpu(VpuOpcode::kFmul, y2, y, y);
    // xlog2's float32 coefficients: 0.4374550283, 0.5764790177, 0.9618012905120 in y^2; 2.8853900432586669922
    // and 3.2734474483568488616e-08 in y
    horner(t, y2, {0x3EDFFA1B, 0x3F139421, 0x3F76389C});
    vpu(VpuOpcode::kFmul, y2, y, y2);
    vpu(VpuOpcode::kFmul, t, t, y2);
    vpu(VpuOpcode::kFadd, t, t, e);
    for (uint32_t k : {0x4038AA3Bu, 0x330C97EFu}) {
      int c = constant(int32_t(k), DType::kF32);
      vpu(VpuOpcode::kFmul, y2, y, c);
      release(c);
      vpu(VpuOpcode::kFadd, t, t, y2);
    }
    int inf = constant(0x7F800000), minus_inf = constant(int32_t(0xFF800000u)), zero = constant(0);
    vpu(VpuOpcode::kCmpeq, y2, x, inf);
    emit(instr::select(t, y2, inf, t));
    vpu(VpuOpcode::kFabs, e, x);
    vpu(VpuOpcode::kCmpeq, y2, e, zero);
    emit(instr::select(t, y2, minus_inf, t));
    vpu(VpuOpcode::kCmplt, y2, inf, e);  // NaN
    vpu(VpuOpcode::kFcmplt, e, x, zero);
    vpu(VpuOpcode::kOr, y2, y2, e);
    int nan = constant(0x7FC00000);
    emit(instr::select(t, y2, nan, t));
    release(nan);
    int tiny_negative = constant(int32_t(0x80200001u));  // x's bits at most -2^-128's, as signed integers
    vpu(VpuOpcode::kCmplt, y2, x, tiny_negative);
    emit(instr::select(d, y2, minus_inf, t));
    for (int v : {tiny_negative, inf, minus_inf, zero, a, e, m}) release(v);
  }

  // Round toward zero: below 2^23 in magnitude through F2I/I2F (keeping the sign of -0.x), else x.
  void trunc(int d, int x) {
    int ax = alloc_vreg(), c = alloc_vreg();
    int m = constant(0x7FFFFFFF);
    vpu(VpuOpcode::kAnd, ax, x, m);
    release(m);
    int lim = constant(0x4B000000);  // 2^23
    vpu(VpuOpcode::kCmplt, c, ax, lim);
    release(lim);
    vpu(VpuOpcode::kF2i, d, x);
    vpu(VpuOpcode::kI2f, d, d);
    int sign = constant(int32_t(0x80000000u));
    vpu(VpuOpcode::kAnd, ax, x, sign);
    vpu(VpuOpcode::kOr, d, d, ax);
    release(sign);
    emit(instr::select(d, c, d, x));
    release(ax);
    release(c);
  }

  // out = x < y as uint32: flip the sign bits (`sign` holds 0x80000000) into tx, ty, compare signed.
  void less_unsigned(int out, int x, int y, int sign, int tx, int ty) {
    vpu(VpuOpcode::kXor, tx, x, sign);
    vpu(VpuOpcode::kXor, ty, y, sign);
    vpu(VpuOpcode::kCmplt, out, tx, ty);
  }

  // Unsigned 32-bit quotient from the signed divider: a divisor >= 2^31 gives (a >= b); otherwise
  // q = ((a >> 1) / b) << 1 is the true quotient or one less, and the remainder decides which.
  void udiv(int d, int a, int b) {
    int sign = constant(int32_t(0x80000000u)), one = constant(1);
    int t = alloc_vreg(), ax = alloc_vreg(), bx = alloc_vreg(), big = alloc_vreg();
    vpu(VpuOpcode::kShr, t, a, one);
    vpu(VpuOpcode::kDiv, d, t, b);
    vpu(VpuOpcode::kShl, d, d, one);
    vpu(VpuOpcode::kMul, t, d, b);
    vpu(VpuOpcode::kSub, t, a, t);         // remainder, in [0, 2b)
    less_unsigned(t, t, b, sign, ax, bx);  // 1 when the remainder is already below b
    vpu(VpuOpcode::kXor, t, t, one);
    vpu(VpuOpcode::kAdd, d, d, t);
    less_unsigned(t, a, b, sign, ax, bx);  // big divisor: quotient is a >= b
    vpu(VpuOpcode::kXor, t, t, one);
    int zero = constant(0);
    vpu(VpuOpcode::kCmplt, big, b, zero);  // b >= 2^31
    emit(instr::select(d, big, t, d));
    for (int r : {sign, one, t, ax, bx, big, zero}) release(r);
  }

  bool zero_leaf(int node) const { return uniform_[node] == 0u; }
  // MAX(x, 0) on signed lanes (narrow unsigned lanes are never negative) is one RELU: no zero tile.
  int relu_input(const TileNode& n) const {
    if (n.op != Op::MAX || is_float(n.dtype) || n.dtype == DType::kU32) return -1;
    return zero_leaf(n.b) ? n.a : zero_leaf(n.a) ? n.b : -1;
  }

  // An op whose lowering is the op table's one instruction for its lanes.
  void one_instruction(const OpInfo& info, bool f, int d, int a, int b) {
    const std::optional<VpuOpcode>& op = f ? info.f32_op : info.int_op;
    if (!op)
      throw Unsupported(std::string("internal: no one-instruction lowering of ") + info.name +
                        (f ? " on float32" : " on integers"));
    vpu(*op, d, a, kVpuOps[int(*op)].arity == 2 ? b : 0);  // a unary op's second operand field stays 0
  }

  // The op table's lowering of the node: a function of its row (lowerings.h), else the row's one instruction;
  // then the result wrapped to a narrow integer dtype when the row says so.
  void emit_node(int i) {
    const TileNode& n = p_.nodes[i];
    int relu = relu_input(n);
    int a = relu >= 0 ? operand(relu) : n.a >= 0 ? operand(n.a) : -1;
    int b = relu < 0 && n.b >= 0 ? operand(n.b) : -1;
    int c = n.c >= 0 ? operand(n.c) : -1;
    int d = alloc_vreg();
    bool f = is_float(n.dtype) || (n.op != Op::CAST && is_float(n.from));
    const OpInfo& info = op_info(n.op);
    if (info.lower)
      info.lower(*this, {n, f, relu >= 0, d, a, b, c});
    else
      one_instruction(info, f, d, a, b);
    if (info.wraps && !in_range_[i]) wrap(n.dtype, d);
    set_vreg(i, d);
    if (last_use_[i] < 0) {  // computed only for a store that a later store overwrote
      release(d);
      set_vreg(i, -1);
    }
    drop_dead(i);
  }

  // (In place, not a vector: program order asks for a waiting store's reads after every node.)
  struct StoreReads {
    std::array<int, 3> nodes;
    int count;
    const int* begin() const { return nodes.data(); }
    const int* end() const { return nodes.data() + count; }
  };
  static StoreReads store_reads(const TileStore& s) {
    StoreReads r{{s.value}, 1};
    if (s.gate >= 0) r.nodes[r.count++] = s.gate;
    if (s.index_node >= 0) r.nodes[r.count++] = s.index_node;
    return r;
  }
  // The value's tile, then the gate's and the indices' for a data-dependent store, in one launch.
  void emit_store(int s) {
    const TileStore& st = p_.stores[s];
    std::pair<int, SlotDrain::Role> parts[] = {
        {st.value, SlotDrain::kValue}, {st.gate, SlotDrain::kGate}, {st.index_node, SlotDrain::kIndex}};
    for (int i = 0; i < 3; ++i) {
      auto [node, role] = parts[i];
      if (node < 0) continue;
      if (to_vmem_[node]) {
        int slot = take_out_slot();
        mxu_dot(-1, p_.mxu[p_.nodes[node].mxu], -1, slot);
        cur_.drains.push_back({slot, s, -1, role});
        continue;
      }
      if (is_leaf(node) && vreg_[node] < 0 && !p_.nodes[node].dynamic) {
        // a gathered tile stored as it is: the loader fills an output slot, no LOAD and STORE
        int slot = take_out_slot(true);
        cur_.fills.push_back({slot, node, p_.nodes[node].dtype});
        cur_.drains.push_back({slot, s, -1, role});
        continue;
      }
      int r = operand(node);
      // A value this STORE reads last needs no room for a spill: free its vreg before the room checks
      // (a launch would otherwise be cut here, its last value spilled and stored by the next one).
      bool read_again = false;
      for (int j = i + 1; j < 3; ++j) read_again |= parts[j].first == node;
      if (last_use_[node] <= pos_ && !read_again) {
        release(r);
        set_vreg(node, -1);
      }
      int slot = take_out_slot();
      emit(instr::store(slot, r));
      cur_.drains.push_back({slot, s, -1, role});
    }
    for (auto [node, role] : parts)
      if (node >= 0 && vreg_[node] >= 0 && last_use_[node] <= pos_) {
        release(vreg_[node]);
        set_vreg(node, -1);
      }
  }
};

// The multi-instruction lowerings, one per op table row that names one (op_table.cc, lowerings.h). Each
// writes the node's value into o.d from its operands' vregs; the op table's `wraps` column says whether the
// lowering then wraps a narrow integer result to its dtype (emit_node).
namespace lowering {

void neg(Emitter& e, const Lowered& o) {
  if (!o.f) return e.emit(instr::vneg(o.d, o.a));
  int s = e.constant(int32_t(0x80000000u));  // flip the sign bit
  e.vpu(VpuOpcode::kXor, o.d, o.a, s);
  e.release(s);
}

void max(Emitter& e, const Lowered& o) {
  if (o.relu) return e.vpu(VpuOpcode::kRelu, o.d, o.a);
  if (o.f) {  // a < b ? b : a, tinygrad's definition: a NaN in b keeps a (FMAX would pick b)
    int c = e.alloc_vreg();
    e.vpu(VpuOpcode::kFcmplt, c, o.a, o.b);
    e.emit(instr::select(o.d, c, o.b, o.a));
    return e.release(c);
  }
  e.vpu(o.n.dtype == DType::kU32 ? VpuOpcode::kMaxU32 : *op_info(Op::MAX).int_op, o.d, o.a, o.b);
}

void cmplt(Emitter& e, const Lowered& o) {
  if (o.f || o.n.from != DType::kU32) return e.one_instruction(op_info(Op::CMPLT), o.f, o.d, o.a, o.b);
  int s = e.constant(int32_t(0x80000000u)), t = e.alloc_vreg();
  e.less_unsigned(o.d, o.a, o.b, s, o.d, t);
  e.release(s);
  e.release(t);
}

void equality(Emitter& e, const Lowered& o) {  // CMPNE, CMPEQ
  if (!o.f) return e.one_instruction(op_info(o.n.op), o.f, o.d, o.a, o.b);
  e.float_ne(o.d, o.n, o.a, o.b);
  if (o.n.op == Op::CMPNE) return;
  int one = e.constant(1);
  e.vpu(VpuOpcode::kXor, o.d, o.d, one);
  e.release(one);
}

void where(Emitter& e, const Lowered& o) { e.emit(instr::select(o.d, o.a, o.b, o.c)); }

void shr(Emitter& e, const Lowered& o) {
  if (is_signed(o.n.dtype)) return e.sar(o.d, o.a, o.b);
  e.one_instruction(op_info(Op::SHR), o.f, o.d, o.a, o.b);
}

void cdiv(Emitter& e, const Lowered& o) {
  if (o.n.dtype == DType::kU32) return e.udiv(o.d, o.a, o.b);
  e.one_instruction(op_info(Op::CDIV), o.f, o.d, o.a, o.b);
}

void cmod(Emitter& e, const Lowered& o) {  // a - (a / b) * b, sign of the dividend
  cdiv(e, o);
  e.vpu(VpuOpcode::kMul, o.d, o.d, o.b);
  e.vpu(VpuOpcode::kSub, o.d, o.a, o.d);
}

// The bits; a narrow integer's re-extended as its dtype is (int8 <-> uint8) by the wrap that follows.
void bitcast(Emitter& e, const Lowered& o) { e.vpu(VpuOpcode::kAnd, o.d, o.a, o.a); }

void mxu_dot(Emitter& e, const Lowered& o) { e.mxu_dot(o.d, e.p_.mxu[o.n.mxu], o.a); }

void lane_reduce(Emitter& e, const Lowered& o) {
  if (o.n.axis != LaneAxis::kPair) return e.vpu(lane_reduce_opcode(o.n), o.d, o.a);
  int t = e.alloc_vreg();  // lane 2j combines with lane 2j+1 of its row
  e.emit(instr::rotate(t, o.a, 1));
  e.vpu(lane_reduce_opcode(o.n), o.d, o.a, t);
  e.release(t);
}

void lane_broadcast(Emitter& e, const Lowered& o) {
  const TileNode& n = o.n;
  e.emit(n.axis == LaneAxis::kTile  ? instr::broadcast_scalar(o.d, o.a, n.lane / kRows, n.lane % kRows)
         : n.axis == LaneAxis::kRow ? instr::broadcast_col(o.d, o.a, n.lane)
                                    : instr::broadcast_row(o.d, o.a, n.lane));
}

void fdiv(Emitter& e, const Lowered& o) {
  if (!e.fast_math_) return e.divide(o.d, o.a, o.b);
  e.vpu(VpuOpcode::kFrecip, o.d, o.b);
  e.vpu(VpuOpcode::kFmul, o.d, o.a, o.d);
}

void div_scale(Emitter& e, const Lowered& o) {
  int t = e.alloc_vreg();
  e.div_scale(o.d, o.a, t);
  e.release(t);
}

void div_exact(Emitter& e, const Lowered& o) {
  int q = e.alloc_vreg();
  e.div_exact(o.d, o.a, o.b, o.c, q);
  e.release(q);
}

void reciprocal(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.vpu(VpuOpcode::kFrecip, o.d, o.a);
  e.reciprocal(o.d, o.a);
}

void sqrt(Emitter& e, const Lowered& o) { e.square_root(o.d, o.a); }

// Fast math: the TranscUnit's instruction; else tinygrad's decomposition, in fewer instructions.
void exp2(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.one_instruction(op_info(Op::EXP2), true, o.d, o.a, o.b);
  e.exp2_decomposed(o.d, o.a);
}
void log2(Emitter& e, const Lowered& o) {
  if (e.fast_math_) return e.one_instruction(op_info(Op::LOG2), true, o.d, o.a, o.b);
  e.log2_decomposed(o.d, o.a);
}

void trunc(Emitter& e, const Lowered& o) { e.trunc(o.d, o.a); }

void cast(Emitter& e, const Lowered& o) {
  const DType to = o.n.dtype, from = o.n.from;
  int a = o.a;
  if (to == DType::kBool) {
    if (is_float(from)) {  // x != 0.0: any bit but the sign set
      int m = e.constant(0x7FFFFFFF);
      e.vpu(VpuOpcode::kAnd, o.d, a, m);
      e.release(m);
      a = o.d;
    }
    int zero = e.constant(0);
    e.vpu(VpuOpcode::kCmpne, o.d, a, zero);
    return e.release(zero);
  }
  if (is_float(to) && !is_float(from)) {
    if ((from == DType::kI32 || from == DType::kU32) && !e.from_float_to_i32(o.n.a))
      return e.int_to_float(o.d, a, from == DType::kI32);
    return e.vpu(VpuOpcode::kI2f, o.d, a);  // exact below 2^24, and on F2I's results
  }
  if (!is_float(to) && is_float(from)) return e.vpu(VpuOpcode::kF2i, o.d, a);
  e.vpu(VpuOpcode::kAnd, o.d, a, a);
}

}  // namespace lowering

int64_t estimated_cycles(const std::vector<Launch>& launches) {
  int64_t cycles = 0;
  for (const Launch& l : launches)
    cycles += estimated_cycles(int64_t(l.fills.size() + l.mxu_fills.size() + l.drains.size()), l.program);
  return cycles;
}

std::vector<Launch> lower(const TileProgram& prog, const TensorCoreConfig& cfg, std::vector<Tile>& constants,
                          bool fast_math, const Choices& choices) {
  // Both emission orders, and the one whose launches take fewer cycles.
  const NodeFacts facts(prog);
  Emitter by_store(prog, facts, cfg, fast_math, choices, EmitOrder::kByStore);
  auto launches = by_store.run();
  constants = by_store.consts_;
  if (prog.stores.size() < 2) return launches;
  Emitter in_order(prog, facts, cfg, fast_math, choices, EmitOrder::kProgram);
  auto other = in_order.run();
  if (estimated_cycles(other) < estimated_cycles(launches)) {
    constants = in_order.consts_;
    return other;
  }
  return launches;
}

}  // namespace tinytpu::compiler
