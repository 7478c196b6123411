#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "base/config.h"
#include "base/tile.h"
#include "isa/vpu_ops.h"
#include "sim/controller.h"
#include "sim/memories.h"
#include "sim/systolic_array.h"
#include "sim/trace.h"

namespace tinytpu {

// One place of a batch (a vreg, a VMEM entry, a result register...): a tile per launch, the launches one
// after another, so that an instruction acts on launches x lanes as one long array. A span is a place: it is
// never rebound; assigning to it writes its tiles. It spans the batch's launches of the moment.
class TileSpan {
 public:
  TileSpan(Tile* tiles, const int& launches) : tiles_(tiles), launches_(&launches) {}
  TileSpan(const TileSpan&) = default;
  Tile& operator[](int launch) const { return tiles_[launch]; }
  int launches() const { return *launches_; }
  // Plain loops, not copy_n: a batch is often one launch, whose tile a library call would cost more than
  // copy.
  const TileSpan& operator=(const TileSpan& from) const {  // launch by launch
    if (from.tiles_ != tiles_)
      for (int l = 0, n = launches(); l < n; ++l) tiles_[l] = from.tiles_[l];
    return *this;
  }
  const TileSpan& operator=(const Tile& value) const {  // the same tile for every launch
    for (int l = 0, n = launches(); l < n; ++l) tiles_[l] = value;
    return *this;
  }

 private:
  Tile* tiles_;
  const int* launches_;
};

// What a tile operation of the SXU does to a destination place from a source place, for one core's tiles or
// for each launch's of a batch: f(out, in). The same code serves both.
template <class F>
void each(Tile& out, const Tile& in, F f) {
  f(out, in);
}
template <class F>
void each(const TileSpan& out, const TileSpan& in, F f) {
  for (int l = 0; l < out.launches(); ++l) f(out[l], in[l]);
}

// A batch of launches of one program that computes in order (sim/runner.h), as the SXU's exec functions see a
// Datapath (datapath.h): the same members, each place a TileSpan. Nothing waits: every record has arrived, a
// VPU op of many cycles delivers its result at once (the SXU waits for it in such a program, so no
// instruction sees the difference), and an MXU dispatch runs whole at its start, for each launch
// (Controller::run_whole): the MXU is never busy, its result ready whenever the SXU looks. That is what
// ticking gives when no SXU PSUM access or ActivationSRAM output meets a dispatch still running that writes
// there (RunResult::mxu_overlapped, which keeps such a program ticked): the dispatches run one after another,
// and nothing else reads what they write before they are done. The batch's counters are its ticked launch's:
// nothing here counts them.
class BatchDatapath {
 public:
  BatchDatapath(const TensorCoreConfig& cfg, int capacity);
  BatchDatapath(const BatchDatapath&) = delete;  // its places point into it
  BatchDatapath& operator=(const BatchDatapath&) = delete;

  int capacity() const { return capacity_; }
  // Whether it has the places of a batch of `capacity` launches on a core of `cfg` (and can serve as one).
  bool holds(const TensorCoreConfig& cfg, int capacity) const;
  int launches() const { return launches_; }
  void set_launches(int n) { launches_ = n; }  // 1..capacity
  // The places in order: vregs, VMEM entries, PSUM buckets, then the eight result registers.
  TileSpan place(int p) { return {&store_[size_t(p) * size_t(capacity_)], launches_}; }

