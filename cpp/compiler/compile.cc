#include "compiler/compile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "base/errors.h"
#include "compiler/choose_layout.h"
#include "compiler/clamps.h"
#include "compiler/divide.h"
#include "compiler/independent.h"
#include "compiler/lane_pack.h"
#include "compiler/log.h"
#include "compiler/lower.h"
#include "compiler/mxu_dot.h"
#include "compiler/mxu_fills.h"
#include "compiler/replay.h"

namespace tinytpu::compiler {

namespace {

// FNV-1a, a word at a time: the plan builder's hashes.
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
void fnv_mix(uint64_t& h, uint64_t v) { h = (h ^ v) * 1099511628211ull; }

// Turns each batch's launches into plan launches: one validated bundle per distinct program, and where
// every filled tile comes from and every drained tile goes.
class PlanBuilder {
 public:
  // `sizes`: elements per slot, the memo buffers' too (the counter slot's is not read).
  // `tables`: the buffers whose rows a launch-time variable picks (rows_picked_by_variables), on a core with
  // a SparseCore; none otherwise.
  PlanBuilder(Plan& plan, const std::vector<int64_t>& sizes, size_t buffers, std::set<int> tables)
      : plan_(plan), sizes_(sizes), tables_(std::move(tables)) {
    plan_.written.assign(buffers, false);
  }
  int64_t table_rows() const { return table_rows_; }  // VMEM records so far that are table rows

  size_t images() const {  // distinct programs so far
    size_t n = 0;
    for (const auto& [hash, same_hash] : images_) n += same_hash.size();
    return n;
  }

  // Adds a batch's launches to the plan, with a run of them.
  CompiledBatch add(const TileProgram& prog, const std::vector<Launch>& launches,
                    const std::vector<Tile>& consts) {
    spilled_.assign(prog.nodes.size(), -1);  // node numbers are the batch's
    CompiledBatch batch{int64_t(plan_.launches.size()), int64_t(launches.size())};
    bounds_ = &batch.bounds;
    // Scratch tiles are reused: a spilled value's is free after the last launch that reads it (its fills, or
    // the index tiles of their gathers), so that a call's kept tiles stay few and in cache. A batch spills
    // nothing an earlier one reads.
    last_read_.assign(prog.nodes.size(), -1);
    for (int i = 0; i < int(launches.size()); ++i)
      for (const SlotFill& f : launches[size_t(i)].fills)
        for_each_read(prog, f.node, [&](int n) { last_read_[size_t(n)] = i; });
    free_scratch_.clear();
    next_scratch_ = 0;
    spills_ = 0;
    for (int i = 0; i < int(launches.size()); ++i) {
      const Launch& l = launches[size_t(i)];
      PlanLaunch out;
      // records: VMEM fills, then MXU fills, then the program and the output records
      int record = 0;
      for (const SlotFill& f : l.fills) {
        if (f.node >= 0) out.fills.push_back({record, source(prog, f.node)});
        ++record;
      }
      for (const MxuFill& f : l.mxu_fills) out.mxu_fills.push_back({record++, operand(f)});
      for (const SlotFill& f : l.fills)  // read for the last time: free for this launch's spills on
        for_each_read(prog, f.node, [&](int n) {
          if (last_read_[size_t(n)] == i && spilled_[size_t(n)] >= 0) free_scratch(n);
        });
      drains(prog, l, out, i);
      out.image = intern(l, consts, table_rows(prog, l));
      plan_.launches.push_back(std::move(out));
    }
    batch.spills = spills_;
    plan_.runs.push_back({batch.first, batch.count});
    return batch;
  }

 private:
  Plan& plan_;
  const std::vector<int64_t>& sizes_;
  const std::set<int> tables_;
  int64_t table_rows_ = 0;
  std::vector<int> spilled_;    // node of the batch -> scratch tile holding its value, or -1
  std::vector<int> last_read_;  // node of the batch -> the last of its launches that reads it, or -1
  std::vector<int> free_scratch_;
  int next_scratch_ = 0;
  int64_t spills_ = 0;
  // f(node) for a fill's node and the nodes of its gather's element indices (a dynamic gather's), which the
  // fill may read spilled (source()).
  template <class F>
  static void for_each_read(const TileProgram& prog, int node, F f) {
    for (int n = node; n >= 0; n = prog.nodes[size_t(n)].dynamic ? prog.nodes[size_t(n)].a : -1) f(n);
  }
  int take_scratch() {
    if (!free_scratch_.empty()) {
      const int id = free_scratch_.back();
      free_scratch_.pop_back();
      return id;
    }
    plan_.scratch_tiles = std::max(plan_.scratch_tiles, next_scratch_ + 1);
    return next_scratch_++;
  }
  void free_scratch(int node) {
    free_scratch_.push_back(spilled_[size_t(node)]);
    spilled_[size_t(node)] = -1;  // (read no more)
  }
  std::vector<std::pair<int64_t, int64_t>>* bounds_ = nullptr;  // the batch's, per buffer
  std::map<std::tuple<bool, bool, MxuTile>, int> operands_;  // (weight, words, lanes) -> Plan::mxu_operands
  struct OffsetsHash {
    size_t operator()(const LaneOffsets& o) const {
      uint64_t h = kFnvOffset;
      for (int l = 0; l < kLanes; ++l) fnv_mix(h, uint32_t(o.constant[size_t(l)] ? o.constants[l] : o.at[l]));
      // std::hash, not to_ulong: a wide core's mask has more bits than a long
      fnv_mix(h, uint32_t(std::hash<LaneMask>()(o.constant)));
      return size_t(h);
    }
  };
  std::unordered_map<LaneOffsets, int, OffsetsHash> offsets_;  // interned Plan::lane_offsets
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const Image>>> images_;  // by content hash

