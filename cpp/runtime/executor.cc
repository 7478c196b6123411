#include "runtime/executor.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

#include "base/errors.h"
#include "compiler/compile.h"
#include "compiler/log.h"
#include "isa/tasm.h"
#include "sim/runner.h"
#include "sim/tensorcore.h"

namespace tinytpu {

using namespace compiler;

namespace {

// Lanes are 32 bits: narrow integers are widened on the way in (sign- or zero-extended, bool as 0/1)
// and narrowed on the way out.
int32_t read_lane(const uint8_t* p, DType d) {
  switch (d) {
    case DType::kBool:
      return *p != 0;
    case DType::kI8:
      return int8_t(*p);
    case DType::kU8:
      return *p;
    case DType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    default: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}
void write_lane(uint8_t* p, DType d, int bytes, int32_t v) {  // bytes: dtype_bytes(d)
  if (d == DType::kBool) v = v != 0;
  switch (bytes) {  // little-endian: the low bytes (a fixed size each: an inlined store, not a memcpy call)
    case 1:
      std::memcpy(p, &v, 1);
      break;
    case 2:
      std::memcpy(p, &v, 2);
      break;
    default:
      std::memcpy(p, &v, 4);
  }
}

// A launch's TASM (DEBUG=4): float32 tiles the loader fills also as floats, in a comment, so the listing
// still assembles. The bundle's first records are the fills, in order.
std::string listing(const Bundle& b, const std::vector<DType>& fill_dtypes) {
  std::istringstream tasm(disassemble(b));
  std::string out, line;
  for (size_t i = 0; std::getline(tasm, line); ++i) {
    out += line;
    if (i < fill_dtypes.size() && is_float(fill_dtypes[i])) {  // float32 lanes (a weak float constant too)
      out += "  # f32";
      for (int32_t bits : b.records[i].data) {
        float f;
        std::memcpy(&f, &bits, 4);
        char text[32];
        out += ' ';
        out.append(text, std::to_chars(text, text + sizeof text, f).ptr);
      }
    }
    out += '\n';
  }
  return out;
}

constexpr int kMaxParamSlots = 1 << 16;  // far above any kernel's buffer count: a bound on malformed IR

// A buffer slot as a call sees it: loads read `read` (the buffer, or a snapshot when the kernel may
// write what it reads), stores write `write`.
struct Slot {
  const uint8_t* read = nullptr;
  uint8_t* write = nullptr;
  DType dtype = DType::kVoid;
  int bytes = 0;
  int64_t size = 0;
};

// What the progress callback threw (KeyboardInterrupt from Python): carried past the handlers below,
// which turn other failures into errors naming the kernel, and rethrown as it was.
struct Stopped {
  std::exception_ptr cause;
};

// The tiles a call moves: gathered from the buffers, pinned and scratch tiles; drained ones stored back.
class DataPlan {
 public:
  // `slots`: the buffers', then the counter slot's (unused) and the memo buffers'.
  DataPlan(const Plan& plan, const std::vector<Slot>& slots)
      : p_(plan),
        slots_(slots),
        counter_(counter_slot(plan.written)),
        scratch_(plan.scratch_tiles),
        pinned_(plan.pinned_tiles) {}

  Tile gather(int id) const {
    const TileSource& s = p_.sources[id];
    Tile out{};
    switch (s.kind) {
      case TileSource::Kind::kStrided: {
        const StridedGather& g = p_.strided[s.id];
        const int64_t moved = shift(g.buf);
        if (g.buf == counter_) {
          for (int l = 0; l < g.lanes; ++l) out[l] = counter(g.index(l) + moved);
          break;
        }
        const Slot& b = slots_[g.buf];
        if (!s.gated && b.bytes == 4) {  // the common case: 32-bit lanes, every index checked when compiled
          for (int l = 0; l < g.lanes; ++l) std::memcpy(&out[l], b.read + (g.index(l) + moved) * 4, 4);
          break;
        }
        for (int l = 0; l < g.lanes; ++l) {
          const int64_t at = g.index(l) + moved;
          if (!s.gated || (at >= 0 && at < b.size)) out[l] = read_lane(b.read + at * b.bytes, b.dtype);
        }
        break;
      }
      case TileSource::Kind::kLanes:
      case TileSource::Kind::kDynamic: {
        // per lane a constant or an element: at a static index, or at one computed by an earlier launch
        const bool dynamic = s.kind == TileSource::Kind::kDynamic;
        const Tile index = dynamic ? gather(s.index) : Tile{};
        int buf = -1;  // the last lane's buffer, its slot and shift: lanes mostly read one buffer
        const Slot* b = nullptr;
        int64_t moved = 0;
        for (int l = 0; l < kLanes; ++l) {
          const LeafLane& lane = p_.lanes[s.id][l];
          if (lane.buf < 0) {
            out[l] = int32_t(lane.bits);
            continue;
          }
          if (lane.buf != buf) {
            buf = lane.buf;
            b = &slots_[buf];
            moved = shift(buf);
          }
          if (buf == counter_) {
            out[l] = counter(lane.index + moved);
            continue;
          }
          const int64_t at = dynamic ? index[l] : lane.index + moved;
          if (at < 0 || at >= b->size) {
            if (!s.gated) throw gather_outside(at, buf, b->size);
            continue;  // a gated-off lane reads 0: the gate's select discards it, or nothing stores it
          }
          out[l] = read_lane(b->read + at * b->bytes, b->dtype);
        }
        break;
      }
      case TileSource::Kind::kPinned:
        return pinned_[pinned(s.id, swap_)];
      case TileSource::Kind::kScratch:
        return scratch_[s.id];
    }
    for (int l = 0; s.negate.any() && l < kLanes; ++l)
      if (s.negate[l]) out[l] = wrap_neg(out[l]);
    return out;
  }

  // This call's choices (mxu_dot.h), from the plan compiled without any: the chains it puts an element
  // of out of int8 range, and the operands with an earlier one's values, as (operand, earlier) pairs.
  std::pair<std::set<int>, std::vector<std::pair<int, int>>> choices() const {
    std::set<int> veto;
    std::vector<std::pair<int, int>> same;
    std::map<std::pair<bool, Tile>, int> first;
    for (int i = 0; i < int(p_.mxu_operands.size()); ++i) {
      const MxuOperand& op = p_.mxu_operands[i];
      Tile t = gather(op.source);
      if (std::any_of(t.begin(), t.end(), [](int32_t v) { return v < -128 || v > 127; }))
        veto.insert(op.chains.begin(), op.chains.end());
      auto [it, fresh] = first.emplace(std::pair{op.weight, t}, i);
      if (!fresh) same.push_back({i, it->second});
    }
    return {veto, same};
  }

  // Writes a launch's data into the memories (the records hold constants and placeholders).
  void fill(const PlanLaunch& l, TensorCore& tc) const {
    const auto& records = l.image->bundle.records;
    for (const PlanLaunch::Fill& f : l.fills) tc.vmem.mem[records[f.record].addr] = gather(f.source);
    for (const PlanLaunch::MxuFill& f : l.mxu_fills) {
      const Record& r = records[f.record];
      Tile t = gather(p_.mxu_operands[f.operand].source);
      if (r.type == RecordType::kWeightTile)
        for (int k = 0; k < kTileElems; ++k) tc.wsram.mem[r.addr][k] = int8_t(t[k]);
      else
        for (int k = 0; k < kRows; ++k) tc.asram.mem[r.addr][k] = int8_t(t[k]);
    }
  }
  // The launch's bundle with this call's data in its records (DEBUG=4 listings).
  Bundle bundle(const PlanLaunch& l) const {
    Bundle b = l.image->bundle;
    for (const PlanLaunch::Fill& f : l.fills) b.records[f.record].data = gather(f.source);
    for (const PlanLaunch::MxuFill& f : l.mxu_fills)
      b.records[f.record].data = gather(p_.mxu_operands[f.operand].source);
    return b;
  }

  // Keeps spilled and pinned tiles, then stores the drained values in program order.
  void drain(const PlanLaunch& l, const std::vector<Tile>& out) {
    for (const Keep& k : l.keeps) (k.pinned ? pinned_[pinned(k.id, swap_)] : scratch_[k.id]) = out[k.output];
    drained_swap_ = swap_;
    for (const Scatter& s : l.scatters) {
      const Slot& b = slots_[s.buf];
      const Tile& value = out[s.value];
      const Tile* index_tile = s.index_tile >= 0 ? &out[s.index_tile] : nullptr;
      const Lanes* lanes = index_tile ? nullptr : &p_.store_lanes[s.index];
      const int64_t moved = index_tile ? 0 : shift(s.buf);
      for (int lane = 0; lane < kLanes; ++lane) {
        if (!s.active[lane] || (s.gate >= 0 && !out[s.gate][lane])) continue;
        const int64_t at = index_tile ? (*index_tile)[lane] : (*lanes)[lane] + moved;
        if (at < 0 || at >= b.size)
          throw SimError("scatter index " + std::to_string(at) + " outside buffer " + std::to_string(s.buf) +
                         " of " + std::to_string(b.size) + " elements");
        write_lane(b.write + at * b.bytes, b.dtype, b.bytes, value[lane]);
      }
    }
  }

  // Whether a launch's fills read a value `before` output (a spill or a pinned tile it kept): the launch
  // prefetch variant loads such a launch only after that output.
  bool reads_output_of(const PlanLaunch& l, const PlanLaunch& before) const {
    auto kept = [&](const TileSource& s) {
      const bool pin = s.kind == TileSource::Kind::kPinned;
      for (const Keep& k : before.keeps)
        if (k.pinned == pin && (pin ? pinned(k.id, drained_swap_) == pinned(s.id, swap_) : k.id == s.id))
          return true;
      return false;
    };
    const bool stores_memo = std::any_of(before.scatters.begin(), before.scatters.end(),
                                         [&](const Scatter& s) { return s.buf > counter_; });
    for (const PlanLaunch::Fill& f : l.fills)
      for (int id = f.source; id >= 0;) {  // a dynamic gather's indices come from another source
        const TileSource& s = p_.sources[id];
        if ((s.kind == TileSource::Kind::kScratch || s.kind == TileSource::Kind::kPinned) && kept(s))
          return true;
        if (stores_memo && reads_memo(s)) return true;
        id = s.kind == TileSource::Kind::kDynamic ? s.index : -1;
      }
    return false;
  }
  bool reads_memo(const TileSource& s) const {
    if (s.kind == TileSource::Kind::kStrided) return p_.strided[s.id].buf > counter_;
    if (s.kind != TileSource::Kind::kLanes && s.kind != TileSource::Kind::kDynamic) return false;
    const auto& lanes = p_.lanes[s.id];
    return std::any_of(lanes.begin(), lanes.end(), [&](const LeafLane& l) { return l.buf > counter_; });
  }

  // The run about to execute: its element indices are moved by the run's shift.
  void start(const LaunchRun& r) {
    shift_ = r.shift < 0 ? nullptr : &p_.shifts[r.shift];
    swap_ = r.swap_banks;
  }

 private:
  const Plan& p_;
  const std::vector<Slot>& slots_;
  const int counter_;
  std::vector<Tile> scratch_, pinned_;
  const std::vector<int64_t>* shift_ = nullptr;
  bool swap_ = false, drained_swap_ = false;  // the run's banks exchanged; those of the last launch drained
  static int pinned(int id, bool swap) { return swap ? other_bank(id) : id; }
  static int32_t counter(int64_t value) { return int32_t(uint32_t(value)); }
  int64_t shift(int buf) const { return shift_ && size_t(buf) < shift_->size() ? (*shift_)[buf] : 0; }
};

// The launch prefetch variant's timeline (config.h prefetch_launches), in cycles from the kernel call's
// start: the loader fills the idle banks with the next launch while the current one runs.
struct LaunchClock {
  const PlanLaunch* last = nullptr;  // the launch that ran last in this call
  uint64_t end = 0;                  // when it finished (its last output line)
  uint64_t started = 0;              // its do_start: from then on its banks are in use, the others free
  uint64_t loader_free = 0;          // when the loader had sent its last record

  // How long before the last launch's end the next one's loading began, when it loads while the last one
  // runs: as soon as the loader and the idle banks were free. (One that reads what the last launch output
  // loads after its end.)
  uint64_t ahead() const {
    const uint64_t begin = std::max(loader_free, started);
    return begin < end ? end - begin : 0;
  }
  void ran(const PlanLaunch& l, const RunResult& r) {
    last = &l;
    started = end + r.start;
    loader_free = end + r.loader_done;  // a loading done before this run's start counts as done then
    end += r.cycles;
  }
};

// Instruction entries a launch's program fills in program memory.
int program_entries(const Image& image) {
  const std::vector<Record>& r = image.bundle.records;
  return int(std::count_if(r.begin(), r.end(), [](const Record& x) { return x.type == RecordType::kInstr; }));
}

// Plans kept per kernel; past it the cache starts over (a kernel called with many sizes).
constexpr size_t kMaxPlans = 16;

}  // namespace

CompiledKernel::CompiledKernel(std::string_view ir, const TensorCoreConfig& cfg, const TraceLimits& limits)
    : kernel_(compiler::parse_kernel(ir)), config_(cfg), limits_(limits) {
  config_.check();
  for (const Node& n : kernel_.nodes)
    if (n.op == Op::PARAM && n.global) params_[int(n.ivalue)] = n.dtype;
  const compiler::BuffersTouched touched = compiler::buffers_touched(kernel_);
  int place = 0;
  for (const auto& [slot, dtype] : params_) {
    if (touched.reads_unknown || touched.read.count(slot)) loads_.push_back(place);
    if (touched.written.count(slot)) stores_.push_back(place);
    ++place;
  }
}

bool CoreState::load(const std::shared_ptr<const Image>& image, int capacity, bool& evicts_last) {
  evicts_last = false;
  for (const std::shared_ptr<const Image>& held : resident)
    if (held == image || same_program(held->bundle, image->bundle)) {
      last = held.get();
      return true;
    }
  const int need = program_entries(*image);
  for (; entries + need > capacity; resident.pop_front()) {
    entries -= program_entries(*resident.front());
    evicts_last |= resident.front().get() == last;
  }
  resident.push_back(image);
  entries += need;
  last = image.get();
  return false;
}

KernelStats CompiledKernel::run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                bool keep_tasm, TraceLog* trace, const Progress& progress, CoreState* core,
                                const RunMode& mode) const {
  try {
    return run_plan(bufs, vals, keep_tasm, trace, progress, core, mode);
  } catch (const Stopped& s) {
    std::rethrow_exception(s.cause);
  } catch (const Unsupported& e) {
    throw Unsupported(named(e.what()));
  } catch (const SimError& e) {
    throw SimError(named(e.what()));
  } catch (const std::bad_alloc&) {
    throw;  // MemoryError
  } catch (const std::exception& e) {
    throw SimError("internal error in kernel " + kernel_.name + ": " + e.what());
  }
}

std::string CompiledKernel::named(const std::string& what) const {
  return what.find(kernel_.name) == std::string::npos ? "kernel " + kernel_.name + ": " + what : what;
}

std::shared_ptr<const Plan> CompiledKernel::plan(const PlanKey& key, const Choices& choices,
                                                 const std::function<void(int64_t, int64_t)>& traced) const {
  {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  }
  auto made = std::make_shared<const Plan>(
      compile(kernel_, config_, std::get<0>(key), std::get<1>(key), choices, traced, limits_));
  std::lock_guard<std::mutex> lock(plans_mutex_);
  if (plans_.size() >= kMaxPlans) {
    plans_.clear();
    timings_.clear();
  }
  plans_[key] = made;
  return made;
}

std::shared_ptr<CompiledKernel::TimingCache::Entry> CompiledKernel::TimingCache::find(const Key& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<CompiledKernel::TimingCache::Entry> CompiledKernel::TimingCache::add(
    const Key& key, const std::shared_ptr<const Image>& image, const RunResult& ticked) {
  auto entry = std::make_shared<Entry>();
  entry->image = image;
  entry->in_order = computes_in_order(image->bundle);
  entry->counters = ticked;
  entry->counters.vmem_results.clear();
  entry->counters.asram_results.clear();
  entry->counters.mxu_result.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  return entries_.try_emplace(key, entry).first->second;
}

void CompiledKernel::TimingCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

void CompiledKernel::TimingCache::corrupt_for_test() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, entry] : entries_) ++entry->counters.cycles;
}

