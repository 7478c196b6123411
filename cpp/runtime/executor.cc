#include "runtime/executor.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "base/errors.h"
#include "compiler/compile.h"
#include "compiler/log.h"
#include "isa/tasm.h"
#include "sim/batch.h"
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

// Values by kept-tile place, for the few places a stream (Segment) touches of a plan's many: pages of places,
// each allocated at its first write; `fill` elsewhere.
template <class T>
class PagedPlaces {
 public:
  explicit PagedPlaces(T fill) : fill_(fill) {}
  const T& operator[](int place) const {
    const size_t page = size_t(place) >> kPageBits;
    return page < pages_.size() && pages_[page] ? (*pages_[page])[size_t(place) & (kPage - 1)] : fill_;
  }
  T& at(int place) {
    const size_t page = size_t(place) >> kPageBits;
    if (page >= pages_.size()) pages_.resize(page + 1);
    if (!pages_[page]) {
      pages_[page] = std::make_unique<std::array<T, kPage>>();
      pages_[page]->fill(fill_);
    }
    return (*pages_[page])[size_t(place) & (kPage - 1)];
  }

 private:
  static constexpr int kPageBits = 8;
  static constexpr size_t kPage = size_t(1) << kPageBits;
  T fill_;
  std::vector<std::unique_ptr<std::array<T, kPage>>> pages_;
};