  int add(TileSource s) {
    plan_.sources.push_back(s);
    return int(plan_.sources.size()) - 1;
  }

  // A fill's source: a spilled value, a pinned tile, or a leaf's gather.
  int source(const TileProgram& prog, int node) {
    if (spilled_[node] >= 0) return add({TileSource::Kind::kScratch, spilled_[node]});
    const TileNode& t = prog.nodes[node];
    if (t.pinned >= 0) return add({TileSource::Kind::kPinned, t.pinned});
    if (t.dynamic) {
      int index = source(prog, t.a);
      plan_.lanes.push_back(prog.lanes(t));
      return add({TileSource::Kind::kDynamic, int(plan_.lanes.size()) - 1, index, t.gated});
    }
    if (!t.gated) in_range(prog.lanes(t));  // a gated lane is checked when it runs: out of range, it reads 0
    return add(gather(prog.lanes(t), 0, t.gated));
  }
  // Each lane reads a constant or an element of its buffer: one out of range is an error. Checked and
  // widened a run of lanes of one buffer at a time (a gather's lanes mostly read one), lane by lane only to
  // name the first out of range.
  void in_range(const LeafLanes& lanes) {
    for (int l = 0, end; l < kLanes; l = end) {
      const int buf = lanes[l].buf;
      int64_t lo = lanes[l].index, hi = lo;
      for (end = l + 1; end < kLanes && lanes[end].buf == buf; ++end) {
        lo = std::min(lo, lanes[end].index);
        hi = std::max(hi, lanes[end].index);
      }
      if (buf < 0 || buf == counter_slot(plan_.written)) continue;
      if (lo < 0 || hi >= sizes_[buf])
        for (int k = l; k < end; ++k) check_gather(lanes[k].index, buf, sizes_[buf]);
      widen(*bounds_, buf, lo, hi);
    }
  }
  // The plan's operand for an MXU fill, one per distinct tile or row, with every chain that reads it.
  int operand(const MxuFill& f) {
    auto [it, fresh] =
        operands_.emplace(std::tuple{f.weight, f.words, f.data}, int(plan_.mxu_operands.size()));
    if (fresh) plan_.mxu_operands.push_back({f.data, f.weight, mxu_source(f.data), {}, f.words});
    std::vector<int>& chains = plan_.mxu_operands[it->second].chains;
    for (int c : f.chains)
      if (std::find(chains.begin(), chains.end(), c) == chains.end()) chains.push_back(c);
    return it->second;
  }
  int mxu_source(const MxuTile& tile) {
    LeafLanes lanes;
    LaneMask negate;
    for (int l = 0; l < kLanes; ++l) {
      lanes[l] = tile[l].src;
      negate[l] = tile[l].negate;
    }
    in_range(lanes);
    return add(gather(lanes, negate, false));
  }
  // A static gather, strided when its lanes allow (lanes past the first n read the constant 0).
  TileSource gather(const std::array<LeafLane, kLanes>& lanes, LaneMask negate, bool gated) {
    int n = 0;
    while (n < kLanes && lanes[n].buf >= 0) ++n;
    bool strided = n > 0;
    for (int l = n; l < kLanes && strided; ++l) strided = lanes[l].bits == 0 && lanes[l].buf < 0;
    if (strided) {
      StridedGather g{lanes[0].buf, n, lanes[0].index, n > 1 ? lanes[1].index - lanes[0].index : 0,
                      n > kRows ? lanes[kRows].index - lanes[0].index : 0};
      for (int l = 0; l < n && strided; ++l) strided = lanes[l].buf == g.buf && lanes[l].index == g.index(l);
      if (strided) {
        plan_.strided.push_back(g);
        return {TileSource::Kind::kStrided, int(plan_.strided.size()) - 1, -1, gated, negate};
      }
    }
    if (std::optional<OffsetGather> g = offset_gather(lanes)) {
      plan_.offset_gathers.push_back(*g);
      return {TileSource::Kind::kOffsets, int(plan_.offset_gathers.size()) - 1, -1, gated, negate};
    }
    plan_.lanes.push_back(lanes);
    return {TileSource::Kind::kLanes, int(plan_.lanes.size()) - 1, -1, gated, negate};
  }
  // Lanes that read elements of one buffer (or constants), at offsets from the first element lane's that fit
  // 32 bits.
  std::optional<OffsetGather> offset_gather(const LeafLanes& lanes) {
    int first = 0;
    while (first < kLanes && lanes[first].buf < 0) ++first;
    if (first == kLanes) return std::nullopt;
    const int buf = lanes[first].buf;
    if (buf == counter_slot(plan_.written)) return std::nullopt;
    Lanes at;
    LaneMask constant;
    Tile constants{};
    for (int l = 0; l < kLanes; ++l) {
      constant[size_t(l)] = lanes[l].buf < 0;
      if (constant[size_t(l)])
        constants[l] = int32_t(lanes[l].bits);
      else if (lanes[l].buf != buf)
        return std::nullopt;
      at[l] = constant[size_t(l)] ? lanes[first].index : lanes[l].index;
    }
    std::optional<int> o = offsets(at, constant, constants);
    if (!o) return std::nullopt;
    return OffsetGather{buf, *o, lanes[first].index};
  }
  // Plan::lane_offsets for elements at[l] - at[0] (and constant lanes), interned; none when an offset does
  // not fit 32 bits.
  std::optional<int> offsets(const Lanes& at, LaneMask constant = {}, const Tile& constants = {}) {
    LaneOffsets o{{}, 0, 0, constant, constants};
    for (int l = 0; l < kLanes; ++l) {
      const int64_t off = at[l] - at[0];
      if (off != int32_t(off)) return std::nullopt;
      o.at[l] = int32_t(off);
      o.lo = std::min(o.lo, o.at[l]);
      o.hi = std::max(o.hi, o.at[l]);
    }
    auto [it, fresh] = offsets_.emplace(o, int(plan_.lane_offsets.size()));
    if (fresh) plan_.lane_offsets.push_back(o);
    return it->second;
  }

