#include "compiler/compile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <string>
#include <unordered_map>

#include "compiler/lane_pack.h"
#include "compiler/log.h"
#include "compiler/lower.h"
#include "compiler/mxu_dot.h"
#include "sim/errors.h"

namespace tinytpu::compiler {

namespace {

constexpr size_t kBatchNodes = 96;  // tile nodes traced before a batch of chunks is compiled

// Turns each batch's launches into plan launches: one validated bundle per distinct program, and where
// every filled tile comes from and every drained tile goes.
class PlanBuilder {
 public:
  PlanBuilder(Plan& plan, const std::vector<int64_t>& sizes) : plan_(plan), sizes_(sizes) {
    plan_.written.assign(sizes.size(), false);
  }

  size_t images() const {  // distinct programs so far
    size_t n = 0;
    for (const auto& [hash, same_hash] : images_) n += same_hash.size();
    return n;
  }

  void add(const TileProgram& prog, const std::vector<Launch>& launches, const std::vector<int32_t>& consts) {
    spilled_.clear();  // node numbers are the batch's
    for (const Launch& l : launches) {
      PlanLaunch out;
      Image image;
      std::vector<Record>& records = image.bundle.records;
      for (const SlotFill& f : l.fills) {
        Record r{RecordType::kVmemTile, f.slot};
        if (f.node < 0)
          r.data.fill(consts[-f.node - 1]);
        else
          out.fills.push_back({int(records.size()), source(prog, f.node)});
        records.push_back(r);
        image.fill_dtypes.push_back(f.dtype);
      }
      for (const MxuFill& f : l.mxu_fills) {
        out.mxu_fills.push_back({int(records.size()), operand(f)});
        records.push_back(Record{f.weight ? RecordType::kWeightTile : RecordType::kActTile, f.addr});
      }
      for (const Instr& in : l.program) {
        Record r{RecordType::kInstr};
        r.instr = in;
        records.push_back(r);
      }
      for (const SlotDrain& d : l.drains) records.push_back(Record{RecordType::kOutputVmem, d.slot});
      drains(prog, l, out);
      out.image = intern(std::move(image));
      plan_.launches.push_back(std::move(out));
    }
  }

 private:
  Plan& plan_;
  const std::vector<int64_t>& sizes_;
  std::map<int, int> spilled_;                        // node of the batch -> scratch tile holding its value
  std::map<std::pair<bool, MxuTile>, int> operands_;  // (weight, lanes) -> Plan::mxu_operands
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const Image>>> images_;  // by content hash

  int add(TileSource s) {
    plan_.sources.push_back(s);
    return int(plan_.sources.size()) - 1;
  }

  // A fill's source: a spilled value, a pinned tile, or a leaf's gather.
  int source(const TileProgram& prog, int node) {
    if (auto it = spilled_.find(node); it != spilled_.end())
      return add({TileSource::Kind::kScratch, it->second});
    const TileNode& t = prog.nodes[node];
    if (t.pinned >= 0) return add({TileSource::Kind::kPinned, t.pinned});
    if (t.dynamic) {
      int index = source(prog, t.a);
      plan_.lanes.push_back(t.leaf);
      return add({TileSource::Kind::kDynamic, int(plan_.lanes.size()) - 1, index, t.gated});
    }
    std::array<LeafLane, kLanes> lanes = t.leaf;
    for (LeafLane& s : lanes)
      if (!in_range(s, t.gated))
        s = LeafLane{};  // a gated-off lane reads 0: the gate's select discards it, or nothing stores it
    return add(gather(lanes, 0));
  }
  // Whether a lane reads a constant or an element of its buffer; one out of range is an error unless gated.
  bool in_range(const LeafLane& s, bool gated) const {
    if (s.buf < 0 || (s.index >= 0 && s.index < sizes_[s.buf])) return true;
    if (!gated) throw gather_outside(s.index, s.buf, sizes_[s.buf]);
    return false;
  }
  // The plan's operand for an MXU fill, one per distinct tile or row, with every chain that reads it.
  int operand(const MxuFill& f) {
    auto [it, fresh] = operands_.emplace(std::pair{f.weight, f.data}, int(plan_.mxu_operands.size()));
    if (fresh) plan_.mxu_operands.push_back({f.data, f.weight, mxu_source(f.data), {}});
    std::vector<int>& chains = plan_.mxu_operands[it->second].chains;
    for (int c : f.chains)
      if (std::find(chains.begin(), chains.end(), c) == chains.end()) chains.push_back(c);
    return it->second;
  }
  int mxu_source(const MxuTile& tile) {
    std::array<LeafLane, kLanes> lanes;
    uint16_t negate = 0;
    for (int l = 0; l < kLanes; ++l) {
      lanes[l] = tile[l].src;
      if (tile[l].negate) negate |= uint16_t(1u << l);
      in_range(lanes[l], false);
    }
    return add(gather(lanes, negate));
  }
  // A static gather, strided when its lanes allow (lanes past the first n read the constant 0).
  TileSource gather(const std::array<LeafLane, kLanes>& lanes, uint16_t negate) {
    int n = 0;
    while (n < kLanes && lanes[n].buf >= 0) ++n;
    bool strided = n > 0;
    for (int l = n; l < kLanes && strided; ++l) strided = lanes[l].bits == 0 && lanes[l].buf < 0;
    if (strided) {
      StridedGather g{lanes[0].buf, n, lanes[0].index, n > 1 ? lanes[1].index - lanes[0].index : 0,
                      n > 4 ? lanes[4].index - lanes[0].index : 0};
      for (int l = 0; l < n && strided; ++l)
        strided = lanes[l].buf == g.buf && lanes[l].index == g.base + (l % 4) * g.col + (l / 4) * g.row;
      if (strided) {
        plan_.strided.push_back(g);
        return {TileSource::Kind::kStrided, int(plan_.strided.size()) - 1, -1, false, negate};
      }
    }
    plan_.lanes.push_back(lanes);
    return {TileSource::Kind::kLanes, int(plan_.lanes.size()) - 1, -1, false, negate};
  }