// The tiles a stream of independent groups kept (Segment::run_streams), apart from the segment's.
struct StreamTile {
  Tile tile;
  bool kept = false;
};
using StreamKept = PagedPlaces<StreamTile>;

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
    Tile out;
    gather(id, out);
    return out;
  }
  // Into `out`, every lane written (0 where the source has none).
  void gather(int id, Tile& out) const {
    const TileSource& s = p_.sources[id];
    switch (s.kind) {
      case TileSource::Kind::kStrided: {
        const StridedGather& g = p_.strided[s.id];
        const int64_t moved = shift(g.buf);
        const Slot& b = slots_[g.buf];
        if (!s.gated && b.bytes == 4 && g.buf != counter_) {
          // the common case: 32-bit lanes, every index checked when compiled
          const uint8_t* row = b.read + (g.base + moved) * 4;
          if (g.lanes == kLanes) {
            for (int r = 0; r < kRows; ++r, row += g.row * 4) {
              if (g.col == 1) {
                std::memcpy(&out[r * kRows], row, 4 * kRows);
                continue;
              }
              for (int c = 0; c < kRows; ++c) std::memcpy(&out[r * kRows + c], row + c * g.col * 4, 4);
            }
            break;
          }
          out.fill(0);
          for (int l = 0; l < g.lanes; ++l) std::memcpy(&out[l], row + (g.index(l) - g.base) * 4, 4);
          break;
        }
        out.fill(0);
        if (g.buf == counter_) {
          for (int l = 0; l < g.lanes; ++l) out[l] = counter(g.index(l) + moved);
          break;
        }
        for (int l = 0; l < g.lanes; ++l) {
          const int64_t at = g.index(l) + moved;
          if (!s.gated || (at >= 0 && at < b.size)) out[l] = read_lane(b.read + at * b.bytes, b.dtype);
        }
        break;
      }
      case TileSource::Kind::kOffsets: {
        const OffsetGather& g = p_.offset_gathers[s.id];
        const LaneOffsets& o = p_.lane_offsets[g.offsets];
        const Slot& b = slots_[g.buf];
        const int64_t at = g.base + shift(g.buf);
        if (at + o.lo >= 0 && at + o.hi < b.size) {  // every lane in the buffer: one check
          const uint8_t* base = b.read + at * b.bytes;
          if (b.bytes == 4)
            for (int l = 0; l < kLanes; ++l) std::memcpy(&out[l], base + int64_t(o.at[l]) * 4, 4);
          else
            for (int l = 0; l < kLanes; ++l) out[l] = read_lane(base + int64_t(o.at[l]) * b.bytes, b.dtype);
          if (o.constant.any())  // (which read the base element above)
            for (int l = 0; l < kLanes; ++l)
              if (o.constant[size_t(l)]) out[l] = o.constants[l];
          break;
        }
        for (int l = 0; l < kLanes; ++l) {
          if (o.constant[size_t(l)]) {
            out[l] = o.constants[l];
            continue;
          }
          const int64_t lane = at + o.at[l];
          if (lane < 0 || lane >= b.size) {
            if (!s.gated) throw gather_outside(lane, g.buf, b.size);
            out[l] = 0;  // a gated-off lane reads 0, as below
            continue;
          }
          out[l] = read_lane(b.read + lane * b.bytes, b.dtype);
        }
        break;
      }
      case TileSource::Kind::kLanes:
      case TileSource::Kind::kDynamic: {
        // per lane a constant or an element: at a static index, or at one computed by an earlier launch
        const bool dynamic = s.kind == TileSource::Kind::kDynamic;
        const Tile index = dynamic ? gather(s.index) : Tile{};
        out.fill(0);
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
      case TileSource::Kind::kScratch: {
        const int place = compiler::kept_place(p_, s, swap_);
        const Tile* renamed = renamed_[size_t(place)];
        if (!renamed && stream_ && (*stream_)[place].kept) renamed = &(*stream_)[place].tile;
        out = renamed ? *renamed : kept(place);
        return;
      }
    }
    if (s.negate.any())
      for (int l = 0; l < kLanes; ++l)
        if (s.negate[l]) out[l] = wrap_neg(out[l]);
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
    fill_vmem(l, [&](int addr) -> Tile& { return tc.vmem.mem[addr]; });
    const auto& records = l.image->bundle.records;
    for (const PlanLaunch::MxuFill& f : l.mxu_fills) {
      const Record& r = records[f.record];
      Tile t = gather(p_.mxu_operands[f.operand].source);
      if (r.type == RecordType::kWeightTile)
        for (int k = 0; k < kTileElems; ++k) tc.wsram.mem[r.addr][k] = int8_t(t[k]);
      else
        for (int k = 0; k < kRows; ++k) tc.asram.mem[r.addr][k] = int8_t(t[k]);
    }
  }
  // Its VMEM tiles, into entry(addr): a core's, or its own in a batch (whose programs read no MXU data).
  template <class Entry>
  void fill_vmem(const PlanLaunch& l, Entry entry) const {
    const auto& records = l.image->bundle.records;
    for (const PlanLaunch::Fill& f : l.fills) gather(f.source, entry(records[f.record].addr));
  }
  // The launch's bundle with this call's data in its records (DEBUG=4 listings).
  Bundle bundle(const PlanLaunch& l) const {
    Bundle b = l.image->bundle;
    for (const PlanLaunch::Fill& f : l.fills) b.records[f.record].data = gather(f.source);
    for (const PlanLaunch::MxuFill& f : l.mxu_fills)
      b.records[f.record].data = gather(p_.mxu_operands[f.operand].source);
    return b;
  }

  // Keeps spilled and pinned tiles, then stores the drained values in program order. `out[k]`: the launch's
  // k-th output tile.
  template <class Outputs>
  void drain(const PlanLaunch& l, const Outputs& out) {
    for (const Keep& k : l.keeps) {
      if (stream_)
        stream_->at(kept_place(k)) = {out[k.output], true};
      else
        kept(kept_place(k)) = out[k.output];
    }
    for (const Scatter& s : l.scatters) {
      const Slot& b = slots_[s.buf];
      const Tile& value = out[s.value];
      if (s.index_tile >= 0) {
        const Tile& index = out[s.index_tile];
        for (int lane = 0; lane < kLanes; ++lane)
          if (s.active[lane] && (s.gate < 0 || out[s.gate][lane])) store(b, s.buf, index[lane], value[lane]);
        continue;
      }
      const LaneOffsets& o = p_.lane_offsets[size_t(s.offsets)];
      const int64_t at = s.base + shift(s.buf);
      if (s.gate < 0 && s.active.all() && at + o.lo >= 0 && at + o.hi < b.size) {
        // the common case: every lane stored, the tile's elements in the buffer (one check)
        uint8_t* base = b.write + at * b.bytes;
        if (b.bytes == 4)
          for (int lane = 0; lane < kLanes; ++lane)
            std::memcpy(base + int64_t(o.at[lane]) * 4, &value[lane], 4);
        else
          for (int lane = 0; lane < kLanes; ++lane)
            write_lane(base + int64_t(o.at[lane]) * b.bytes, b.dtype, b.bytes, value[lane]);
        continue;
      }
      for (int lane = 0; lane < kLanes; ++lane)
        if (s.active[lane] && (s.gate < 0 || out[s.gate][lane]))
          store(b, s.buf, at + o.at[lane], value[lane]);
    }
  }
  static void store(const Slot& b, int buf, int64_t at, int32_t value) {
    if (at < 0 || at >= b.size)
      throw SimError("scatter index " + std::to_string(at) + " outside buffer " + std::to_string(buf) +
                     " of " + std::to_string(b.size) + " elements");
    write_lane(b.write + at * b.bytes, b.dtype, b.bytes, value);
  }

  // Whether a launch's fills read a value `before` output (a spill or a pinned tile it kept; `before_swap`:
  // its run's swap_banks): the launch prefetch variant loads such a launch only after that output.
  bool reads_output_of(const PlanLaunch& l, const PlanLaunch& before, bool before_swap) const {
    bool reads = stores_memo(before) && reads_memo(l);
    for_each_kept_read(l, [&](int place) {
      for (const Keep& k : before.keeps) reads |= kept_place(k, before_swap) == place;
    });
    return reads;
  }
  // The places of kept tiles: scratch tiles, then pinned tiles in their banks (as the current run reads
  // them).
  int places() const { return int(scratch_.size() + pinned_.size()); }
  int kept_place(const Keep& k, bool swap) const { return compiler::kept_place(p_, k.pinned, k.id, swap); }
  int kept_place(const Keep& k) const { return kept_place(k, swap_); }
  // f(source) for each source a launch's fills read.
  template <class F>
  void for_each_read(const PlanLaunch& l, F f) const {
    for (const PlanLaunch::Fill& fill : l.fills) for_each_source(p_, fill.source, f);
  }
  // f(place) for each kept tile a launch's fills read.
  template <class F>
  void for_each_kept_read(const PlanLaunch& l, F f) const {
    for_each_read(l, [&](const TileSource& s) {
      if (is_kept(s)) f(compiler::kept_place(p_, s, swap_));
    });
  }
  bool reads_memo(const PlanLaunch& l) const {
    bool reads = false;
    for_each_read(l, [&](const TileSource& s) { reads |= compiler::reads_memo(p_, s); });
    return reads;
  }
  // A kept tile read from elsewhere than its place while set (null: its place): launches of a batch run
  // before earlier ones are drained, their kept tiles given by the launch that kept them (Segment's window).
  void rename(int place, const Tile* value) { renamed_[size_t(place)] = value; }
  // The stream whose launch is gathered or drained next (null: none): it keeps its tiles apart, and reads the
  // data plan's where it kept none (Segment::run_streams).
  void use_stream(StreamKept* stream) { stream_ = stream; }
  bool stores_memo(const PlanLaunch& l) const {
    return std::any_of(l.scatters.begin(), l.scatters.end(),
                       [&](const Scatter& s) { return s.buf > counter_; });
  }

  // The run about to execute: its element indices are moved by the run's shift.
  void start(const LaunchRun& r) {
    shift_ = r.shift < 0 ? nullptr : &p_.shifts[r.shift];
    swap_ = r.swap_banks;
  }
  bool swap() const { return swap_; }

 private:
  const Plan& p_;
  const std::vector<Slot>& slots_;
  const int counter_;
  std::vector<Tile> scratch_, pinned_;
  std::vector<const Tile*> renamed_ = std::vector<const Tile*>(size_t(places()), nullptr);
  StreamKept* stream_ = nullptr;
  const std::vector<int64_t>* shift_ = nullptr;
  bool swap_ = false;  // the run's banks exchanged
  // A kept tile by its place (kept_place).
  Tile& kept(int place) {
    return place < int(scratch_.size()) ? scratch_[place] : pinned_[place - scratch_.size()];
  }
  const Tile& kept(int place) const {
    return place < int(scratch_.size()) ? scratch_[place] : pinned_[place - scratch_.size()];
  }
  static int32_t counter(int64_t value) { return int32_t(uint32_t(value)); }
  int64_t shift(int buf) const { return shift_ && size_t(buf) < shift_->size() ? (*shift_)[buf] : 0; }
};

