#include "runtime/call.h"

#include <algorithm>
#include <future>
#include <memory>

#include "base/errors.h"

namespace tinytpu::runtime {

using namespace compiler;

namespace {

constexpr int kMaxParamSlots = 1 << 16;  // far above any kernel's buffer count: a bound on malformed IR

bool cancelled(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

Call::Call(const std::string& kernel, const std::map<int, DType>& params, std::vector<DeviceBuffer>& bufs,
           const Progress& progress, TimingCache& timings, const RunMode& mode)
    : kernel_(kernel), progress_(progress), timings_(timings), mode_(mode) {
  if (params.size() != bufs.size())
    throw SimError("kernel " + kernel + " takes " + std::to_string(params.size()) + " buffers, got " +
                   std::to_string(bufs.size()));
  nslots_ = params.empty() ? 0 : params.rbegin()->first + 1;
  if (nslots_ > kMaxParamSlots)
    throw SimError("kernel " + kernel + ": buffer slot " + std::to_string(nslots_ - 1) +
                   " over the limit of " + std::to_string(kMaxParamSlots));
  slots_.resize(nslots_);
  sizes.resize(nslots_, 0);
  size_t i = 0;
  for (auto& [slot, dtype] : params) {
    slot_of_place_.push_back(slot);
    DeviceBuffer& b = bufs[i++];
    slots_[slot] = {b.data(), b.data(), dtype, dtype_bytes(dtype), int64_t(b.size() / dtype_bytes(dtype))};
    sizes[slot] = slots_[slot].size;
  }
}

void Call::poll() {
  if (stop_.load(std::memory_order_relaxed)) throw Cancelled{};
  if (!progress_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_report_ < kProgressInterval) return;
  last_report_ = now;
  done_.launches = done_.cycles = 0;
  for (const Segment* s : segments_) {
    done_.launches += s->launches_done.load(std::memory_order_relaxed);
    done_.cycles += s->cycles_done.load(std::memory_order_relaxed);
  }
  try {
    progress_(done_);
  } catch (...) {
    throw Stopped{std::current_exception()};
  }
}

std::function<void(int64_t, int64_t)> Call::tracing() {
  return [this](int64_t chunks_done, int64_t chunks) {
    done_.chunks_done = chunks_done;
    done_.chunks = chunks;
    poll();
  };
}

void Call::snapshot_written(const Plan& plan, const std::vector<int>& loads) {
  std::vector<bool> read(size_t(nslots_), false);
  for (int place : loads) read[size_t(slot_of_place_[size_t(place)])] = true;
  snapshots_.reserve(nslots_);  // slots read through pointers into them
  auto overlaps = [](const Slot& a, const Slot& b) {
    return a.write < b.write + b.size * b.bytes && b.write < a.write + a.size * a.bytes;
  };
  for (int s = 0; s < nslots_; ++s) {
    if (!slots_[s].write || !read[size_t(s)]) continue;
    bool copy = false;
    for (int w = 0; w < nslots_ && !copy; ++w)
      copy = slots_[w].write && plan.written[w] && overlaps(slots_[s], slots_[w]);
    if (!copy) continue;
    snapshots_.emplace_back(slots_[s].write, slots_[s].write + slots_[s].size * slots_[s].bytes);
    slots_[s].read = snapshots_.back().data();
  }
}

void Call::add_memos(const Plan& plan) {
  slots_.resize(nslots_ + 1);
  memos_.clear();
  for (int64_t elements : plan.memo_sizes) {
    memos_.emplace_back(size_t(elements));
    auto* data = reinterpret_cast<uint8_t*>(memos_.back().data());
    slots_.push_back({data, data, DType::kI32, 4, elements});
  }
}

KernelStats Call::run(const Plan& plan, bool keep_tasm, TraceLog* trace, CoreState* core) {
  done_.chunks_done = done_.chunks;  // compiled
  const uint64_t kernel_begin = trace ? trace->base : 0;
  const std::vector<size_t> bounds = parts(plan, trace || keep_tasm);
  std::vector<int64_t> before(bounds.size(), 0);  // launches before each bound
  for (size_t k = 0, r = 0; k < bounds.size(); ++k) {
    before[k] = k ? before[k - 1] : 0;
    for (; r < bounds[k]; ++r) before[k] += plan.runs[r].count;
  }
  Segment main(plan, DataPlan(plan, slots_), kernel_, timings_, mode_, poller_, 0, before[1],
               trace || keep_tasm, core);
  segments_ = {&main};
  main.run(0, bounds[0], keep_tasm, trace, core);
  std::vector<std::unique_ptr<Segment>> others;
  std::vector<std::future<void>> running;
  try {
    for (size_t k = 1; k + 1 < bounds.size(); ++k) {
      others.push_back(std::make_unique<Segment>(plan, main.data, kernel_, timings_, mode_, cancel_,
                                                 before[k], before[k + 1] - before[k], false));
      segments_.push_back(others.back().get());
      running.push_back(std::async(std::launch::async, [this, &s = *others.back(), &bounds, k] {
        try {
          s.run(bounds[k], bounds[k + 1], false, nullptr, nullptr);
        } catch (...) {
          stop_ = true;
          throw;
        }
      }));
    }
    main.run(bounds[0], bounds[1], keep_tasm, trace, core);
    for (std::future<void>& f : running)
      while (f.wait_for(kProgressInterval) != std::future_status::ready) poll();
    for (std::future<void>& f : running) f.get();
  } catch (...) {
    stop_ = true;
    std::exception_ptr error = std::current_exception();  // the first that is not a Cancelled
    for (std::future<void>& f : running) {
      if (!f.valid()) continue;
      try {
        f.get();
      } catch (...) {
        if (cancelled(error)) error = std::current_exception();
      }
    }
    segments_.clear();
    std::rethrow_exception(error);
  }
  KernelStats stats = std::move(main.stats());
  for (const auto& s : others) {
    s->stats().threaded = s->stats().launches;  // the other threads' launches
    stats += s->stats();
  }
  stats.kernels = 1;
  segments_.clear();
  if (trace) trace->span(Track::kKernel, 0, kernel_begin, trace->base, trace->intern(kernel_));
  return stats;
}

std::vector<size_t> Call::parts(const Plan& plan, bool one_by_one) const {
  const std::vector<size_t>& groups = plan.independent_groups;
  const size_t runs = plan.runs.size(), from = groups.empty() ? runs : groups[0];
  int64_t total = 0, independent = 0;
  for (size_t r = 0; r < runs; ++r) {
    total += plan.runs[r].count;
    if (r >= from) independent += plan.runs[r].count;
  }
  const int64_t threads =
      std::min<int64_t>({int64_t(mode_.threads), int64_t(groups.size()), independent / kThreadLaunches});
  if (threads < 2 || one_by_one || plan.config.prefetch_launches || plan.config.resident_program)
    return {0, runs};
  std::vector<size_t> bounds{from};
  int64_t done = total - independent;
  for (size_t g = 0, r = from; g < groups.size();
       ++g) {  // a part ends at the group that takes it past its share
    const size_t end = g + 1 < groups.size() ? groups[g + 1] : runs;
    for (; r < end; ++r) done += plan.runs[r].count;
    if (int64_t(bounds.size()) < threads && done >= total * int64_t(bounds.size()) / threads)
      bounds.push_back(end);
  }
  if (bounds.back() != runs) bounds.push_back(runs);
  return bounds;
}

}  // namespace tinytpu::runtime