  // Drained tiles: spills to scratch, pinned values, and stores with their gate and index tiles.
  void drains(const TileProgram& prog, const Launch& l, PlanLaunch& out) {
    std::map<std::pair<int, int>, int> parts;  // (store, role) -> output position
    for (int k = 0; k < int(l.drains.size()); ++k) {
      const SlotDrain& d = l.drains[k];
      if (d.spill >= 0) {
        spilled_[d.spill] = plan_.scratch_tiles;
        out.keeps.push_back({k, false, plan_.scratch_tiles++});
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
        plan_.pinned_tiles = std::max(plan_.pinned_tiles, st.pin + 1);
        continue;
      }
      Scatter s{st.buf, k};
      if (st.gate >= 0) s.gate = parts.at({d.store, SlotDrain::kGate});
      if (st.index_node >= 0) {
        s.index_tile = parts.at({d.store, SlotDrain::kIndex});
      } else {
        plan_.store_lanes.push_back(st.index);
        s.index = int(plan_.store_lanes.size()) - 1;
      }
      for (int lane = 0; lane < kLanes; ++lane)
        if (st.active[lane]) s.active |= uint16_t(1u << lane);
      plan_.written[st.buf] = true;
      out.scatters.push_back(s);
    }
  }

  // One validated copy of each distinct bundle (a kernel's chunks mostly compile to the same program).
  std::shared_ptr<const Image> intern(Image image) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (const Record& r : image.bundle.records) {
      mix(uint64_t(r.type) << 8 | uint64_t(r.addr));
      for (const auto& f : kFields) mix(r.instr.*(f.member));
      for (int32_t v : r.data) mix(uint32_t(v));
    }
    for (DType d : image.fill_dtypes) mix(uint64_t(d));
    auto& same_hash = images_[h];
    for (const auto& known : same_hash)
      if (same(known->bundle, image.bundle) && known->fill_dtypes == image.fill_dtypes) return known;
    validate(image.bundle);
    same_hash.push_back(std::make_shared<const Image>(std::move(image)));
    return same_hash.back();
  }
  static bool same(const Bundle& a, const Bundle& b) {
    if (a.records.size() != b.records.size()) return false;
    for (size_t i = 0; i < a.records.size(); ++i) {
      const Record &x = a.records[i], &y = b.records[i];
      if (x.type != y.type || x.addr != y.addr || x.data != y.data || !(x.instr == y.instr)) return false;
    }
    return true;
  }
};

// What the passes decided, for the decision log.
struct Decisions {
  int64_t batches = 0, stores = 0, packed_stores = 0, lane_reduces = 0, ws_blocks = 0, os_blocks = 0;
  int chains = 0, mxu_chains = 0;
  std::map<std::string, int64_t> cuts;  // launches ended early, by the limit reached
  // Host time per pass (the log at debug), timed only when the log shows it.
  std::array<double, 5> pass_ms{};
  static constexpr std::array<const char*, 5> kPasses = {"trace", "fuse_mxu", "pack", "lower", "plan"};
  bool timing = decision_log().should_log(spdlog::level::debug);
  std::chrono::steady_clock::time_point mark = std::chrono::steady_clock::now();
  void passed(int pass) {
    if (!timing) return;
    auto now = std::chrono::steady_clock::now();
    pass_ms[pass] += std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
  }