// The launch prefetch variant's timeline (config.h prefetch_launches), in cycles from the kernel call's
// start: the loader fills the idle banks with the next launch while the current one runs.
struct LaunchClock {
  const PlanLaunch* last = nullptr;  // the launch that ran last in this call
  bool last_swap = false;            // its run's swap_banks
  uint64_t end = 0;                  // when it finished (its last output line)
  uint64_t started = 0;              // its do_start: from then on its banks are in use, the others free
  uint64_t loader_free = 0;          // when the loader had sent its last record
  uint64_t writes = 0;               // with HBM, its output phase: its DMA engine's writes

  // How long before the last launch's end the next one's loading began, when it loads while the last one
  // runs: as soon as the loader and the idle banks were free. (One that reads what the last launch output
  // loads after its end.)
  uint64_t ahead() const {
    const uint64_t begin = std::max(loader_free, started);
    return begin < end ? end - begin : 0;
  }
  void ran(const PlanLaunch& l, bool swap, const RunResult& r) {
    last = &l;
    last_swap = swap;
    started = end + r.start;
    loader_free = end + r.loader_done;  // a loading done before this run's start counts as done then
    writes = r.cycles - r.output_start;
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
  auto kept = [&]() -> std::shared_ptr<const Plan> {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    auto it = plans_.find(key);
    return it != plans_.end() ? it->second : nullptr;
  };
  if (auto p = kept()) return p;  // a compiled plan is taken without waiting for another's compile
  // One compile at a time: a call that needs a plan another thread is compiling (a kernel shared by a chip's
  // cores) waits for it and takes it, rather than compiling it again
  std::lock_guard<std::mutex> compiling(compile_mutex_);
  if (auto p = kept()) return p;
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
  count("output_start", in_order.output_start, ticked.output_start);
  count("hbm_bytes", in_order.hbm_bytes, ticked.hbm_bytes);
  count("sc_lookups", in_order.sc_lookups, ticked.sc_lookups);
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

// Raised in the other threads of a call that stops: an error, or Ctrl-C, in one of its threads.
struct Cancelled {};

// A thread's batch and window outputs, kept from one call to the next, so that their pages are not faulted in
// and zeroed anew at every call: a segment takes them on the thread that makes it, and gives them back there.
struct SegmentStorage {
  std::unique_ptr<BatchDatapath> batch;
  std::vector<Tile> outputs;
};
thread_local SegmentStorage spare_storage;

std::unique_ptr<BatchDatapath> take_batch(const TensorCoreConfig& cfg, int capacity) {
  std::unique_ptr<BatchDatapath>& b = spare_storage.batch;
  if (!b || !b->holds(cfg, capacity)) return std::make_unique<BatchDatapath>(cfg, capacity);
  b->cfg = cfg;
  return std::move(b);
}

// A sequence of a call's runs, run by one thread: its kept tiles (a data plan), its window and its batches. A
// call runs its plan in one segment, or its independent groups of runs (Plan::independent_groups) in several
// at once.
class Segment {
 public:
  // `data`: the kept tiles as the runs before it leave them. `first_number`: the call's launches before it.
  // `launches`: about as many as it runs (its batch is no larger). `one_by_one`: something looks at launches
  // one by one (a trace, listings): a window of one launch, run at once, and no streams.
  Segment(const Plan& plan, const DataPlan& data, const std::string& kernel,
          CompiledKernel::TimingCache& timings, const RunMode& mode, Poll poll, uint64_t first_number,
          int64_t launches, bool one_by_one)
      : data(data),
        plan_(plan),
        kernel_(kernel),
        timings_(timings),
        mode_(mode),
        poll_(std::move(poll)),
        first_number_(first_number),
        window_limit_(one_by_one ? 1 : kWindowLaunches),
        batch_(take_batch(
            plan.config,
            int(std::max<int64_t>(1, std::min<int64_t>({kBatchLaunches, window_limit_, launches}))))),
        // streams reorder launches: not when a launch's timing key depends on the launch before it
        streams_(mode.streams && !one_by_one && !plan.config.prefetch_launches &&
                 !plan.config.resident_program),
        outputs_(std::move(spare_storage.outputs)) {}
  ~Segment() { spare_storage = {std::move(batch_), std::move(outputs_)}; }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Runs [first, end) of the plan's runs, the independent groups among them as streams; the window is drained
  // at the end.
  void run(size_t first, size_t end, bool keep_tasm, TraceLog* trace, CoreState* core) {
    const std::vector<size_t>& groups = plan_.independent_groups;
    auto from = std::lower_bound(groups.begin(), groups.end(), first);
    auto to = std::lower_bound(from, groups.end(), end);
    const size_t streamed = streams_ && to - from >= 2 ? *from : end;
    for (size_t r = first; r < streamed; ++r) {
      const LaunchRun& run = plan_.runs[r];
      data.start(run);
      current_run_ = &run;
      for (int64_t at = run.first; at < run.first + run.count; ++at)
        run_launch(plan_, run, plan_.launches[at], data, clock_, keep_tasm, trace, core);
    }
    if (streamed < end) run_streams(from, to, end, core);
    run_window(plan_, data);
  }
  KernelStats& stats() { return stats_; }

  DataPlan data;
  std::atomic<uint64_t> launches_done{0}, cycles_done{0};  // its stats so far, for the main thread's progress

 private:
  const Plan& plan_;
  const std::string& kernel_;
  CompiledKernel::TimingCache& timings_;
  const RunMode mode_;
  const Poll poll_;  // after every launch, and in the model's run loop
  const uint64_t first_number_;
  KernelStats stats_;
  LaunchClock clock_;
  // This call's view of the timing cache: per key, its entry (none: not ticked yet) and the batch runner of
  // its program, made at its first run in order.
  struct KeyRuns {
    std::shared_ptr<CompiledKernel::TimingCache::Entry> timing;
    std::unique_ptr<BatchRunner> runner;
  };
  std::unordered_map<CompiledKernel::TimingCache::Key, KeyRuns, CompiledKernel::TimingCache::KeyHash> keys_;

  // A sequence of launches whose kept tiles the window follows apart: the segment's runs in order, or a
  // stream of independent groups, which also keeps its tiles apart from the data plan's (`apart`).
  struct Stream {
    bool apart;
    // per kept-tile place: the window's launch that kept it last (-1: none) and its output
    PagedPlaces<std::pair<int, int>> keeper{{-1, 0}};
    StreamKept kept{{}};
    StreamKept* kept_apart() { return apart ? &kept : nullptr; }
  };
  Stream in_order_{false};
  Stream* stream_ = &in_order_;  // the stream of the launch being run
  const bool streams_;           // independent groups may run as streams

  // Independent groups of runs, from `first` (a group start) up to `last` and then `end`, up to kStreams at
  // once: a launch of each in turn, so that the window's levels hold launches of many groups, which batch
  // together where their programs agree (a group is often one long chain of launches). Each stream keeps
  // its tiles apart: by independence (compiler/independent.h), what a group reads before keeping it no
  // other group keeps, and so it reads the data plan's. Loads see the buffers as the call began, and the
  // groups store disjoint elements: the results are those of running the groups one after another.
  static constexpr int kStreams = 64;
  void run_streams(std::vector<size_t>::const_iterator first, std::vector<size_t>::const_iterator last,
                   size_t end, CoreState* core) {
    struct Cursor {
      size_t run = 0, runs_end = 0;
      int64_t at = 0;
      Stream stream{true};
    };
    run_window(plan_, data);  // a stream reads the data plan's kept tiles as the runs before leave them
    const uint64_t before = stats_.launches;
    std::vector<Cursor> cursors(size_t(std::min<ptrdiff_t>(kStreams, last - first)));
    // Groups that run the same launches (their indices shifted: replays) go together, so that streams run
    // them side by side: groups in the order of their first launch, as they were (any order gives the same
    // results).
    std::vector<std::pair<size_t, size_t>> groups;  // first run, end of runs
    for (auto g = first; g != last; ++g) groups.push_back({*g, g + 1 != last ? *(g + 1) : end});
    std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
      return plan_.runs[a.first].first < plan_.runs[b.first].first;
    });
    auto next_group = groups.begin();
    auto launch_of = [&](Cursor& c) {  // the group's next launch, false when it has none left
      for (; c.run < c.runs_end; ++c.run)
        if (c.at < plan_.runs[c.run].first + plan_.runs[c.run].count)
          return true;
        else if (c.run + 1 < c.runs_end)
          c.at = plan_.runs[c.run + 1].first;
      return false;
    };
    auto take_group = [&](Cursor& c) {  // false when no group is left
      while (next_group != groups.end()) {
        std::tie(c.run, c.runs_end) = *next_group++;
        c.at = plan_.runs[c.run].first;
        if (launch_of(c)) return true;
      }
      return false;
    };
    std::vector<Cursor*> active;
    for (Cursor& c : cursors)
      if (take_group(c)) active.push_back(&c);
    while (!active.empty()) {
      size_t kept = 0;
      for (Cursor* c : active) {
        const LaunchRun& run = plan_.runs[c->run];
        data.start(run);
        current_run_ = &run;
        stream_ = &c->stream;
        data.use_stream(stream_->kept_apart());
        run_launch(plan_, run, plan_.launches[size_t(c->at)], data, clock_, false, nullptr, core);
        ++c->at;
        if (launch_of(*c) || take_group(*c)) active[kept++] = c;
      }
      active.resize(kept);
    }
    run_window(plan_, data);  // before the streams go
    stats_.streamed += stats_.launches - before;
    stream_ = &in_order_;
    data.use_stream(nullptr);
  }

