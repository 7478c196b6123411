#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "compiler/plan.h"
#include "sim/runner.h"

namespace tinytpu {

// The counters of the first ticked launch of each timing key (executor.h RunMode), shared by the calls of a
// kernel.
class TimingCache {
 public:
  struct Key {
    const compiler::Image* image;
    uint64_t ahead;
    bool resident;
    uint64_t writes_before;
    bool operator==(const Key& o) const {
      return image == o.image && ahead == o.ahead && resident == o.resident &&
             writes_before == o.writes_before;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.image) ^ (k.ahead * 0x9e3779b97f4a7c15ull) ^ size_t(k.resident) ^
             (k.writes_before * 0xc2b2ae3d27d4eb4full);
    }
  };
  struct Entry {
    std::shared_ptr<const compiler::Image> image;  // keeps the key's image alive
    bool in_order;                                 // its program computes in order (sim/runner.h)
    RunResult counters;                            // the ticked run's, without its results
    std::atomic<uint64_t> runs{0};                 // its launches run in order so far
  };
  std::shared_ptr<Entry> find(const Key& key) const;
  std::shared_ptr<Entry> add(const Key& key, const std::shared_ptr<const compiler::Image>& image,
                             const RunResult& ticked);
  void corrupt_for_test();
  void clear();  // with the plans whose images the keys name

 private:
  static constexpr size_t kMaxEntries = 1 << 14;  // past it the cache starts over (each keeps an image)
  mutable std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<Entry>, KeyHash> entries_;
};

}  // namespace tinytpu