  void lowered(const std::vector<Launch>& launches) {
    for (const Launch& l : launches)
      if (l.cut) ++cuts[l.cut];
  }
  std::string cut_summary() const {
    std::string out;
    for (const auto& [why, n] : cuts) out += (out.empty() ? "" : ", ") + std::to_string(n) + " at " + why;
    return out;
  }

  void fused(const TileProgram& prog, int first_chain, int next_chain) {
    std::set<int> on_mxu;
    for (const MxuDot& m : prog.mxu) {
      ++(m.os ? os_blocks : ws_blocks);
      on_mxu.insert(m.chain);
    }
    mxu_chains += int(on_mxu.size());
    if (decision_log().should_log(spdlog::level::debug))
      for (int c = first_chain; c < next_chain; ++c) {
        int ws = 0, os = 0;
        for (const MxuDot& m : prog.mxu) (m.os ? os : ws) += m.chain == c;
        if (ws + os == 0)
          decision_log().debug("  chain {}: VPU (vetoed: an element out of int8 range)", c);
        else
          decision_log().debug(
              "  chain {}: MXU, {} output-stationary and {} weight-stationary blocks "
              "(the cheaper by the cycle estimate)",
              c, os, ws);
      }
  }
};

}  // namespace

Plan compile(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& sizes,
             const Choices& choices, const std::function<void(int64_t, int64_t)>& traced) {
  const auto start = std::chrono::steady_clock::now();
  Tracer tracer(k, vals, sizes);
  Plan plan;
  PlanBuilder builder(plan, sizes);
  Decisions why;
  TileProgram prog;
  int chains = 0;  // dot-product chains numbered so far: a number names one chain of the kernel
  auto compile_batch = [&] {
    if (prog.stores.empty()) return;
    why.passed(0);
    int first_chain = chains;
    chains = fuse_mxu_dots(prog, chains, choices);
    why.passed(1);
    why.fused(prog, first_chain, chains);
    size_t stores = prog.stores.size();
    pack_lanes(prog);
    why.passed(2);
    why.stores += int64_t(stores);
    why.packed_stores += int64_t(stores - prog.stores.size());
    for (const TileNode& n : prog.nodes) why.lane_reduces += n.op == Op::LANE_REDUCE;
    std::vector<int32_t> consts;
    std::vector<Launch> launches = lower(prog, consts, k.fast_math, choices);
    why.passed(3);
    why.lowered(launches);
    builder.add(prog, launches, consts);
    why.passed(4);
    ++why.batches;
    prog = TileProgram{};
  };
  const int64_t chunks = std::max<int64_t>(tracer.num_chunks(), 1);
  for (int64_t c = 0; c < chunks; ++c) {
    tracer.trace_chunk(c, prog);
    if (traced) traced(c + 1, chunks);
    // the chunk that pins the prefix runs before any chunk reads the pinned tiles
    if (prog.nodes.size() >= kBatchNodes || (c == 0 && tracer.pinned_prefix())) compile_batch();
  }
  compile_batch();
  if (decision_log().should_log(spdlog::level::info)) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    decision_log().info(
        "kernel {}: {} chunks of 16 lanes in {} batches -> {} launches ({} distinct programs), "
        "{} values spilled between launches; compiled in {:.1f} ms",
        k.name, chunks, why.batches, plan.launches.size(), builder.images(), plan.scratch_tiles, ms);
    if (!why.cuts.empty()) decision_log().info("  launches ended by a full limit: {}", why.cut_summary());
    if (chains > 0)
      decision_log().info(
          "  MXU: {} of {} int8 dot-product chains, in {} output-stationary and {} weight-stationary "
          "blocks; this data: {} kept on the VPU (out of int8 range), {} operands loaded once "
          "(equal values)",
          why.mxu_chains, chains, why.os_blocks, why.ws_blocks, choices.veto.size(),
          choices.same_values.size());
    if (why.packed_stores + why.lane_reduces > 0)
      decision_log().info("  lane packing: {} of {} stores packed into others, {} cross-lane reduces",
                          why.packed_stores, why.stores, why.lane_reduces);
    std::string passes;
    for (int i = 0; i < 5; ++i) passes += fmt::format(" {} {:.1f} ms", Decisions::kPasses[i], why.pass_ms[i]);
    decision_log().debug("  host time by pass:{}", passes);
  }
  return plan;
}

}  // namespace tinytpu::compiler