  // Launches run in order wait in a window, then run out of their order, in batches. A launch's level is one
  // more than the highest of the window's launches whose kept tiles it reads (0: none); level by level, the
  // launches of one key run together, each reading the kept tiles it needs from the launch that kept them
  // (DataPlan::set_renamed). Then every launch is drained in its order: buffers, kept tiles and memo buffers
  // end as running them one by one leaves them. A launch that reads a memo buffer a launch of the window
  // stores into waits for the window to be drained; one that does not run in order drains it first.
  static constexpr int kBatchLaunches = 64;
  static constexpr int kWindowLaunches = 1 << 14;
  static constexpr size_t kWindowTiles = size_t(1) << 18;  // their output tiles: 16 MB
  const int window_limit_;
  std::unique_ptr<BatchDatapath> batch_;
  struct Windowed {
    const PlanLaunch* launch;
    const LaunchRun* run;
    const KeyRuns* key;
    LaunchLoad load;
    uint64_t number;  // the call's launch count before it
    bool check;       // ticked as well and compared (RunMode)
    int level;
    int renames_first, renames_end;  // in renames_
    size_t outputs;                  // its first output tile in outputs_
    Stream* stream;
  };
  struct Rename {  // a kept tile a launch reads, from the window's launch that kept it last before it
    int place, keeper, output;
  };
  size_t window_tiles_ = 0;                 // the window's launches' output tiles (outputs_ once run)
  const LaunchRun* current_run_ = nullptr;  // the data plan's run, set back after a window
  std::vector<Windowed> window_;
  std::vector<Rename> renames_;
  bool window_stores_memo_ = false;
  std::vector<Tile> outputs_;  // the window's launches' output tiles, once run
  std::vector<int> renamed_;   // the places the data plan reads renamed
  std::vector<int> filled_;