  // Drained tiles: spills to scratch, pinned values, and stores with their gate and index tiles.
  void drains(const TileProgram& prog, const Launch& l, PlanLaunch& out, int launch) {
    std::map<std::pair<int, int>, int> parts;  // (store, role) -> output position
    for (int k = 0; k < int(l.drains.size()); ++k) {
      const SlotDrain& d = l.drains[k];
      if (d.spill >= 0) {
        spilled_[d.spill] = take_scratch();
        out.keeps.push_back({k, false, spilled_[d.spill]});
        ++spills_;
        if (last_read_[size_t(d.spill)] <= launch) free_scratch(d.spill);  // read by no later launch
      } else {
        parts[{d.store, d.role}] = k;
      }
    }
    for (int k = 0; k < int(l.drains.size()); ++k) {
      const SlotDrain& d = l.drains[k];
      if (d.spill >= 0 || d.role != SlotDrain::kValue) continue;
      const TileStore& st = prog.stores[d.store];
      if (st.pin >= 0) {
        out.keeps.push_back({k, true, st.pin});
        plan_.pinned_tiles = std::max({plan_.pinned_tiles, st.pin + 1, other_bank(st.pin) + 1});
        continue;
      }
      Scatter s{st.buf, k};
      if (st.gate >= 0) s.gate = parts.at({d.store, SlotDrain::kGate});
      if (st.index_node >= 0) {
        s.index_tile = parts.at({d.store, SlotDrain::kIndex});
      } else {
        // an inactive lane stores nothing: its offset is 0, so that the active lanes bound the tile's
        int first = 0;
        while (first < kLanes && !st.active[first]) ++first;
        Lanes at;
        for (int lane = 0; lane < kLanes; ++lane)
          at[lane] = st.index[st.active[lane] ? lane : first % kLanes];
        std::optional<int> o = offsets(at);
        if (!o)
          throw Unsupported("a store to buffer " + std::to_string(st.buf) +
                            " whose lanes are more than 2^31 elements apart");
        s.offsets = *o;
        s.base = at[0];
      }
      for (int lane = 0; lane < kLanes; ++lane) s.active[lane] = st.active[lane];
      if (size_t(st.buf) < plan_.written.size()) plan_.written[st.buf] = true;  // not a memo buffer
      out.scatters.push_back(s);
    }
  }

  // A launch's bundle records in order, each given to `f` as (type, address, data: null for zeros,
  // instruction): interning hashes and compares them without building the bundle, which only a program
  // not seen before needs.
  template <class F>
  static void for_each_record(const Launch& l, const std::vector<Tile>& consts, F f) {
    const Instr none{};
    for (const SlotFill& fill : l.fills)
      f(RecordType::kVmemTile, fill.slot, fill.node < 0 ? &consts[-fill.node - 1] : nullptr, none);
    for (const MxuFill& fill : l.mxu_fills) f(record_type(fill), fill.addr, nullptr, none);
    for (const Instr& in : l.program) f(RecordType::kInstr, 0, nullptr, in);
    for (const SlotDrain& d : l.drains) f(RecordType::kOutputVmem, d.slot, nullptr, none);
  }

  // Per VMEM record of the launch, whether it is a row of a table a variable picks: a leaf whose lanes are
  // elements of one such table at a constant stride (consecutive, or every fourth when tinygrad upcasts the
  // row's axis), which the SparseCore reads as one row (Image::table_rows).
  std::vector<bool> table_rows(const TileProgram& prog, const Launch& l) {
    std::vector<bool> rows;
    if (tables_.empty()) return rows;
    for (const SlotFill& f : l.fills) {
      bool row = f.node >= 0;
      if (row) {
        const TileNode& t = prog.nodes[size_t(f.node)];
        const LeafLanes& lanes = prog.lanes(t);
        row = t.op == Op::LOAD && !t.dynamic && !t.gated && t.pinned < 0 && tables_.count(lanes[0].buf);
        const int64_t stride = lanes[1].index - lanes[0].index;
        for (int i = 1; row && i < kLanes; ++i)
          row = stride > 0 && lanes[size_t(i)].buf == lanes[0].buf &&
                lanes[size_t(i)].index == lanes[0].index + i * stride;
      }
      rows.push_back(row);
      table_rows_ += row;
    }
    return rows;
  }

