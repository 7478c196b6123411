#include "compiler/independent.h"

#include <algorithm>
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

  void read(int id, bool swap, RangeEffects& e) {
    for_each_source(p_, id, [&](const TileSource& s) {
      e.opaque |= reads_memo(p_, s);
      if (!is_kept(s)) return;
      const int at = kept_place(p_, s, swap);
      if (stamp_[size_t(at)] != range_) e.exposed.push_back(at);
    });
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
        const int at = kept_place(p_, k.pinned, k.id, r.swap_banks);
        if (stamp_[at] != range_) e.kept.push_back(at);
        stamp_[at] = range_;
      }
    }
    return e;
  }
};

}  // namespace

std::vector<size_t> independent_groups(const Plan& plan, const std::vector<int64_t>& sizes) {
  const size_t runs = plan.runs.size();
  Effects effects(plan);
  const size_t places = size_t(effects.places());
  // Groups, first to last: a run joins the group before it when it reads a kept tile a run of that group kept
  // (the parts of a long chunk), but for the uniform prefix's pinned tiles (bank 0), which every chunk reads.
  // A group's exposed reads are those of tiles it did not keep itself first.
  auto continues = [&](int at) { return at < plan.scratch_tiles || pin_bank(at - plan.scratch_tiles) != 0; };
  struct Group {
    size_t first;
    std::vector<int> exposed, kept;
    bool opaque = false;
  };
  std::vector<Group> groups;
  std::vector<int64_t> keeper(places, -1);                        // per place: the run that kept it last
  std::vector<size_t> exposed_in(places, 0), kept_in(places, 0);  // per place: the group (from 1) listing it
  for (size_t r = 0; r < runs; ++r) {
    const RangeEffects& e = effects.of(plan.runs[r]);
    const bool joins = !groups.empty() && std::any_of(e.exposed.begin(), e.exposed.end(), [&](int at) {
      return keeper[size_t(at)] >= int64_t(groups.back().first) && continues(at);
    });
    if (!joins) groups.push_back({r, {}, {}, false});
    Group& g = groups.back();
    const size_t number = groups.size();
    g.opaque |= e.opaque;
    for (int at : e.exposed)
      if (keeper[size_t(at)] < int64_t(g.first) && exposed_in[size_t(at)] != number) {
        g.exposed.push_back(at);
        exposed_in[size_t(at)] = number;
      }
    for (int at : e.kept) {
      keeper[size_t(at)] = int64_t(r);
      if (kept_in[size_t(at)] != number) g.kept.push_back(at);
      kept_in[size_t(at)] = number;
    }
  }
  // The later groups' exposed reads and kept places, and per buffer element the group that stores it: walking
  // back from the last group, each joins the independent ones while it touches none of those.
  std::vector<uint8_t> exposed(places, 0), kept(places, 0);
  std::vector<std::vector<int32_t>> storer(plan.written.size());
  auto touches_later = [&](size_t gi) {
    const Group& g = groups[gi];
    if (g.opaque) return true;
    for (int at : g.exposed)
      if (kept[size_t(at)]) return true;
    for (int at : g.kept)
      if (exposed[size_t(at)]) return true;
    const size_t end = gi + 1 < groups.size() ? groups[gi + 1].first : runs;
    for (size_t r = g.first; r < end; ++r) {
      const LaunchRun& run = plan.runs[r];
      const std::vector<int64_t>* shift = run.shift < 0 ? nullptr : &plan.shifts[size_t(run.shift)];
      for (int64_t i = run.first; i < run.first + run.count; ++i)
        for (const Scatter& s : plan.launches[size_t(i)].scatters) {
          std::vector<int32_t>& by = storer[size_t(s.buf)];
          if (by.empty()) by.assign(size_t(sizes[size_t(s.buf)]), -1);
          const int64_t moved = shift && size_t(s.buf) < shift->size() ? (*shift)[size_t(s.buf)] : 0;
          for (int lane = 0; lane < kLanes; ++lane) {
            if (!s.active[lane]) continue;
            const int64_t at = s.base + plan.lane_offsets[size_t(s.offsets)].at[lane] + moved;
            if (at < 0 || at >= int64_t(by.size())) return true;  // an error when it runs: in order
            int32_t& who = by[size_t(at)];
            if (who >= 0 && who != int32_t(gi)) return true;
            who = int32_t(gi);
          }
        }
    }
    for (int at : g.exposed) exposed[size_t(at)] = 1;
    for (int at : g.kept) kept[size_t(at)] = 1;
    return false;
  };
  size_t first = groups.size();
  while (first > 0 && !touches_later(first - 1)) --first;
  std::vector<size_t> starts;
  if (groups.size() - first >= 2)
    for (size_t gi = first; gi < groups.size(); ++gi) starts.push_back(groups[gi].first);
  return starts;
}

}  // namespace tinytpu::compiler
