#include "runtime/timing_cache.h"

namespace tinytpu {

std::shared_ptr<TimingCache::Entry> TimingCache::find(const Key& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<TimingCache::Entry> TimingCache::add(const Key& key,
                                                     const std::shared_ptr<const compiler::Image>& image,
                                                     const RunResult& ticked) {
  auto entry = std::make_shared<Entry>();
  entry->image = image;
  entry->in_order = computes_in_order(image->bundle) && !ticked.mxu_overlapped;
  entry->counters = ticked;
  entry->counters.vmem_results.clear();
  entry->counters.asram_results.clear();
  entry->counters.mxu_result.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  return entries_.try_emplace(key, entry).first->second;
}

void TimingCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

void TimingCache::corrupt_for_test() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, entry] : entries_) ++entry->counters.cycles;
}

}  // namespace tinytpu