  // One validated copy of each distinct bundle (a kernel's chunks mostly compile to the same program).
  std::shared_ptr<const Image> intern(const Launch& l, const std::vector<Tile>& consts,
                                      std::vector<bool> rows) {
    // Each record hashed on its own, then combined: the mixes of different records do not wait on each
    // other (a large batch hashes every launch it lowers). Whole words: the fields packed, two values a word.
    static_assert(kTileElems % 2 == 0);
    uint64_t h = kFnvOffset;
    for_each_record(l, consts, [&](RecordType type, int addr, const Tile* data, const Instr& in) {
      uint64_t record = kFnvOffset;
      fnv_mix(record, uint64_t(type) << 40 | uint64_t(uint32_t(addr)) << 8 | in.op);
      fnv_mix(record, uint64_t(in.vmemAddr) << 56 | uint64_t(in.vregDst) << 48 | uint64_t(in.vregSrc) << 40 |
                          uint64_t(in.vpuOp) << 32 | uint64_t(in.vregSrc2) << 24 |
                          uint64_t(in.mxuWBase) << 16 | uint64_t(in.mxuABase) << 8 | in.mxuTLen);
      if (data)
        for (size_t i = 0; i < data->size(); i += 2)
          fnv_mix(record, uint64_t(uint32_t((*data)[i])) | uint64_t(uint32_t((*data)[i + 1])) << 32);
      fnv_mix(h, record);
    });
    for (const SlotFill& f : l.fills) fnv_mix(h, uint64_t(f.dtype));
    for (bool row : rows) fnv_mix(h, row);
    auto& same_hash = images_[h];
    for (const auto& known : same_hash)
      if (known->table_rows == rows && same(*known, l, consts)) return known;
    Image image;
    image.bundle.records.reserve(l.fills.size() + l.mxu_fills.size() + l.program.size() + l.drains.size());
    for_each_record(l, consts, [&](RecordType type, int addr, const Tile* data, const Instr& in) {
      Record& r = image.bundle.records.emplace_back(Record{type, addr});
      if (data) r.data = *data;
      r.instr = in;
    });
    image.fill_dtypes.reserve(l.fills.size());
    for (const SlotFill& f : l.fills) image.fill_dtypes.push_back(f.dtype);
    image.table_rows = std::move(rows);
    validate(image.bundle, plan_.config);
    const std::optional<Activity> activity = straight_line_activity(image.bundle, plan_.config);
    if (!activity) throw SimError("internal: a compiled launch's program does not run straight through");
    image.activity = *activity;
    same_hash.push_back(std::make_shared<const Image>(std::move(image)));
    return same_hash.back();
  }
  // Whether the launch's bundle is the image's.
  static bool same(const Image& image, const Launch& l, const std::vector<Tile>& consts) {
    const std::vector<Record>& records = image.bundle.records;
    if (records.size() != l.fills.size() + l.mxu_fills.size() + l.program.size() + l.drains.size() ||
        image.fill_dtypes.size() != l.fills.size())
      return false;
    for (size_t i = 0; i < l.fills.size(); ++i)
      if (image.fill_dtypes[i] != l.fills[i].dtype) return false;
    bool equal = true;
    size_t i = 0;
    for_each_record(l, consts, [&](RecordType type, int addr, const Tile* data, const Instr& in) {
      const Record& r = records[i++];
      equal = equal && r.type == type && r.addr == addr && (data ? r.data == *data : r.data == Tile{}) &&
              r.instr == in;
    });
    return equal;
  }
};

// The passes, in order, for their host time in the decision log.
enum class Pass : uint8_t { kTrace, kShape, kClamps, kFuseMxu, kPack, kLower, kPlan, kCount };
constexpr std::array<const char*, size_t(Pass::kCount)> kPassNames = {"trace", "shape", "clamps", "fuse_mxu",
                                                                      "pack",  "lower", "plan"};

// What the passes decided, for the decision log.
struct Decisions {
  int64_t batches = 0, launches = 0, spills = 0, stores = 0, packed_stores = 0, lane_reduces = 0,
          broadcasts = 0;
  int64_t ws_blocks = 0, os_blocks = 0, across_blocks = 0;
  // The MXU blocks' floor (mxu_floor) and the estimated cycles of the launches of the batches holding them.
  int64_t mxu_floor = 0, mxu_estimate = 0;
  int mxu_chains = 0;
  std::map<std::string, int64_t> cuts;  // launches ended early, by the limit reached
  // Host time per pass (the log at debug), timed only when the log shows it.
  std::array<double, size_t(Pass::kCount)> pass_ms{};
  bool timing = decision_log().should_log(spdlog::level::debug);
  std::chrono::steady_clock::time_point mark = std::chrono::steady_clock::now();
  void passed(Pass pass) {
    if (!timing) return;
    auto now = std::chrono::steady_clock::now();
    pass_ms[size_t(pass)] += std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
  }

  // A batch's counts, compiled or replayed.
  void counted(const CompiledBatch& b) {
    ++batches;
    launches += b.count;
    stores += b.stores;
    packed_stores += b.packed_stores;
    lane_reduces += b.lane_reduces;
    broadcasts += b.broadcasts;
    spills += b.spills;
    for (const auto& [why, n] : b.cuts) cuts[why] += n;
  }
  std::string cut_summary() const {
    std::string out;
    for (const auto& [why, n] : cuts) out += (out.empty() ? "" : ", ") + std::to_string(n) + " at " + why;
    return out;
  }

  void floored(const TileProgram& prog, const std::vector<Launch>& launches) {
    if (prog.mxu.empty()) return;
    for (const MxuDot& m : prog.mxu) mxu_floor += compiler::mxu_floor(m);
    mxu_estimate += estimated_cycles(launches, TensorCoreConfig{});  // the floor's: the testbench's count
  }

