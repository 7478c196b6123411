#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/tile.h"
#include "isa/bundle.h"
#include "sim/loader.h"
#include "sim/trace.h"

namespace tinytpu {

// A run's busy cycles of each unit (counters.def's BUSY rows), in the table's order.
struct UnitBusy {
#define BUSY(unit, name, type, doc) type unit = 0;
#include "sim/counters.def"
};

// What a run gives: its counters (counters.def's RUN rows) and the outputs the bundle asked for.
struct RunResult {
#define RUN(name, type, combine, energy, doc) type name = 0;
#include "sim/counters.def"
  UnitBusy busy;
  std::vector<Tile> vmem_results;  // in OUTPUT_VMEM order
  std::optional<Row> mxu_result;   // when the bundle asked for OUTPUT_MXU
  std::vector<Row> asram_results;  // in OUTPUT_ASRAM order
  std::string output() const;      // the testbench's stdout: result lines, cycles N, status ok
};

// Called every kPollCycles simulated cycles of a run (under a millisecond of host time) so that a long
// run can be stopped from outside: whatever it throws ends the run (Ctrl-C from Python).
using Poll = std::function<void()>;
constexpr uint64_t kPollCycles = uint64_t(1) << 16;

// Runs a bundle the way the reference runtime testbench does (TbTinyTPURuntime.bsv): load records at
// 2 cycles each, start, run to HALT, print outputs one per cycle. Raises SimError for a run the
// reference would hang on or time out. With a trace, every unit reports its events to it.
RunResult run_bundle(const Bundle& bundle, const TensorCoreConfig& cfg = {}, TraceLog* trace = nullptr,
                     const Poll& poll = {});

class TensorCore;
// Writes a run's data into the memories after the records are loaded.
using Fill = std::function<void(TensorCore&)>;
// run_bundle for a bundle validate() accepted before (a compiled kernel's launch, run many times with
// other data): `fill` puts this run's tiles over the records' own, which are what was validated.
RunResult run_validated(const Bundle& bundle, const Fill& fill, const TensorCoreConfig& cfg = {},
                        TraceLog* trace = nullptr, const Poll& poll = {}, const LaunchLoad& launch = {});

// Exact results without ticking. A program computes in order when none of its instructions reads data for its
// timing or control flow and each, started in a quiet core, retires leaving it quiet but for a write-back
// that lands in the next FETCH, which reads no vreg: the instructions a quiet core takes whole and the
// synchronous VPU dispatches of any op (sxu_ops.def's reads_data, alone and timing columns). It has no MXU
// work, which goes on after its dispatch, and outputs no MXU or ActivationSRAM values, which would be only
// its records. Whatever its timing, such a program's instructions act one after another on the same values:
// its results are those of running them in order, and its cycles, the same for all its data, those of ticking
// it once.
bool computes_in_order(const Bundle& bundle);

class BatchDatapath;
class TensorCore;
// Launches of a validated bundle that computes in order, run together in batches (sim/batch.h): its records
// loaded into a core once; a batch starts every launch from that core's state, takes each launch's data (its
// fills of VMEM entries, batch.vmem.mem[addr][launch]), then runs the program's instructions once for all its
// launches, each with the model's own exec function acting on every launch's tiles. Gives what run_validated
// gives each launch; their counters are the ticked run's. A batch's configuration is the runner's.
class BatchRunner {
 public:
  BatchRunner(const Bundle& bundle, const TensorCoreConfig& cfg);
  ~BatchRunner();
  // A batch of 1..capacity launches, as the records loaded them; but for the VMEM entries `filled`, which the
  // caller fills for every launch.
  void start(BatchDatapath& batch, int launches, const std::vector<int>& filled = {}) const;
  // `poll` as run_bundle's: called about every kPollCycles of the launches' cycles run in order.
  void run(BatchDatapath& batch, const Poll& poll = {}) const;
  const std::vector<int>& outputs() const { return vmem_out_; }  // the OUTPUT_VMEM entries, in order
  // A launch's OUTPUT_VMEM results, after run, into `res`, whose counters are left as they are.
  void results(BatchDatapath& batch, int launch, RunResult& res) const;

 private:
  std::unique_ptr<TensorCore> loaded_;
  std::vector<int> vmem_out_;
};

}  // namespace tinytpu