  // The launch's load: resident program (a ring of both banks' entries with prefetch), and prefetched while
  // the last launch runs unless it reads what that one outputs or its program's write overwrites that one's.
  LaunchLoad load_of(const Plan& plan, const PlanLaunch& l, const DataPlan& data, const LaunchClock& clock,
                     CoreState* core) {
    const bool prefetch = plan.config.prefetch_launches;
    LaunchLoad load;
    bool evicts_last = false;
    if (core && plan.config.resident_program)
      load.resident = core->load(l.image, plan.config.prog_depth * (prefetch ? 2 : 1), evicts_last);
    if (prefetch && clock.last && !evicts_last && !data.reads_output_of(l, *clock.last, clock.last_swap))
      load.ahead = clock.ahead();
    if (load.ahead && loader_facts(plan.config).shares_channels) load.writes_before = clock.writes;
    if (plan.config.sparse_core) load.table_rows = &l.image->table_rows;
    return load;
  }

  void run_launch(const Plan& plan, const LaunchRun& run, const PlanLaunch& l, DataPlan& data,
                  LaunchClock& clock, bool keep_tasm, TraceLog* trace, CoreState* core) {
    if (keep_tasm) stats_.tasm.push_back(listing(data.bundle(l), l.image->fill_dtypes));
    const uint64_t launch_begin = trace ? trace->base : 0;
    const LaunchLoad load = load_of(plan, l, data, clock, core);
    // A trace that records sees every cycle ticked; one paused or past its window only moves on
    const bool ticks_only = !mode_.functional || (trace && trace->recording());
    const CompiledKernel::TimingCache::Key timing_key{l.image.get(), load.ahead, load.resident,
                                                      load.writes_before};
    KeyRuns& key = keys_[timing_key];
    if (!key.timing && !ticks_only) key.timing = timings_.find(timing_key);
    RunResult res;
    const uint64_t number = first_number_ + stats_.launches;
    if (!ticks_only && key.timing && key.timing->in_order) {
      if (!key.runner) key.runner = std::make_unique<BatchRunner>(l.image->bundle, plan.config);
      const uint64_t runs = ++key.timing->runs;
      add_to_window(plan, data, {&l, &run, &key, load, number, mode_.verify || runs % kSampleEvery == 1});
      res = key.timing->counters;
      if (trace) trace->skip(res.cycles);
      ++stats_.in_order;
    } else {
      run_window(plan, data);  // the launches before it first
      try {  // a compiled launch that fails is the compiler's or the model's error, shown with its program
        res = run_validated(l.image->bundle, fill(data, l), plan.config, trace, poll_, load);
      } catch (const std::exception& e) {
        throw launch_error(data, l, e);
      }
      if (!ticks_only && !key.timing) key.timing = timings_.add(timing_key, l.image, res);
      data.drain(l, res.vmem_results);
    }
    clock.ran(l, data.swap(), res);
    if (trace)
      trace->span(Track::kKernel, 1, launch_begin, trace->base,
                  trace->intern("launch " + std::to_string(number)));
    ++stats_.launches;
    stats_.cycles += res.cycles;
    stats_.sxu_cycles += res.sxu_cycles;
    stats_.hbm_bytes += res.hbm_bytes;
    stats_.sc_lookups += res.sc_lookups;
    stats_.mxu_busy += res.busy.mxu;
    stats_.vpu_busy += res.busy.vpu;
    stats_.activity += l.image->activity;
    if (load.resident) {  // its program and output list are not sent again
      stats_.activity.program_writes -= l.image->activity.program_writes;
      stats_.activity.program_bytes -= l.image->activity.program_bytes;
    }
    launches_done.store(stats_.launches, std::memory_order_relaxed);
    cycles_done.store(stats_.cycles, std::memory_order_relaxed);
    poll_();
  }