  std::string engine;         // choose_engine's estimates, when it chose
  const char* dots = "int8";  // the kind of dot products it chose for: int8, or float32 on a float MXU
  void fused(const TileProgram& prog, int first_chain, int next_chain, bool on_vpu) {
    std::set<int> on_mxu;
    for (const MxuDot& m : prog.mxu) {
      ++(m.across ? across_blocks : m.os ? os_blocks : ws_blocks);
      on_mxu.insert(m.chains.begin(), m.chains.end());
    }
    mxu_chains += int(on_mxu.size());
    if (decision_log().should_log(spdlog::level::debug))
      for (int c = first_chain; c < next_chain; ++c) {
        int ws = 0, os = 0, dispatches = 0;
        for (const MxuDot& m : prog.mxu)
          if (std::find(m.chains.begin(), m.chains.end(), c) != m.chains.end()) {
            ++(m.os ? os : ws);
            dispatches += int(m.dispatches.size());
          }
        if (ws + os == 0)
          decision_log().debug("  chain {}: VPU ({})", c,
                               on_vpu ? "the kernel's dot products are cheaper there"
                                      : "vetoed: an element out of int8 range");
        else
          decision_log().debug(
              "  chain {}: MXU, {} output-stationary and {} weight-stationary blocks "
              "(the cheaper by the cycle estimate){}",
              c, os, ws,
              // hardware.md §2.3: the epilogue dispatches (42, 45, 46) are weight-stationary and clear the
              // array when they start, so a bias, ReLU or requantisation after a longer sum runs on the VPU
              dispatches > 1 ? fmt::format("; a bias, ReLU or requantisation after it runs on the VPU (the "
                                           "MXU's epilogues finish one weight-stationary dispatch; this sum "
                                           "takes {})",
                                           dispatches)
                             : "");
      }
  }
};

// Runs a cached batch's launches with this batch's element indices: the runs' gathers are checked
// against the buffers as compiling the batch would have checked them.
void replay(const ReplayCache::Hit& hit, const std::vector<int64_t>& sizes, Plan& plan) {
  const CompiledBatch& b = *hit.batch;
  for (int buf = 0; buf < int(b.bounds.size()); ++buf) {
    auto [lo, hi] = b.bounds[buf];
    if (lo > hi) continue;  // not gathered from
    check_gather(lo + hit.shift[buf], buf, sizes[buf]);
    check_gather(hi + hit.shift[buf], buf, sizes[buf]);
  }
  plan.shifts.push_back(hit.shift);
  plan.runs.push_back({b.first, b.count, int(plan.shifts.size()) - 1, hit.swap_banks});
}

// compile()'s batches: each traced batch of chunks is replayed from an earlier one of the same shape, or
// fused, packed, lowered and added to the plan. Holds what carries across batches.
class Batches {
 public:
  Batches(const Kernel& k, const TensorCoreConfig& cfg, const Choices& choices, Tracer& tracer, Plan& plan,
          FirstChunk first, size_t buffers, bool trace_every_chunk)
      : k_(k),
        cfg_(cfg),
        choices_(choices),
        tracer_(tracer),
        plan_(plan),
        builder_(plan, tracer.slot_sizes(), buffers,
                 cfg.sparse_core ? rows_picked_by_variables(k) : std::set<int>{}),
        first_(std::move(first)),
        emissions_(first_.emissions),
        period_(trace_every_chunk ? ChunkPeriod{} : tracer.chunk_period()) {}

  TileProgram& prog() { return prog_; }

  // A chunk traced whole into a batch of its own that stores float products' factors not kept before (its
  // chains compute them on the VPU): when the kernel's dot products may run on the MXU, the batch is compiled
  // with only those stores (and pinned tiles), as a prologue the chunk's values are kept by, and the chunk is
  // to be traced again, its factors then read as kept elements. True when it was.
  bool keep_operands_first(int64_t chunk) {
    if (mxu_ == Engine::kVpu || !tracer_.dot_operands_stored()) return false;
    const int memo = memo_slot(plan_.written, 0);
    prog_.stores.erase(std::remove_if(prog_.stores.begin(), prog_.stores.end(),
                                      [&](const TileStore& st) { return st.buf < memo && st.pin < 0; }),
                       prog_.stores.end());
    compile(chunk, false);
    return true;
  }

  // The traced batch, which ends in chunk `chunk` (at its end when `chunk_done`), into the plan; the program
  // is emptied for the next (not freed: it is mostly as large).
  void compile(int64_t chunk, bool chunk_done) {
    if (prog_.stores.empty()) return;
    why_.passed(Pass::kTrace);
    BatchFacts facts = tracer_.batch_compiled();
    const bool has_shape = batch_shape(prog_, shape_);
    why_.passed(Pass::kShape);
    std::optional<ReplayCache::Hit> hit;  // the batch's launches, as the cache would give them for it
    if ((hit = has_shape ? replays_.find(shape_) : std::nullopt)) {  // an earlier batch's launches, shifted
      replay(*hit, tracer_.slot_sizes(), plan_);
      why_.counted(*hit->batch);
      why_.passed(Pass::kPlan);
      ++replays_.hits;
    } else if (const CompiledBatch* compiled = compile_new(has_shape)) {
      hit = ReplayCache::Hit{compiled, std::vector<int64_t>(shape_.base.size(), 0), false};
    }
    if (period_.chunks > 0) add_to_group(std::move(hit), std::move(facts), chunk, chunk_done);
    prog_.clear();
  }