namespace {

// A launch run in order against the same launch ticked: a difference in results or counters is an error.
void check_same(const RunResult& in_order, const RunResult& ticked, uint64_t launch) {
  std::string differs;
  auto count = [&](const char* name, uint64_t kept, uint64_t now) {
    if (kept != now && differs.empty())
      differs = std::string(name) + " " + std::to_string(kept) + " kept, " + std::to_string(now) + " ticked";
  };
  count("cycles", in_order.cycles, ticked.cycles);
  count("start", in_order.start, ticked.start);
  count("loader_done", in_order.loader_done, ticked.loader_done);
  count("sxu_cycles", in_order.sxu_cycles, ticked.sxu_cycles);
  count("SXU busy", in_order.busy.sxu, ticked.busy.sxu);
  count("MXU busy", in_order.busy.mxu, ticked.busy.mxu);
  count("VPU busy", in_order.busy.vpu, ticked.busy.vpu);
  count("XLU busy", in_order.busy.xlu, ticked.busy.xlu);
  count("SXU stalls", in_order.busy.sxu_stall, ticked.busy.sxu_stall);
  if (differs.empty() &&
      (in_order.vmem_results != ticked.vmem_results || in_order.asram_results != ticked.asram_results ||
       in_order.mxu_result != ticked.mxu_result))
    differs = "its results";
  if (!differs.empty())
    throw SimError("launch " + std::to_string(launch) +
                   " run in order differs from the same launch ticked: " + differs +
                   " (TINYTPU_FUNCTIONAL=0 ticks every launch)");
}

// One call of a kernel: its buffers bound to slots, its progress reports, and the run of a plan's launches.
class Call {
 public:
  // tinygrad passes the buffers of the PARAMs the kernel still has, in slot order; a slot whose uses were
  // folded away has no PARAM and no buffer. Everything below is indexed by slot.
  Call(const std::string& kernel, const std::map<int, DType>& params, std::vector<DeviceBuffer>& bufs,
       const Progress& progress, CompiledKernel::TimingCache& timings, const RunMode& mode)
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
      DeviceBuffer& b = bufs[i++];
      slots_[slot] = {b.data(), b.data(), dtype, dtype_bytes(dtype), int64_t(b.size() / dtype_bytes(dtype))};
      sizes[slot] = slots_[slot].size;
    }
  }

  std::vector<int64_t> sizes;  // elements per slot
  const std::vector<Slot>& slots() const { return slots_; }

  // Reports progress at most every kProgressInterval; what the callback throws (KeyboardInterrupt) stops
  // the call.
  void poll() {
    if (!progress_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_report_ < kProgressInterval) return;
    last_report_ = now;
    done_.launches = stats_.launches;
    done_.cycles = stats_.cycles;
    try {
      progress_(done_);
    } catch (...) {
      throw Stopped{std::current_exception()};
    }
  }
  std::function<void(int64_t, int64_t)> tracing() {  // compiling: chunks traced so far
    return [this](int64_t chunks_done, int64_t chunks) {
      done_.chunks_done = chunks_done;
      done_.chunks = chunks;
      poll();
    };
  }

  // Loads see the buffers as they were when the kernel started, like one pass of tinygrad's loops: a
  // buffer the kernel writes, or one sharing memory with such a buffer, is read from a copy.
  void snapshot_written(const Plan& plan) {
    snapshots_.reserve(nslots_);  // slots read through pointers into them
    auto overlaps = [](const Slot& a, const Slot& b) {
      return a.write < b.write + b.size * b.bytes && b.write < a.write + a.size * a.bytes;
    };
    for (int s = 0; s < nslots_; ++s) {
      if (!slots_[s].write) continue;
      bool copy = false;
      for (int w = 0; w < nslots_ && !copy; ++w)
        copy = slots_[w].write && plan.written[w] && overlaps(slots_[s], slots_[w]);
      if (!copy) continue;
      snapshots_.emplace_back(slots_[s].write, slots_[s].write + slots_[s].size * slots_[s].bytes);
      slots_[s].read = snapshots_.back().data();
    }
  }
  // The memo buffers (compiler/tracer.h), after the counter slot: 32-bit lanes as they were drained.
  void add_memos(const Plan& plan) {
    slots_.resize(nslots_ + 1);
    memos_.clear();
    for (int64_t elements : plan.memo_sizes) {
      memos_.emplace_back(size_t(elements));
      auto* data = reinterpret_cast<uint8_t*>(memos_.back().data());
      slots_.push_back({data, data, DType::kI32, 4, elements});
    }
  }

  // Every launch of the plan: gather, run on the model, scatter.
  KernelStats run(const Plan& plan, bool keep_tasm, TraceLog* trace, CoreState* core) {
    done_.chunks_done = done_.chunks;  // compiled
    DataPlan data(plan, slots_);
    const uint64_t kernel_begin = trace ? trace->base : 0;
    LaunchClock clock;
    for (const LaunchRun& run : plan.runs) {
      data.start(run);
      for (int64_t at = run.first; at < run.first + run.count; ++at)
        run_launch(plan, plan.launches[at], data, clock, keep_tasm, trace, core);
    }
    if (trace) trace->span(Track::kKernel, 0, kernel_begin, trace->base, trace->intern(kernel_));
    return stats_;
  }

 private:
  const std::string& kernel_;
  const Progress& progress_;
  int nslots_ = 0;
  std::vector<Slot> slots_;
  std::vector<std::vector<uint8_t>> snapshots_;
  std::vector<std::vector<int32_t>> memos_;
  KernelStats stats_;
  KernelProgress done_{0, 1};
  std::chrono::steady_clock::time_point last_report_ = std::chrono::steady_clock::now();
  const Poll poller_ = [this] { poll(); };  // for the model's run loop
  CompiledKernel::TimingCache& timings_;
  const RunMode mode_;
  // This call's view of the timing cache: per key, its entry (none: not ticked yet) and the in-order runner
  // of its program, made at its first run in order.
  struct KeyRuns {
    std::shared_ptr<CompiledKernel::TimingCache::Entry> timing;
    std::unique_ptr<InOrderRunner> runner;
  };
  std::unordered_map<CompiledKernel::TimingCache::Key, KeyRuns, CompiledKernel::TimingCache::KeyHash> keys_;

  void run_launch(const Plan& plan, const PlanLaunch& l, DataPlan& data, LaunchClock& clock, bool keep_tasm,
                  TraceLog* trace, CoreState* core) {
    if (keep_tasm) stats_.tasm.push_back(listing(data.bundle(l), l.image->fill_dtypes));
    const uint64_t launch_begin = trace ? trace->base : 0;
    // Prefetched while the last launch runs, unless it reads what that one outputs or its program's write
    // overwrites that one's (resident programs: a ring of both banks' entries)
    const bool prefetch = plan.config.prefetch_launches;
    LaunchLoad load;
    bool evicts_last = false;
    if (core && plan.config.resident_program)
      load.resident = core->load(l.image, plan.config.prog_depth * (prefetch ? 2 : 1), evicts_last);
    if (prefetch && clock.last && !evicts_last && !data.reads_output_of(l, *clock.last))
      load.ahead = clock.ahead();
    // A trace that records sees every cycle ticked; one paused or past its window only moves on
    const bool ticks_only = !mode_.functional || (trace && trace->recording());
    const CompiledKernel::TimingCache::Key timing_key{l.image.get(), load.ahead, load.resident};
    KeyRuns& key = keys_[timing_key];
    if (!key.timing && !ticks_only) key.timing = timings_.find(timing_key);
    const Fill fill = [&](TensorCore& tc) { data.fill(l, tc); };
    auto ticked = [&](TraceLog* to) {
      return run_validated(l.image->bundle, fill, plan.config, to, poller_, load);
    };
    RunResult res;
    try {  // a compiled launch that fails is the compiler's or the model's error, shown with its program
      if (!ticks_only && key.timing && key.timing->in_order) {
        if (!key.runner) key.runner = std::make_unique<InOrderRunner>(l.image->bundle, plan.config);
        res = key.timing->counters;
        key.runner->run(fill, res, poller_);
        if (trace) trace->skip(res.cycles);
        ++stats_.in_order;
        if (const uint64_t runs = ++key.timing->runs; mode_.verify || runs % kSampleEvery == 1) {
          check_same(res, ticked(nullptr), stats_.launches);  // (the trace moved on already)
          ++stats_.checked;
        }
      } else {
        res = ticked(trace);
        if (!ticks_only && !key.timing) key.timing = timings_.add(timing_key, l.image, res);
      }
    } catch (const std::exception& e) {
      throw SimError(std::string("internal error in kernel ") + kernel_ + ": " + e.what() + "\n" +
                     disassemble(data.bundle(l)));
    }
    data.drain(l, res.vmem_results);
    clock.ran(l, res);
    if (trace)
      trace->span(Track::kKernel, 1, launch_begin, trace->base,
                  trace->intern("launch " + std::to_string(stats_.launches)));
    ++stats_.launches;
    stats_.cycles += res.cycles;
    stats_.sxu_cycles += res.sxu_cycles;
    poll();
  }
};

}  // namespace