  static Fill fill(const DataPlan& data, const PlanLaunch& l) {
    return [&data, &l](TensorCore& tc) { data.fill(l, tc); };
  }
  SimError launch_error(const DataPlan& data, const PlanLaunch& l, const std::exception& e) const {
    return SimError(std::string("internal error in kernel ") + kernel_ + ": " + e.what() + "\n" +
                    disassemble(data.bundle(l)));
  }

  void add_to_window(const Plan& plan, DataPlan& data, Windowed w) {
    const PlanLaunch& l = *w.launch;
    if (window_stores_memo_ && data.reads_memo(l)) run_window(plan, data);
    w.level = 0;
    w.stream = stream_;
    w.renames_first = int(renames_.size());
    data.for_each_kept_read(l, [&](int place) {
      const auto [keeper, output] = stream_->keeper[place];
      if (keeper < 0) return;
      renames_.push_back({place, keeper, output});
      w.level = std::max(w.level, window_[size_t(keeper)].level + 1);
    });
    w.renames_end = int(renames_.size());
    for (const Keep& k : l.keeps) stream_->keeper.at(data.kept_place(k)) = {int(window_.size()), k.output};
    window_stores_memo_ |= data.stores_memo(l);
    w.outputs = window_tiles_;
    window_tiles_ += w.key->runner->outputs().size();
    window_.push_back(w);
    if (int(window_.size()) >= window_limit_ || window_tiles_ >= kWindowTiles) run_window(plan, data);
  }