  // When the chunks from `c` on repeat an earlier group of batches a whole number of periods on
  // (ChunkPeriod), each of its batches traces to the earlier one's shape with indices moved by the period's
  // shift (and, where a chunk is cut in parts, the banks of pinned tiles exchanged when an odd number of cuts
  // lies between): replayed without tracing them. Returns the group's last chunk, or -1 when `c` is to be
  // traced.
  int64_t repeat(int64_t c) {
    if (period_.chunks == 0 || !prog_.nodes.empty() || !prog_.stores.empty()) return -1;
    const auto it = repeatable_.find(c % period_.chunks);
    if (it == repeatable_.end() || it->second.first >= c) return -1;
    const Group& g = it->second;
    const int64_t length = g.last - g.first, last = c + length;
    if (last >= tracer_.num_chunks() || !period_.shift(g.first, c, moved_)) return -1;
    for (int64_t i = 1; i <= length; ++i)  // one shift for the whole group
      if (!period_.shift(g.first + i, c + i, chunk_moved_) || chunk_moved_ != moved_) return -1;
    const std::vector<int64_t>& sizes = tracer_.slot_sizes();
    auto inside = [&](const std::vector<std::pair<int64_t, int64_t>>& bounds) {
      for (size_t b = 0; b < bounds.size(); ++b) {
        const int64_t by = b < moved_.size() ? moved_[b] : 0;
        if (bounds[b].first <= bounds[b].second &&
            (bounds[b].first + by < 0 || bounds[b].second + by >= sizes[b]))
          return false;
      }
      return true;
    };
    for (const GroupBatch& b : g.batches)  // tracing them reports the index
      if (!inside(b.facts.loaded) || !inside(b.facts.stored)) return -1;
    const bool exchanged = (tracer_.parts_cut() - g.cuts_before) % 2 != 0;
    int64_t cuts = 0, loops_skipped = 0;
    for (const GroupBatch& b : g.batches) {
      ReplayCache::Hit hit = b.hit;
      for (size_t buf = 0; buf < hit.shift.size() && buf < moved_.size(); ++buf)
        if (b.base[buf] != BatchShape::kNoBase) hit.shift[buf] += moved_[buf];
      hit.swap_banks = hit.swap_banks != (exchanged && b.banks);
      replay(hit, sizes, plan_);
      why_.counted(*hit.batch);
      ++replays_.hits;
      ++repeats_;
      cuts += b.facts.cuts;
      loops_skipped += b.facts.loops_skipped;
    }
    tracer_.repeated(cuts, loops_skipped);
    group_ = group_from(last + 1);
    why_.passed(Pass::kShape);
    return last;
  }

  // The decision log: what the kernel became and why (info), host time by pass (debug).
  void log(int64_t chunks, std::chrono::steady_clock::time_point start) const;

 private:
  const Kernel& k_;
  const TensorCoreConfig& cfg_;
  const Choices& choices_;
  Tracer& tracer_;
  Plan& plan_;
  PlanBuilder builder_;
  FirstChunk first_;
  Emissions emissions_;  // the way the kernel's batches are lowered (lower.h)
  Decisions why_;
  enum class Engine { kUndecided, kMxu, kVpu };
  Engine mxu_ = Engine::kUndecided;  // where the dot products run (choose_engine)
  TileProgram prog_;
  int chains_ = 0;  // dot-product chains numbered so far: a number names one chain of the kernel
  ReplayCache replays_;
  BatchShape shape_;  // the current batch's, in storage kept across batches
  const ChunkPeriod period_;
  // The batches of the chunks from `first` to `last`, traced: a later group of chunks may repeat them
  // (repeat()).
  struct GroupBatch {
    ReplayCache::Hit hit;       // its launches
    std::vector<int64_t> base;  // its shape's: which buffers it reads or writes
    BatchFacts facts;
    bool banks;  // it reads or fills the pinned tiles of a cut
  };
  struct Group {
    int64_t first = 0, last = 0;
    int64_t cuts_before = 0;  // Tracer::parts_cut() when its first chunk began
    std::vector<GroupBatch> batches;
    bool repeatable = true;  // every batch has launches to replay, and traces alike when repeated
  };
  Group group_;                                    // the one being traced
  bool resumed_ = false;                           // the batch being traced began at a cut
  std::unordered_map<int64_t, Group> repeatable_;  // by first chunk % period_.chunks
  std::deque<CompiledBatch> uncached_;  // compiled batches the cache had no room for, which groups replay
  std::vector<int64_t> moved_, chunk_moved_;  // repeat()'s shifts, in storage kept across batches
  int64_t repeats_ = 0;

  // Adds a traced batch to the group; at the end of a chunk the group is complete, and kept for repeat() when
  // what tracing it did is what tracing a repeat of it does: not chunk 0 (the prefix), no load gated by data,
  // no value kept per element.
  void add_to_group(std::optional<ReplayCache::Hit> hit, BatchFacts facts, int64_t chunk, bool chunk_done) {
    const bool banks = resumed_ || !chunk_done;
    resumed_ = !chunk_done;
    // a group longer than the period is rare, and kept batch by batch it could hold the whole kernel's
    group_.repeatable = group_.repeatable && hit && facts.gated_loads == 0 && facts.memo_uses == 0 &&
                        chunk - group_.first < period_.chunks;
    if (group_.repeatable)
      group_.batches.push_back({std::move(*hit), shape_.base, std::move(facts), banks});
    else
      group_.batches.clear();
    if (!chunk_done) return;
    group_.last = chunk;
    if (group_.repeatable && group_.first > 0)
      repeatable_.try_emplace(group_.first % period_.chunks, std::move(group_));
    group_ = group_from(chunk + 1);
  }
  Group group_from(int64_t chunk) const {
    Group g;
    g.first = chunk;
    g.cuts_before = tracer_.parts_cut();
    return g;
  }

