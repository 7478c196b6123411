#pragma once
// The loader: how a launch's bundle gets into the core and its output lines out. A configuration has one of
// two, chosen once from it (LaunchLoader, loader_facts):
//  - the reference testbench's (TbTinyTPURuntime.bsv): cycle 0 opens the bundle, each record takes
//    record_cycles (2: type, then apply), END's type read 1, do_start 1, then the SXU's first FETCH
//    (hardware.md §4.4); an output line is printed in the cycle it is put out.
//  - the DMA engine from HBM (hbm_channels, sim/dma_engine.h): it reads the records one request a cycle from
//    cycle 1, END and do_start follow the last record the SXU starts on; each output line is written back to
//    HBM, and the run ends when the last write is done. With a SparseCore (sparse_core), the loader hands a
//    table row to it instead when it would have the row in VMEM sooner than a channel (a tie goes to the
//    channel).
// Both send the records in one order. With dma_overlap the records other than data go first (the program and
// the output list), so that the SXU starts after those alone; the data records follow, the first beginning
// in the cycle after the last of the others. A resident program's records are not sent. A prefetched
// launch's loading is all `ahead` cycles earlier; do_start and the first FETCH stay in this run's cycles.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "base/config.h"
#include "isa/bundle.h"
#include "sim/dma_engine.h"

namespace tinytpu {

// How a kernel call's launch is loaded on a variant core (config.h):
//  - ahead (prefetch_launches): the loader began this launch's records `ahead` cycles before its cycle 0,
//    while the previous launch ran. Every loading time moves that much earlier (none before cycle 0);
//    whatever is still to come arrives as without prefetch.
//  - resident (resident_program): the launch's program and output list are in program memory already; the
//    loader sends only its data records.
//  - writes_before (a loader that shares_channels, with prefetch_launches): the previous launch wrote its
//    outputs to HBM in its last writes_before cycles, during which the channels take none of this launch's
//    reads.
//  - table_rows (sparse_core): per record, whether it is a table row that the SparseCore may look up in
//    place of a DMA read (compiler/plan.h Image::table_rows).
struct LaunchLoad {
  uint64_t ahead = 0;
  bool resident = false;
  uint64_t writes_before = 0;
  const std::vector<bool>* table_rows = nullptr;
};

// One launch's loading and output, in the launch's cycles.
class Loader {
 public:
  virtual ~Loader() = default;
  // Sends the bundle's records. Returns the cycle of the SXU's first FETCH; `done`, when given, gets per
  // record the first cycle it is visible in (0 for a record not sent).
  virtual uint64_t load(const Bundle& bundle, std::vector<uint64_t>* done) = 0;
  // The cycles record `i` took to load, ending when it is visible (a trace's slice of it).
  virtual int64_t load_cycles(const Bundle& bundle, size_t i) const = 0;
  virtual bool looked_up(size_t) const { return false; }  // record i was brought by the SparseCore
  // An output line of `type` put out in `cycle`: the first cycle the loader is done with it.
  virtual uint64_t output(RecordType type, uint64_t cycle) = 0;
  virtual uint64_t hbm_bytes() const { return 0; }   // moved between HBM and the core, both ways
  virtual uint64_t sc_lookups() const { return 0; }  // table rows the SparseCore looked up
};

// The reference testbench's loader.
class TestbenchLoader final : public Loader {
 public:
  TestbenchLoader(const TensorCoreConfig& cfg, const LaunchLoad& launch) : cfg_(cfg), launch_(launch) {}
  uint64_t load(const Bundle& bundle, std::vector<uint64_t>* done) override;
  int64_t load_cycles(const Bundle&, size_t) const override { return cfg_.record_cycles; }
  uint64_t output(RecordType, uint64_t cycle) override { return cycle; }

 private:
  const TensorCoreConfig& cfg_;
  const LaunchLoad launch_;
  uint64_t earlier(uint64_t at, uint64_t least) const;  // `at`, as the prefetch moved it (none below `least`)
};

// The DMA engine from HBM, with the SparseCore's lookups. Every read is in before the run's output lines
// begin (the outputs wait for the data), so their writes find the channels as free as a fresh engine's.
class DmaLoader final : public Loader {
 public:
  DmaLoader(const TensorCoreConfig& cfg, const LaunchLoad& launch);
  uint64_t load(const Bundle& bundle, std::vector<uint64_t>* done) override;
  int64_t load_cycles(const Bundle& bundle, size_t i) const override;
  bool looked_up(size_t i) const override { return i < looked_up_.size() && looked_up_[i]; }
  uint64_t output(RecordType type, uint64_t cycle) override;
  uint64_t hbm_bytes() const override { return dma_.bytes + sparse_.bytes; }
  uint64_t sc_lookups() const override { return sparse_.lookups; }

 private:
  const TensorCoreConfig& cfg_;
  const LaunchLoad launch_;
  DmaEngine dma_;
  SparseCoreLookups sparse_;
  std::vector<bool> looked_up_;    // per record (with a SparseCore)
  bool table_row(size_t i) const;  // one the SparseCore may look up
};

// One launch's loader: the configuration's, chosen once, held in place (a launch allocates none).
class LaunchLoader {
 public:
  LaunchLoader(const TensorCoreConfig& cfg, const LaunchLoad& launch);
  LaunchLoader(const LaunchLoader&) = delete;
  LaunchLoader& operator=(const LaunchLoader&) = delete;
  Loader& operator*() { return *loader_; }
  Loader* operator->() { return loader_; }

 private:
  std::variant<TestbenchLoader, DmaLoader> held_;
  Loader* loader_;
};

// What a configuration's loader is, for what keys timings by it or reports on it.
struct LoaderFacts {
  // Its reads and writes take turns on HBM channels (hbm_channels of hbm_bytes_per_cycle a cycle): a
  // prefetched launch's reads wait while the previous launch writes its outputs (LaunchLoad::writes_before).
  bool shares_channels;
  // The counters (tinytpu.counters()) whose sum is the bytes it moves into and out of the core: the DMA
  // engine counts its own; the testbench's are its records' and output lines' (the launches' activity).
  std::vector<std::string> moved;
};
const LoaderFacts& loader_facts(const TensorCoreConfig& cfg);

}  // namespace tinytpu