  // Sets up the data plan to gather a windowed launch's data: its run, and the kept tiles it reads.
  void gathering(DataPlan& data, const Windowed& w) {
    data.start(*w.run);
    data.use_stream(w.stream->kept_apart());
    unrename(data);
    for (int r = w.renames_first; r < w.renames_end; ++r) {
      const Rename& x = renames_[size_t(r)];
      data.rename(x.place, &outputs_[window_[size_t(x.keeper)].outputs + size_t(x.output)]);
      renamed_.push_back(x.place);
    }
  }
  void unrename(DataPlan& data) {
    for (int place : renamed_) data.rename(place, nullptr);
    renamed_.clear();
  }

  void run_window(const Plan& plan, DataPlan& data) {
    if (window_.empty()) return;
    outputs_.resize(window_tiles_);
    std::vector<int> order(window_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Windowed &x = window_[size_t(a)], &y = window_[size_t(b)];
      return x.level != y.level ? x.level < y.level : std::less<const KeyRuns*>()(x.key, y.key);
    });
    for (size_t first = 0; first < order.size();) {
      size_t end = first + 1;
      const Windowed& head = window_[size_t(order[first])];
      while (end < order.size() && int(end - first) < batch_->capacity() &&
             window_[size_t(order[end])].level == head.level && window_[size_t(order[end])].key == head.key)
        ++end;
      run_batch(plan, data, &order[first], int(end - first));
      first = end;
    }
    unrename(data);
    for (const Windowed& w : window_) {
      data.start(*w.run);
      data.use_stream(w.stream->kept_apart());
      data.drain(*w.launch, &outputs_[w.outputs]);
      for (const Keep& k : w.launch->keeps) w.stream->keeper.at(data.kept_place(k)) = {-1, 0};
    }
    data.start(*current_run_);
    data.use_stream(stream_->kept_apart());
    window_.clear();
    window_tiles_ = 0;
    renames_.clear();
    window_stores_memo_ = false;
  }

  // The VMEM entries every one of a batch's launches fills (launches of one image fill the same records).
  const std::vector<int>& filled_by_all(const int* launches, int n) {
    filled_.clear();
    const PlanLaunch& first = *window_[size_t(launches[0])].launch;
    auto same_records = [&](const PlanLaunch& l) {
      return std::equal(
          l.fills.begin(), l.fills.end(), first.fills.begin(), first.fills.end(),
          [](const PlanLaunch::Fill& a, const PlanLaunch::Fill& b) { return a.record == b.record; });
    };
    for (int i = 1; i < n; ++i)
      if (!same_records(*window_[size_t(launches[i])].launch)) return filled_;
    for (const PlanLaunch::Fill& f : first.fills)
      filled_.push_back(first.image->bundle.records[f.record].addr);
    return filled_;
  }

  // Launches of one key and level: each one's data into its tiles, the program run once for all, their
  // outputs kept, and the sampled launches ticked as well and compared.
  void run_batch(const Plan& plan, DataPlan& data, const int* launches, int n) {
    const KeyRuns& key = *window_[size_t(launches[0])].key;
    BatchDatapath& b = *batch_;
    try {
      key.runner->start(b, n, filled_by_all(launches, n));
      for (int i = 0; i < n; ++i) {
        const Windowed& w = window_[size_t(launches[i])];
        gathering(data, w);
        data.fill_vmem(*w.launch, [&](int addr) -> Tile& { return b.vmem.mem[addr][i]; });
      }
      key.runner->run(b, poll_);
      ++stats_.batches;
      const std::vector<int>& outputs = key.runner->outputs();
      for (int i = 0; i < n; ++i) {
        const Windowed& w = window_[size_t(launches[i])];
        for (size_t k = 0; k < outputs.size(); ++k) outputs_[w.outputs + k] = b.vmem.mem[outputs[k]][i];
        if (!w.check) continue;
        RunResult in_order = key.timing->counters;
        in_order.vmem_results.assign(outputs_.begin() + ptrdiff_t(w.outputs),
                                     outputs_.begin() + ptrdiff_t(w.outputs + outputs.size()));
        gathering(data, w);
        check_same(in_order,
                   run_validated(w.launch->image->bundle, fill(data, *w.launch), plan.config, nullptr, poll_,
                                 w.load),
                   w.number);
        ++stats_.checked;
      }
    } catch (const std::exception& e) {
      throw launch_error(data, *window_[size_t(launches[0])].launch, e);
    }
  }
};

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
      slot_of_place_.push_back(slot);
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
  std::function<void(int64_t, int64_t)> tracing() {  // compiling: chunks traced so far
    return [this](int64_t chunks_done, int64_t chunks) {
      done_.chunks_done = chunks_done;
      done_.chunks = chunks;
      poll();
    };
  }

  // Loads see the buffers as they were when the kernel started, like one pass of tinygrad's loops: a
  // buffer the kernel reads (`loads`: places in the call) and writes, or one sharing memory with a buffer it
  // writes, is read from a copy.
  void snapshot_written(const Plan& plan, const std::vector<int>& loads) {
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

  // Every launch of the plan: gather, run on the model, scatter. Independent runs are shared among threads
  // (parts): the main thread runs the runs before them, then its part while the others run theirs, each from
  // the kept tiles it left.
  KernelStats run(const Plan& plan, bool keep_tasm, TraceLog* trace, CoreState* core) {
    done_.chunks_done = done_.chunks;  // compiled
    const uint64_t kernel_begin = trace ? trace->base : 0;
    const std::vector<size_t> bounds = parts(plan, trace || keep_tasm);
    std::vector<int64_t> before(bounds.size(), 0);  // launches before each bound
    for (size_t k = 0, r = 0; k < bounds.size(); ++k) {
      before[k] = k ? before[k - 1] : 0;
      for (; r < bounds[k]; ++r) before[k] += plan.runs[r].count;
    }
    Segment main(plan, DataPlan(plan, slots_), kernel_, timings_, mode_, poller_, 0, before[1],
                 trace || keep_tasm);
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
      stats.launches += s->stats().launches;
      stats.cycles += s->stats().cycles;
      stats.sxu_cycles += s->stats().sxu_cycles;
      stats.hbm_bytes += s->stats().hbm_bytes;
      stats.sc_lookups += s->stats().sc_lookups;
      stats.mxu_busy += s->stats().mxu_busy;
      stats.vpu_busy += s->stats().vpu_busy;
      stats.activity += s->stats().activity;
      stats.in_order += s->stats().in_order;
      stats.checked += s->stats().checked;
      stats.batches += s->stats().batches;
      stats.threaded += s->stats().launches;
      stats.streamed += s->stats().streamed;
    }
    segments_.clear();
    if (trace) trace->span(Track::kKernel, 0, kernel_begin, trace->base, trace->intern(kernel_));
    return stats;
  }

 private:
  const std::string& kernel_;
  const Progress& progress_;
  int nslots_ = 0;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_place_;  // a buffer's slot by its place in the call
  std::vector<std::vector<uint8_t>> snapshots_;
  std::vector<std::vector<int32_t>> memos_;
  KernelProgress done_{0, 1};
  std::chrono::steady_clock::time_point last_report_ = std::chrono::steady_clock::now();
  CompiledKernel::TimingCache& timings_;
  const RunMode mode_;
  std::vector<Segment*> segments_;          // running
  std::atomic<bool> stop_{false};           // an error or Ctrl-C in one thread stops the others
  const Poll poller_ = [this] { poll(); };  // the main thread's
  const Poll cancel_ = [this] {             // the others'
    if (stop_.load(std::memory_order_relaxed)) throw Cancelled{};
  };

  // Run boundaries: the main thread runs [0, b[0]), then thread k its part [b[k], b[k+1]), all of about equal
  // launches: the independent groups of runs shared among up to RunMode::threads threads of at least
  // kThreadLaunches launches each. One part when launches are looked at one by one (a trace, listings), or
  // when a launch's timing key depends on the launch before it (resident programs, launch prefetch).
  static constexpr int64_t kThreadLaunches = 512;
  std::vector<size_t> parts(const Plan& plan, bool one_by_one) const {
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
  static bool cancelled(const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const Cancelled&) {
      return true;
    } catch (...) {
      return false;
    }
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
  call.snapshot_written(*plan, loads_);
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