  // Where the kernel's dot products run (int8, or float32 on a float MXU), decided on its first batch that
  // has any: the MXU, unless the launches of that batch with the chains left on the VPU take fewer cycles by
  // the estimate (a dot product of few terms, say, which the MXU takes in many short dispatches) and the
  // kernel does not ask for the MXU (Kernel::dots_on_mxu), or its MXU blocks need more than an empty launch
  // has (a block across many chains whose read-back needs more vregs than the core's). The batch is packed
  // and lowered both ways; `launches` and `consts` are left as the chosen way's, and prog_ packed.
  void choose_engine(TileProgram unfused, std::vector<Launch>& launches, std::vector<Tile>& consts) {
    std::vector<Tile> vpu_consts;
    Emissions vpu_emissions = emissions_;
    pack_lanes(unfused);
    std::vector<Launch> on_vpu = lower(unfused, cfg_, vpu_consts, k_.fast_math, choices_, &vpu_emissions);
    pack_lanes(prog_);
    if (std::any_of(prog_.mxu.begin(), prog_.mxu.end(), [](const MxuDot& m) { return m.float32; }))
      why_.dots = "float32";
    const int64_t vpu_cycles = estimated_cycles(on_vpu, cfg_);
    try {
      launches = lower(prog_, cfg_, consts, k_.fast_math, choices_, &emissions_);
      const int64_t mxu_cycles = estimated_cycles(launches, cfg_);
      mxu_ = vpu_cycles < mxu_cycles && !k_.dots_on_mxu ? Engine::kVpu : Engine::kMxu;
      why_.engine = fmt::format("~{} cycles on the MXU against ~{} on the VPU (the first batch, estimated){}",
                                mxu_cycles, vpu_cycles,
                                k_.dots_on_mxu ? "; the kernel asks for the MXU (dots=mxu)" : "");
    } catch (const Unsupported& e) {
      mxu_ = Engine::kVpu;
      why_.engine = fmt::format("its MXU blocks do not fit a launch ({})", e.what());
    }
    if (mxu_ == Engine::kVpu) {
      launches = std::move(on_vpu);
      consts = std::move(vpu_consts);
      prog_ = std::move(unfused);
      emissions_ = vpu_emissions;
    }
  }