// A call: bind the buffers, take the plan for their sizes (compiled once), snapshot what the kernel both
// reads and writes, take the plan for the choices this call's data makes, and run its launches.
KernelStats CompiledKernel::run_plan(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                     bool keep_tasm, TraceLog* trace, const Progress& progress,
                                     CoreState* core, const RunMode& mode) const {
  Call call(kernel_.name, params_, bufs, progress, timings_, mode);
  std::shared_ptr<const Plan> plan = this->plan({vals, call.sizes, {}, {}}, {}, call.tracing());
  call.snapshot_written(*plan);
  call.add_memos(*plan);
  // Choices that depend on the data select another plan: MXU data out of int8 range keeps its chains on
  // the VPU, an operand with the values of another is loaded once.
  if (auto [veto, same] = DataPlan(*plan, call.slots()).choices(); !veto.empty() || !same.empty()) {
    Choices choices{veto, {}};
    for (auto [operand, earlier] : same)
      choices.same_values[plan->mxu_operands[operand].lanes] = plan->mxu_operands[earlier].lanes;
    decision_log().debug(
        "kernel {}: this call's data keeps {} chains on the VPU (out of int8 range) and loads {} "
        "MXU operands once (equal values): the plan for these choices",
        kernel_.name, veto.size(), same.size());
    plan = this->plan({vals, call.sizes, veto, same}, choices, call.tracing());
    call.add_memos(*plan);
  }
  return call.run(*plan, keep_tasm, trace, core);
}

}  // namespace tinytpu
