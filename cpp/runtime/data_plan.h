#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "base/tile.h"
#include "compiler/plan.h"
#include "isa/bundle.h"
#include "sim/memories.h"

namespace tinytpu {

class TensorCore;

namespace runtime {

// A buffer slot as a call sees it: loads read `read` (the buffer, or a snapshot when the kernel may
// write what it reads), stores write `write`.
struct Slot {
  const uint8_t* read = nullptr;
  uint8_t* write = nullptr;
  compiler::DType dtype = compiler::DType::kVoid;
  int bytes = 0;
  int64_t size = 0;
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
  using Plan = compiler::Plan;
  using PlanLaunch = compiler::PlanLaunch;
  using Keep = compiler::Keep;

  // `slots`: the buffers', then the counter slot's (unused) and the memo buffers'.
  DataPlan(const Plan& plan, const std::vector<Slot>& slots);

  Tile gather(int id) const {
    Tile out;
    gather(id, out);
    return out;
  }
  // Into `out`, every lane written (0 where the source has none).
  void gather(int id, Tile& out) const;

  // This call's choices (mxu_dot.h), from the plan compiled without any: the chains it puts an element
  // of out of int8 range, and the operands with an earlier one's values, as (operand, earlier) pairs.
  // Each set of choices is a plan of its own, compiled on first use. The veto is needed to be exact; the
  // sharing only saves records, so it is chosen only where at least 1 operand in kSharingWorthAPlan has an
  // earlier twin: below that, the records saved are not worth a compile (a large int8 layer's activations
  // have a few chance twins, different in every layer and every call: a plan each, never used again).
  static constexpr size_t kSharingWorthAPlan = 16;
  std::pair<std::set<int>, std::vector<std::pair<int, int>>> choices() const;

  // Writes a launch's data into the memories (the records hold constants and placeholders).
  void fill(const PlanLaunch& l, TensorCore& tc) const;
  // Its VMEM tiles, into entry(addr): a core's, or its own in a batch.
  template <class Entry>
  void fill_vmem(const PlanLaunch& l, Entry entry) const {
    const auto& records = l.image->bundle.records;
    for (const PlanLaunch::Fill& f : l.fills) gather(f.source, entry(records[f.record].addr));
  }
  // Its WeightSRAM and ActivationSRAM entries (a core's, or a launch's of a batch).
  void fill_mxu(const PlanLaunch& l, WeightSram& weights, ActivationSram& acts) const {
    const auto& records = l.image->bundle.records;
    for (const PlanLaunch::MxuFill& f : l.mxu_fills) {
      const Record& r = records[f.record];
      const int source = p_.mxu_operands[f.operand].source;
      if (r.type == RecordType::kWeightWords) {
        weights.write_words(r.addr, gather(source));
      } else if (r.type == RecordType::kActWords) {
        const Tile t = gather(source);
        Row row;
        std::copy_n(t.begin(), kRows, row.begin());
        acts.write_words(r.addr, row);
      } else if (r.type == RecordType::kWeightTile) {
        gather_i8(source, weights.mem[r.addr].data(), kTileElems);
        weights.widen(r.addr);
      } else {
        gather_i8(source, acts.mem[r.addr].data(), kRows);
        acts.widen(r.addr);
      }
    }
  }
  // The launch's bundle with this call's data in its records (DEBUG=4 listings).
  Bundle bundle(const PlanLaunch& l) const;

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
    for (const compiler::Scatter& s : l.scatters)
      scatter(s, out[s.value], s.index_tile >= 0 ? &out[s.index_tile] : nullptr,
              s.gate >= 0 ? &out[s.gate] : nullptr);
  }

  // Whether a launch's fills read a value `before` output (a spill or a pinned tile it kept; `before_swap`:
  // its run's swap_banks): the launch prefetch variant loads such a launch only after that output.
  bool reads_output_of(const PlanLaunch& l, const PlanLaunch& before, bool before_swap) const;
  // The places of kept tiles: scratch tiles, then pinned tiles in their banks (as the current run reads
  // them).
  int places() const { return int(scratch_.size() + pinned_.size()); }
  int kept_place(const Keep& k, bool swap) const { return compiler::kept_place(p_, k.pinned, k.id, swap); }
  int kept_place(const Keep& k) const { return kept_place(k, swap_); }
  // f(place) for each kept tile a launch's fills read.
  template <class F>
  void for_each_kept_read(const PlanLaunch& l, F f) const {
    for_each_read(l, [&](const compiler::TileSource& s) {
      if (compiler::is_kept(s)) f(compiler::kept_place(p_, s, swap_));
    });
  }
  bool reads_memo(const PlanLaunch& l) const;
  bool stores_memo(const PlanLaunch& l) const;
  // A kept tile read from elsewhere than its place while set (null: its place): launches of a batch run
  // before earlier ones are drained, their kept tiles given by the launch that kept them (Segment's window).
  void rename(int place, const Tile* value) { renamed_[size_t(place)] = value; }
  // The stream whose launch is gathered or drained next (null: none): it keeps its tiles apart, and reads the
  // data plan's where it kept none (Segment::run_streams).
  void use_stream(StreamKept* stream) { stream_ = stream; }

  // The run about to execute: its element indices are moved by the run's shift.
  void start(const compiler::LaunchRun& r) {
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

  // The first n lanes of gather(id), narrowed to int8 (an MXU operand's record): read straight from an int8
  // buffer when the source is a plain strided one, the MXU operands' usual kind.
  void gather_i8(int id, int8_t* out, int n) const;
  // The gathers by TileSource kind (gather()): they write every lane of `out`.
  void gather_strided(const compiler::TileSource& s, Tile& out) const;
  void gather_offsets(const compiler::TileSource& s, Tile& out) const;
  void gather_lanes(const compiler::TileSource& s, Tile& out) const;
  // One drained value stored to its buffer: `index` and `gate` the drained index and gate tiles, if any.
  void scatter(const compiler::Scatter& s, const Tile& value, const Tile* index, const Tile* gate) const;
  static void store(const Slot& b, int buf, int64_t at, int32_t value);
  // f(source) for each source a launch's fills read.
  template <class F>
  void for_each_read(const PlanLaunch& l, F f) const {
    for (const PlanLaunch::Fill& fill : l.fills) compiler::for_each_source(p_, fill.source, f);
  }
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

}  // namespace runtime
}  // namespace tinytpu