  // The batch, fused, packed, lowered and added to the plan; as kept for replays (null: not kept).
  const CompiledBatch* compile_new(bool has_shape) {
    const int first_chain = chains_;
    fold_clamps(prog_);
    why_.passed(Pass::kClamps);
    std::optional<TileProgram> unfused;
    if (mxu_ != Engine::kMxu) unfused = prog_;
    chains_ = fuse_mxu_dots(prog_, cfg_, chains_, choices_, tracer_.bfloat16_slots());
    why_.passed(Pass::kFuseMxu);
    std::vector<Tile> consts;
    std::vector<Launch> launches;
    if (mxu_ == Engine::kUndecided && !prog_.mxu.empty())
      choose_engine(std::move(*unfused), launches, consts);
    else if (mxu_ == Engine::kVpu)
      prog_ = std::move(*unfused);  // the chains keep their numbers (Choices::veto)
    why_.fused(prog_, first_chain, chains_, mxu_ == Engine::kVpu);
    const int64_t stores = int64_t(prog_.stores.size());
    if (!launches.empty()) {  // lowered by choose_engine
      why_.passed(Pass::kPack);
    } else if (first_.compiled && chains_ == first_chain) {  // chunk 0, packed and lowered by choose_layout
      prog_ = std::move(first_.packed);
      launches = std::move(first_.launches);
      consts = std::move(first_.consts);
      decision_log().debug("  chunk 0: packed and lowered once, while choosing the layout");
    } else {
      pack_lanes(prog_);
      why_.passed(Pass::kPack);
      launches = lower(prog_, cfg_, consts, k_.fast_math, choices_, &emissions_);
    }
    first_.compiled = false;  // only the first batch is chunk 0
    why_.passed(Pass::kLower);
    why_.floored(prog_, launches);
    CompiledBatch batch = builder_.add(prog_, launches, consts);
    why_.passed(Pass::kPlan);
    batch.stores = stores;
    batch.packed_stores = stores - int64_t(prog_.stores.size());
    for (const TileNode& n : prog_.nodes) {
      batch.lane_reduces += n.op == Op::LANE_REDUCE;
      batch.broadcasts += n.op == Op::LANE_BROADCAST && !is_gather(prog_, n.a);  // not a broadcast operand
    }
    for (const Launch& l : launches)
      if (l.cut) ++batch.cuts[l.cut];
    why_.counted(batch);
    if (has_shape && chains_ == first_chain && prog_.mxu.empty()) {  // no MXU chain: nothing data-dependent
      if (const CompiledBatch* cached = replays_.add(shape_, batch)) return cached;
      if (period_.chunks > 0) return &uncached_.emplace_back(std::move(batch));
    }
    return nullptr;
  }
};

void Batches::log(int64_t chunks, std::chrono::steady_clock::time_point start) const {
  if (!decision_log().should_log(spdlog::level::info)) return;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  decision_log().info(
      "kernel {}: {} chunks of {} lanes{} in {} batches -> {} launches ({} distinct programs), "
      "{} values spilled between launches; compiled in {:.1f} ms",
      k_.name, chunks, kLanes, tracer_.blocked() ? " (4x4 blocks)" : "", why_.batches, why_.launches,
      builder_.images(), why_.spills, ms);
  if (cfg_.sparse_core)
    decision_log().info(
        "  SparseCore: {} VMEM records are rows of tables a launch-time variable picks; "
        "the loader gives each to the SparseCore or a DMA channel, whichever has it in sooner "
        "(rows a computed index picks stay the DMA engine's: "
        "which elements they are is known only when the launch before has run)",
        builder_.table_rows());
  if (replays_.hits > 0)
    decision_log().info("  {} of {} batches replayed: an earlier batch's code with their indices shifted",
                        replays_.hits, why_.batches);
  if (repeats_ > 0)
    decision_log().info(
        "  {} of them not traced: their chunks repeat an earlier batch's every {} chunks, with indices moved",
        repeats_, period_.chunks);
  if (tracer_.parts_cut() > 0)
    decision_log().info(
        "  long chunks traced in parts: {} cuts at a loop iteration's end, live values kept as pinned "
        "tiles",
        tracer_.parts_cut());
  if (tracer_.memo_reads() > 0)
    decision_log().info(
        "  {} tiles read from {} memo buffers: values computed from one buffer's elements alone, kept per "
        "element instead of computed again",
        tracer_.memo_reads(), plan_.memo_sizes.size());
  if (tracer_.loops_skipped() > 0)
    decision_log().info(
        "  {} reduction loops skipped: each term's guard, computed before the loop, false in "
        "every lane",
        tracer_.loops_skipped());
  if (!plan_.independent_groups.empty())
    decision_log().info(
        "  the last {} of {} runs in {} independent groups: a call may run the groups at once, on threads",
        plan_.runs.size() - plan_.independent_groups[0], plan_.runs.size(), plan_.independent_groups.size());
  if (!why_.cuts.empty()) decision_log().info("  launches ended by a full limit: {}", why_.cut_summary());
  if (!why_.engine.empty())
    decision_log().info("  {} dot products on the {}: {}", why_.dots, mxu_ == Engine::kVpu ? "VPU" : "MXU",
                        why_.engine);
  if (emissions_.other)
    decision_log().info(
        "  emitted {} (the first batch with a choice: ~{} cycles, ~{} in the better order as before)",
        describe(*emissions_.other), emissions_.estimates.second, emissions_.estimates.first);
  if (chains_ > 0)
    decision_log().info(
        "  MXU: {} of {} {} dot-product chains, in {} output-stationary, {} output-stationary across "
        "chains and {} weight-stationary blocks; this data: {} kept on the VPU (out of int8 range), {} "
        "operands loaded once (equal values)",
        why_.mxu_chains, chains_, why_.dots, why_.os_blocks, why_.across_blocks, why_.ws_blocks,
        choices_.veto.size(), choices_.same_values.size());
  if (why_.mxu_estimate > 0)
    decision_log().info(
        "  MXU floor: ~{} cycles for its blocks (each dispatch's MXU interval, its program's and operands' "
        "records, its matrix reads, its outputs: docs/quant.md); the launches of their batches, estimated: "
        "~{}, {:.0f}% of the floor reached",
        why_.mxu_floor, why_.mxu_estimate, 100.0 * double(why_.mxu_floor) / double(why_.mxu_estimate));
  if (why_.packed_stores + why_.lane_reduces + why_.broadcasts > 0)
    decision_log().info(
        "  lane packing: {} of {} stores packed into others, {} cross-lane reduces, {} replicated values "
        "computed side by side and broadcast back",
        why_.packed_stores, why_.stores, why_.lane_reduces, why_.broadcasts);
  std::string passes;
  for (size_t i = 0; i < kPassNames.size(); ++i)
    passes += fmt::format(" {} {:.1f} ms", kPassNames[i], why_.pass_ms[i]);
  decision_log().debug("  host time by pass:{}", passes);
}

}  // namespace

// The pipeline: choose the chunk layout, then trace the kernel chunk by chunk, compiling a batch whenever one
// ends (Batches), and log what was decided.
Plan compile(const Kernel& ir, const TensorCoreConfig& cfg, const std::vector<int64_t>& vals,
             const std::vector<int64_t>& sizes, const Choices& choices,
             const std::function<void(int64_t, int64_t)>& traced, const TraceLimits& given) {
  const auto start = std::chrono::steady_clock::now();
  TraceLimits limits = given;
  // a float32 MXU takes float32 factors, a bfloat16 MXU bfloat16s (only bfloat16 tensors' kernels have them)
  const bool bfloat16 = reads_bfloat16_storage(ir);
  if (cfg.mxu_dtype == 2 || (cfg.mxu_dtype == 1 && bfloat16))
    limits.keep_dot_operands = KeepDotOperands::kYes;
  if (bfloat16) limits.dot_factors = DotFactors::kBfloat16;
  const Kernel k = split_divisions(ir);
  FirstChunk first = choose_layout(k, cfg, vals, sizes, choices, limits);
  Tracer tracer(k, vals, sizes, limits, first.layout, first.block);
  Plan plan;
  plan.config = cfg;
  Batches batches(k, cfg, choices, tracer, plan, std::move(first), sizes.size(), limits.trace_every_chunk);
  const int64_t chunks = std::max<int64_t>(tracer.num_chunks(), 1);
  for (int64_t c = 0; c < chunks; ++c) {
    if (const int64_t last = batches.repeat(c); last >= 0) {  // whole batches, not traced
      c = last;
      if (traced) traced(c + 1, chunks);
      continue;
    }
    bool alone = batches.prog().nodes.empty();        // the batch is this chunk's, traced whole
    while (!tracer.trace_chunk(c, batches.prog())) {  // a long chunk, in parts
      batches.compile(c, false);
      alone = false;
    }
    if (traced) traced(c + 1, chunks);
    if (!batch_ends(batches.prog(), c, tracer)) continue;
    if (alone && batches.keep_operands_first(c) && !tracer.trace_chunk(c, batches.prog()))
      throw std::logic_error("kernel " + k.name + ": a chunk traced whole traced again in parts");
    batches.compile(c, true);
  }
  batches.compile(chunks - 1, true);
  plan.memo_sizes = tracer.memo_sizes();
  plan.independent_groups = independent_groups(plan, tracer.slot_sizes());
  batches.log(chunks, start);
  return plan;
}

}  // namespace tinytpu::compiler
