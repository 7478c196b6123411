#include "compiler/vreg_alloc.h"

#include <algorithm>
#include <tuple>

namespace tinytpu::compiler {

void VregAllocator::begin_launch() {
  file.busy.reset();
  file.leaves.reset();
  file.content.fill(kNothing);
  for (int n : bound_) vreg_[n] = -1;
  bound_.clear();
  undo_.clear();
}

void VregAllocator::rollback(const Mark& m) {
  file = m.file;
  event_regs_.reset();
  for (; undo_.size() > m.undo; undo_.pop_back()) vreg_[undo_.back().first] = undo_.back().second;
}

void VregAllocator::bind(int node, int r) {
  undo_.push_back({node, vreg_[node]});
  if (is_leaf(p_, node)) {
    if (vreg_[node] >= 0) file.leaves.reset(vreg_[node]);
    if (r >= 0) file.leaves.set(r);
  }
  vreg_[node] = r;
  if (r >= 0) bound_.push_back(node);
}

int VregAllocator::take_free(const ConstantForecast& forecast, const ConstantTiles& consts) {
  int pick = -1;
  for (int r = 0; r < vregs_ && (pick < 0 || file.content[pick] != kNothing); ++r)
    if (!file.busy[r]) pick = r;
  if (pick >= 0 && file.content[pick] != kNothing) pick = latest_asked_free(forecast, consts);
  if (pick >= 0) file.busy.set(pick);
  return pick;
}

int VregAllocator::latest_asked_free(const ConstantForecast& forecast, const ConstantTiles& consts) const {
  constexpr int kUnforeseen = ConstantForecast::kEvents + 1;
  std::array<int, TensorCoreConfig::kMaxVregs> when;  // events ahead, -1 for a busy vreg
  int open = 0;
  for (int r = 0; r < vregs_; ++r) {
    when[r] = file.busy[r] ? -1 : kUnforeseen;
    open += !file.busy[r];
  }
  forecast.ahead([&](Content content, int ahead) {
    const bool in_palette = consts.in_palette(content_value(content));
    for (int r = 0; r < vregs_; ++r)
      if (when[r] == kUnforeseen &&
          (file.content[r] == content || (in_palette && file.content[r] == kPalette))) {
        when[r] = ahead;
        --open;
      }
    return open > 0;
  });
  int pick = -1;
  for (int r = 0; r < vregs_; ++r)
    if (when[r] >= 0 && (pick < 0 || when[r] > when[pick])) pick = r;
  return pick;
}

int VregAllocator::free_holding(Content content) const {
  for (int r = 0; r < vregs_; ++r)
    if (!file.busy[r] && file.content[r] == content) return r;
  return -1;
}

int VregAllocator::evict_leaf(const VmemSlots& slots, const Schedule& schedule, int pos, bool by_next_read) {
  int victim = -1, victim_read = -1;
  for (int n : bound_) {
    int r = vreg_[n];
    if (r < 0 || event_regs_[r] || !is_leaf(p_, n)) continue;
    const int read = by_next_read ? schedule.next_read(n, pos) : schedule.last_use[size_t(n)];
    if ((victim < 0 || read > victim_read) && refillable(slots, n))
      std::tie(victim, victim_read) = std::pair{n, read};
  }
  if (victim < 0) return -1;
  int r = vreg_[victim];
  bind(victim, -1);
  return r;
}

int VregAllocator::latest_read_value(const Schedule& schedule, int pos) const {
  int victim = -1, victim_read = -1;
  for (int n : bound_) {
    const int r = vreg_[n];
    if (r < 0 || event_regs_[r] || is_leaf(p_, n) || schedule.last_use[size_t(n)] <= pos) continue;
    if (std::any_of(undo_.begin() + std::ptrdiff_t(event_undo_), undo_.end(),
                    [&](const auto& u) { return u.first == n; }))
      continue;
    const int read = schedule.next_read(n, pos);
    if (victim < 0 || read > victim_read) std::tie(victim, victim_read) = std::pair{n, read};
  }
  return victim;
}

// A leaf whose vreg may be given up: a gather its slot still holds, a broadcast leaf whose source is in a
// vreg or refillable.
bool VregAllocator::refillable(const VmemSlots& slots, int node) const {
  if (is_broadcast_leaf(p_, node)) return vreg_[p_.nodes[node].a] >= 0 || refillable(slots, p_.nodes[node].a);
  return is_gather(p_, node) && slots.holding(node) >= 0;
}

void VregAllocator::live(int pos, const std::vector<int>& last_use, std::vector<int>& out) const {
  // bound_ holds a node once per vreg it was given
  out.clear();
  for (int n : bound_)
    if (vreg_[n] >= 0 && last_use[n] >= pos && !is_leaf(p_, n)) out.push_back(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace tinytpu::compiler
