#include "compiler/independent.h"

#include <map>
#include <tuple>

namespace tinytpu::compiler {

namespace {

// What a range of launches does to kept tiles, the same for every run of it: the places it reads before it
// keeps them (exposed), the places it keeps, and whether it touches a memo buffer or stores through computed
// indices.
struct RangeEffects {
  std::vector<int> exposed, kept;
  bool opaque = false;
};

class Effects {
 public:
  explicit Effects(const Plan& p) : p_(p), counter_(counter_slot(p.written)), stamp_(places(), 0) {}

  int places() const { return p_.scratch_tiles + p_.pinned_tiles; }

  const RangeEffects& of(const LaunchRun& r) {
    auto [it, fresh] = ranges_.try_emplace({r.first, r.count, r.swap_banks});
    if (fresh) it->second = compute(r);
    return it->second;
  }

 private:
  const Plan& p_;
  const int counter_;
  std::vector<uint32_t> stamp_;  // per place: the range (numbered from 1) that kept it
  uint32_t range_ = 0;
  std::map<std::tuple<int64_t, int64_t, bool>, RangeEffects> ranges_;

  int place(const TileSource& s, bool swap) const {
    return s.kind == TileSource::Kind::kPinned ? p_.scratch_tiles + (swap ? other_bank(s.id) : s.id) : s.id;
  }
  bool reads_memo(const TileSource& s) const {
    switch (s.kind) {
      case TileSource::Kind::kStrided:
        return p_.strided[s.id].buf > counter_;
      case TileSource::Kind::kOffsets:
        return p_.offset_gathers[s.id].buf > counter_;
      case TileSource::Kind::kLanes:
      case TileSource::Kind::kDynamic:
        for (const LeafLane& l : p_.lanes[s.id])
          if (l.buf > counter_) return true;
        return false;
      default:
        return false;
    }
  }
  void read(int id, bool swap, RangeEffects& e) {
    for (; id >= 0;) {  // a dynamic gather's indices come from another source
      const TileSource& s = p_.sources[id];
      if (reads_memo(s)) e.opaque = true;
      if (s.kind == TileSource::Kind::kScratch || s.kind == TileSource::Kind::kPinned) {
        const int at = place(s, swap);
        if (stamp_[at] != range_) e.exposed.push_back(at);
      }
      id = s.kind == TileSource::Kind::kDynamic ? s.index : -1;
    }
  }
  RangeEffects compute(const LaunchRun& r) {
    RangeEffects e;
    ++range_;
    for (int64_t i = r.first; i < r.first + r.count; ++i) {
      const PlanLaunch& l = p_.launches[i];
      for (const PlanLaunch::Fill& f : l.fills) read(f.source, r.swap_banks, e);
      for (const PlanLaunch::MxuFill& f : l.mxu_fills)
        read(p_.mxu_operands[f.operand].source, r.swap_banks, e);
      for (const Scatter& s : l.scatters) e.opaque |= s.buf > counter_ || s.index_tile >= 0;
      for (const Keep& k : l.keeps) {
        const int at = k.pinned ? p_.scratch_tiles + (r.swap_banks ? other_bank(k.id) : k.id) : k.id;
        if (stamp_[at] != range_) e.kept.push_back(at);
        stamp_[at] = range_;
      }
    }
    return e;
  }
};

}  // namespace

size_t independent_from(const Plan& plan, const std::vector<int64_t>& sizes) {
  const size_t runs = plan.runs.size();
  if (runs < 2) return runs;
  Effects effects(plan);
  // The later runs' exposed reads and kept places, and per buffer element the run that stores it: walking
  // back from the last run, each joins while it touches none of those.
  std::vector<uint8_t> exposed(size_t(effects.places()), 0), kept(size_t(effects.places()), 0);
  std::vector<std::vector<int32_t>> storer(plan.written.size());
  for (size_t r = runs; r-- > 0;) {
    const LaunchRun& run = plan.runs[r];
    const RangeEffects& e = effects.of(run);
    if (e.opaque) return r + 1;
    for (int at : e.exposed)
      if (kept[size_t(at)]) return r + 1;
    for (int at : e.kept)
      if (exposed[size_t(at)]) return r + 1;
    const std::vector<int64_t>* shift = run.shift < 0 ? nullptr : &plan.shifts[size_t(run.shift)];
    for (int64_t i = run.first; i < run.first + run.count; ++i)
      for (const Scatter& s : plan.launches[size_t(i)].scatters) {
        std::vector<int32_t>& by = storer[size_t(s.buf)];
        if (by.empty()) by.assign(size_t(sizes[size_t(s.buf)]), -1);
        const int64_t moved = shift && size_t(s.buf) < shift->size() ? (*shift)[size_t(s.buf)] : 0;
        for (int lane = 0; lane < kLanes; ++lane) {
          if (!s.active[lane]) continue;
          const int64_t at = plan.store_lanes[size_t(s.index)][lane] + moved;
          if (at < 0 || at >= int64_t(by.size())) return r + 1;  // an error when it runs: in order
          int32_t& who = by[size_t(at)];
          if (who >= 0 && who != int32_t(r)) return r + 1;
          who = int32_t(r);
        }
      }
    for (int at : e.exposed) exposed[size_t(at)] = 1;
    for (int at : e.kept) kept[size_t(at)] = 1;
  }
  return 0;
}

}  // namespace tinytpu::compiler