  // Places addressed as the hardware's memories: the low bits of an address.
  struct Places {
    BatchDatapath* batch;
    int first, mask;
    TileSpan operator[](int a) const { return batch->place(first + (a & mask)); }
  };
  struct Memory {
    Places mem;
    TileSpan resp;  // the read response register
    int wrap(int a) const { return a & mem.mask; }
    int bucket(int a) const { return wrap(a); }
    int buckets() const { return mem.mask + 1; }
  };
  struct Vpu {
    TileSpan result;
    bool is_done() const { return true; }
    template <class Src2>  // a TileSpan, or one Tile for every launch
    void execute(const VpuOpInfo& op, const TileSpan& a, const Src2& b) const {
      for (int l = 0; l < result.launches(); ++l) {
        Tile out;
        op.fn(a[l], tile_of(b, l), result[l], out);
        result[l] = out;
      }
    }
    static const Tile& tile_of(const TileSpan& s, int l) { return s[l]; }
    static const Tile& tile_of(const Tile& t, int) { return t; }
  };
  struct XluResult {
    TileSpan result;
  };
  // Each launch's MXU: its memories, its array and its Controller.
  struct LaunchMxu {
    WeightSram wsram;
    ActivationSram asram;
    SystolicArray array;
    Controller ctrl;
  };
  // The MXU as the SXU sees it: the Controller's state, the same for every launch (a launch's own Controller
  // runs its dispatches), and the results the SXU reads, each launch's gathered into a place when read.
  struct Mxu {
    BatchDatapath* batch;
    TileSpan output, matrix, epilogue, stat;  // the places
    CState state = CState::kIdle;
    bool epilogue_active = false;
    EpilogueConfig epi;
    int32_t scale_mul = 0;  // SET_REQUANT_CONFIG's, given to each launch's Controller at a dispatch
    uint8_t scale_shift = 0;
    static constexpr bool can_start() { return true; }
    static constexpr bool can_start(MxuStart) { return true; }
    static constexpr bool active() { return false; }
    static constexpr bool depositing() { return false; }
    bool is_done() const { return state == CState::kDone; }
    const TileSpan& output_tile() const { return gather(output, &Controller::output_tile); }
    const TileSpan& matrix_tile() const { return gather(matrix, &Controller::matrix_tile); }
    static constexpr bool bank_ready() { return true; }
    const TileSpan& bank_tile() const {
      return gather(matrix, &Controller::bank_tile);
    }  // read as it is gathered
    const TileSpan& epilogue_tile() const { return gather(epilogue, &Controller::epilogue_tile); }
    const TileSpan& stat_tile() const { return gather(stat, &Controller::stat_tile); }

   private:
    template <class Result>
    const TileSpan& gather(const TileSpan& place, Result (Controller::*result)() const) const {
      for (int l = 0; l < place.launches(); ++l) place[l] = (batch->mxu(l).ctrl.*result)();
      return place;
    }
  };
  struct Array {  // MXU_CLEAR's target: every launch's array
    BatchDatapath* batch;
    void clear_all() const;
  };
  struct Addresses {  // WeightSRAM's and ActivationSRAM's, whose entries are each launch's (mxu())
    int mask;
    int wrap(int a) const { return a & mask; }
  };
  LaunchMxu& mxu(int launch) { return mxu_[size_t(launch)]; }
  // A dispatch the SXU starts, run whole for each launch; `operand` the vreg its vregSrc names.
  void start_mxu(const MxuDispatch& d, const TileSpan& operand);

 private:
  int capacity_, launches_ = 0, places_;
  std::vector<Tile> store_;
  std::vector<LaunchMxu> mxu_;

 public:
  TensorCoreConfig cfg;
  uint64_t cycle = 0;         // counted as instructions run; READ_CYCLE is never batched
  TraceLog* trace = nullptr;  // batches are never traced
  static constexpr bool psum_port_taken = false;
  static constexpr uint64_t mxu_data_arrival = 0;                    // every record has arrived
  bool mxu_overlapped = false;                                       // never set: nothing runs beside the SXU
  std::array<uint64_t, TensorCoreConfig::kMaxDepth> vmem_arrival{};  // every record has arrived
  uint64_t xlu_busy_cycles = 0;                                      // counted, not reported
  Places vrf;
  Memory vmem, psum;
  Vpu vpu;
  XluResult xlu;
  Mxu ctrl;
  Array array;
  Addresses wsram, asram;
};

}  // namespace tinytpu
