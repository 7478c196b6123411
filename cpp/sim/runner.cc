#include "sim/runner.h"

#include <algorithm>
#include <bitset>
#include <sstream>

#include "base/errors.h"
#include "isa/sxu_ops.h"
#include "isa/tasm.h"
#include "sim/batch.h"
#include "sim/tensorcore.h"

namespace tinytpu {

namespace {

void load(TensorCore& tc, const Bundle& bundle, bool& out_mxu, std::vector<int>& vmem_out,
          std::vector<int>& asram_out) {
  int pc = 0;
  for (const Record& r : bundle.records) {
    switch (r.type) {
      case RecordType::kWeightTile:
        for (int k = 0; k < kTileElems; ++k) tc.wsram.mem[r.addr][k] = int8_t(r.data[k]);
        tc.wsram.widen(r.addr);
        break;
      case RecordType::kActTile:
        for (int k = 0; k < kRows; ++k) tc.asram.mem[r.addr][k] = int8_t(r.data[k]);
        tc.asram.widen(r.addr);
        break;
      case RecordType::kWeightWords:
        tc.wsram.write_words(r.addr, r.data);
        break;
      case RecordType::kActWords: {
        Row row;
        std::copy_n(r.data.begin(), kRows, row.begin());
        tc.asram.write_words(r.addr, row);
        break;
      }
      case RecordType::kVmemTile:
        tc.vmem.mem[r.addr] = r.data;
        break;
      case RecordType::kInstr:
        tc.sxu.prog[pc] = r.instr;
        tc.sxu.loaded.set(pc++);
        break;
      case RecordType::kOutputMxu:
        out_mxu = r.addr != 0;
        break;  // the last type-3 record wins
      case RecordType::kOutputVmem:
        vmem_out.push_back(r.addr);
        break;
      case RecordType::kOutputAsram:
        asram_out.push_back(r.addr);
        break;
      case RecordType::kEnd:
        break;
    }
  }
}

std::string record_name(const Record& r, int& pc) {
  const std::string at = "[" + std::to_string(r.addr) + "]";
  switch (r.type) {
    case RecordType::kWeightTile:
    case RecordType::kActTile:
    case RecordType::kWeightWords:
    case RecordType::kActWords:
    case RecordType::kVmemTile:
      return data_keyword(r.type) + at;
    case RecordType::kInstr:
      return "program[" + std::to_string(pc++) + "] " + format_instr(r.instr);
    case RecordType::kOutputMxu:
      return "OUTPUT_MXU";
    case RecordType::kOutputVmem:
      return "OUTPUT_VMEM VMEM" + at;
    case RecordType::kOutputAsram:
      return "OUTPUT_ASRAM AMEM" + at;
    case RecordType::kEnd:
      break;
  }
  return "END";
}

// The loading phase on the loader track: open, the records, END, start. The DMA loader's data records
// overlap the run: they go on a track of their own.
void trace_loading(TraceLog& log, const Bundle& bundle, const std::vector<uint64_t>& done,
                   const Loader& loader, uint64_t start, const TensorCoreConfig& cfg) {
  const bool dma = cfg.dma_overlap;
  log.slice(Track::kLoader, 0, 0, 1, log.name("open bundle"));
  int pc = 0;
  // (a prefetched launch's loading began before its cycle 0: what came before is not shown)
  auto slice = [&](Track track, int64_t begin, int64_t end, uint32_t name) {
    if (end > 0) log.slice(track, 0, uint64_t(std::max<int64_t>(begin, 0)), uint64_t(end), name);
  };
  for (size_t i = 0; i < bundle.records.size(); ++i) {
    const Record& r = bundle.records[i];
    const bool sparse = loader.looked_up(i);
    slice(dma && is_data(r) ? Track::kDma : Track::kLoader, int64_t(done[i]) - loader.load_cycles(bundle, i),
          int64_t(done[i]), log.intern((sparse ? "SparseCore lookup " : "") + record_name(r, pc)));
  }
  slice(Track::kLoader, int64_t(start) - 2, int64_t(start) - 1, log.name("END"));
  slice(Track::kLoader, int64_t(start) - 1, int64_t(start), log.name("start"));
}

// The DMA loader's data records: when each VMEM entry, the MXU's data and all of them are in.
void note_arrivals(TensorCore& tc, const Bundle& bundle, const std::vector<uint64_t>& done) {
  for (size_t i = 0; i < bundle.records.size(); ++i) {
    const Record& r = bundle.records[i];
    if (!is_data(r)) continue;
    if (r.type == RecordType::kVmemTile)
      tc.vmem_arrival[tc.vmem.wrap(r.addr)] = std::max(tc.vmem_arrival[tc.vmem.wrap(r.addr)], done[i]);
    else
      tc.mxu_data_arrival = std::max(tc.mxu_data_arrival, done[i]);
    tc.data_arrival = std::max(tc.data_arrival, done[i]);
  }
}

// The testbench's state in one cycle: an output line (its address given) or a state that coalesces.
void trace_testbench(TraceLog& log, uint64_t cycle, const char* phase, int out_addr = -1) {
  if (out_addr < 0)
    log.state(Track::kLoader, 0, cycle, log.name(phase));
  else
    log.slice(Track::kLoader, 0, cycle, cycle + 1, log.name(phase, out_addr));
}

// The testbench from start to the final print. Instantiated with and without tracing, so that a run
// without a trace has no trace code in its per-cycle path. Not inlined: inlining both instantiations
// into run_bundle made the untraced loop 4 instructions per cycle longer (callgrind).
template <bool kTraced>
[[gnu::noinline]] void run_cycles(TensorCore& tc, const TensorCoreConfig& cfg, Loader& loader, bool out_mxu,
                                  const std::vector<int>& vmem_out, const std::vector<int>& asram_out,
                                  RunResult& res, const Poll& poll) {
  bool outputting = false;
  size_t vi = 0, ai = 0;
  // The run ends when the loader is done with the last output line (the DMA engine's write to HBM)
  uint64_t written = 0;
  auto write = [&](RecordType type) { written = std::max(written, loader.output(type, tc.cycle)); };
  // One comparison per cycle covers both the timeout and the next poll.
  auto next_check = [&] { return poll ? std::min(cfg.max_cycles, tc.cycle + kPollCycles) : cfg.max_cycles; };
  uint64_t check_at = next_check();
  for (;;) {
    if (tc.cycle > check_at) {
      if (tc.cycle > cfg.max_cycles)
        tc.fail("no HALT after " + std::to_string(cfg.max_cycles) +
                " cycles (the reference testbench times out)");
      poll();
      check_at = next_check();
    }
    // Testbench rules read start-of-cycle state, like every other rule.
    if (!outputting) {
      outputting = tc.sxu.halted() && tc.cycle >= tc.data_arrival;  // do_running_done
      if (outputting) res.output_start = tc.cycle;
      if constexpr (kTraced) trace_testbench(*tc.trace, tc.cycle, outputting ? "running done" : "run");
    } else if (out_mxu) {
      if (tc.ctrl.state == CState::kIdle)
        throw SimError("OUTPUT_MXU but no MXU dispatch ran: the reference hangs");
      if (tc.ctrl.is_done()) {
        res.mxu_result = tc.ctrl.output_buf;
        out_mxu = false;
        write(RecordType::kOutputMxu);
      }
      if constexpr (kTraced)
        trace_testbench(*tc.trace, tc.cycle, out_mxu ? "OUTPUT_MXU (waits for the MXU)" : "OUTPUT_MXU");
    } else if (vi < vmem_out.size()) {
      if constexpr (kTraced) trace_testbench(*tc.trace, tc.cycle, "OUTPUT_VMEM VMEM", vmem_out[vi]);
      res.vmem_results.push_back(tc.vmem.mem[vmem_out[vi++]]);
      write(RecordType::kOutputVmem);
    } else if (ai < asram_out.size()) {
      if constexpr (kTraced) trace_testbench(*tc.trace, tc.cycle, "OUTPUT_ASRAM AMEM", asram_out[ai]);
      if (tc.ctrl.active() && tc.ctrl.requant_active) tc.mxu_overlapped = true;  // its drain writes ASRAM
      const I8Row& a = tc.asram.mem[asram_out[ai++]];
      res.asram_results.emplace_back();
      std::copy(a.begin(), a.end(), res.asram_results.back().begin());
      write(RecordType::kOutputAsram);
    } else if (tc.cycle < written) {  // the DMA engine's writes drain
      if constexpr (kTraced) trace_testbench(*tc.trace, tc.cycle, "HBM writes");
    } else {
      break;  // do_output_done prints `cycles N` in this cycle
    }
    if constexpr (!kTraced) {
      if (tc.run_instruction_alone(check_at)) continue;
    }
    tc.tick<kTraced>();
    if constexpr (!kTraced) {  // a trace shows every cycle; without one, a wait for the VPU goes at once
      const uint64_t wait = tc.vpu_wait_ahead();
      if (wait > 0 && tc.cycle < check_at) tc.skip_vpu_wait(std::min(wait, check_at - tc.cycle));
    }
  }
}

}  // namespace

RunResult run_bundle(const Bundle& bundle, const TensorCoreConfig& cfg, TraceLog* trace, const Poll& poll) {
  cfg.check();
  validate(bundle, cfg);
  return run_validated(bundle, {}, cfg, trace, poll);
}

RunResult run_validated(const Bundle& bundle, const Fill& fill, const TensorCoreConfig& cfg, TraceLog* trace,
                        const Poll& poll, const LaunchLoad& launch) {
  if (trace && !trace->recording()) {  // past the trace's cap or cycle window, or paused: the fast path
    RunResult res = run_validated(bundle, fill, cfg, nullptr, poll, launch);
    trace->skip(res.cycles);
    return res;
  }
  TensorCore tc(cfg);
  tc.trace = trace;
  bool out_mxu = false;
  std::vector<int> vmem_out, asram_out;
  load(tc, bundle, out_mxu, vmem_out, asram_out);
  if (fill) fill(tc);
  RunResult res;
  LaunchLoader loader(cfg, launch);
  std::vector<uint64_t> done;  // per record, only when something reads it: no allocation otherwise
  const uint64_t start = loader->load(bundle, cfg.dma_overlap || trace ? &done : nullptr);
  if (cfg.dma_overlap) note_arrivals(tc, bundle, done);
  if (trace) {
    trace->begin_run();
    trace_loading(*trace, bundle, done, *loader, start, cfg);
  }
  res.start = start - 1;
  res.loader_done = std::max(res.start, tc.data_arrival);
  tc.cycle = res.start;  // do_start
  tc.sxu.start();
  ++tc.cycle;

  if (trace) {
    try {
      run_cycles<true>(tc, cfg, *loader, out_mxu, vmem_out, asram_out, res, poll);
    } catch (...) {
      trace->end_run(tc.cycle);  // the trace keeps the run up to the error: where a hang sits
      throw;
    }
  } else {
    run_cycles<false>(tc, cfg, *loader, out_mxu, vmem_out, asram_out, res, poll);
  }
  res.cycles = tc.cycle;
  res.hbm_bytes = loader->hbm_bytes();
  res.sc_lookups = loader->sc_lookups();
  res.sxu_cycles = tc.sxu.cycles;
  res.mxu_overlapped = tc.mxu_overlapped;
  res.busy = {tc.sxu.cycles, tc.ctrl.busy_cycles, tc.vpu.busy_cycles, tc.xlu_busy_cycles,
              tc.sxu.stall_cycles};
  if (trace) trace->end_run(res.cycles);
  return res;
}

bool computes_in_order(const Bundle& bundle) {
  for (const Record& r : bundle.records) {
    if (r.type != RecordType::kInstr) continue;
    const Instr& i = r.instr;
    if (i.op >= kNumSxuOps) return false;
    const SxuOpInfo& row = kSxuOps[i.op];
    const bool background_vpu = row.alone == SxuAlone::kCombVpu && row.timing != SxuTiming::kVpu;
    if (row.reads_data || (background_vpu && !Sxu::runs_alone(i))) return false;
  }
  return true;
}

namespace {

bool uses_mxu(const Bundle& bundle) {
  return std::any_of(bundle.records.begin(), bundle.records.end(), [](const Record& r) {
    return r.type == RecordType::kInstr && r.instr.op < kNumSxuOps && kSxuOps[r.instr.op].waits_for_mxu;
  });
}

}  // namespace

BatchRunner::BatchRunner(const Bundle& bundle, const TensorCoreConfig& cfg)
    : loaded_(std::make_unique<TensorCore>(cfg)) {
  load(*loaded_, bundle, out_mxu_, vmem_out_, asram_out_);
  mxu_state_ = uses_mxu(bundle) || !asram_out_.empty();
}
BatchRunner::~BatchRunner() = default;

void BatchRunner::start(BatchDatapath& b, int launches, const std::vector<int>& filled) const {
  const TensorCore& tc = *loaded_;
  b.set_launches(launches);
  for (int r = 0; r < tc.cfg.vregs; ++r) b.vrf[r] = tc.vrf.v[r];
  std::bitset<TensorCoreConfig::kMaxDepth> skip;
  for (int a : filled) skip[size_t(tc.vmem.wrap(a))] = true;
  for (int a = 0; a < tc.cfg.depth; ++a)
    if (!skip[size_t(a)]) b.vmem.mem[a] = tc.vmem.mem[a];
  for (int k = 0; k < tc.cfg.psum_buckets; ++k) b.psum.mem[k] = tc.psum.mem[k];
  b.vmem.resp = tc.vmem.resp;
  b.psum.resp = tc.psum.resp;
  b.vpu.result = tc.vpu.result;
  b.xlu.result = tc.xlu.result;
  if (!mxu_state_) return;  // its records may fill the MXU's memories, which nothing reads
  b.ctrl.state = tc.ctrl.state;
  b.ctrl.epilogue_active = tc.ctrl.epilogue_active;
  b.ctrl.epi = tc.ctrl.epi;
  b.ctrl.scale_mul = tc.ctrl.scale_mul;
  b.ctrl.scale_shift = tc.ctrl.scale_shift;
  for (int l = 0; l < launches; ++l) b.mxu(l) = {tc.wsram, tc.asram, tc.array, tc.ctrl};
}

void BatchRunner::run(BatchDatapath& b, const Poll& poll) const {
  Sxu sxu = loaded_->sxu;
  sxu.start();
  b.cycle = 0;
  const uint64_t limit = b.cfg.max_cycles;
  // The launches' cycles, not the batch's, between polls: a batch's cycle costs as much host time as theirs
  const uint64_t poll_every = std::max<uint64_t>(1, kPollCycles / uint64_t(b.launches()));
  auto next_check = [&] { return poll ? std::min(limit, b.cycle + poll_every) : limit; };
  uint64_t check_at = next_check();
  for (;;) {
    if (!sxu.loaded[sxu.pc])  // the ticked run of the same program halted: only an internal error gets here
      sxu.fail(b, "internal error: a batch fetched from program memory the bundle never wrote");
    if (SxuOpcode(sxu.prog[sxu.pc].op) == SxuOpcode::kHalt) break;
    sxu.run_whole(b);
    if (b.cycle > check_at) {
      if (b.cycle > limit)
        sxu.fail(b, "no HALT after " + std::to_string(limit) + " cycles of running in order");
      poll();
      check_at = next_check();
    }
  }
}

void BatchRunner::results(BatchDatapath& b, int launch, RunResult& res) const {
  res.vmem_results.resize(vmem_out_.size());
  for (size_t k = 0; k < vmem_out_.size(); ++k) res.vmem_results[k] = b.vmem.mem[vmem_out_[k]][launch];
  more_results(b, launch, res);
}

void BatchRunner::more_results(BatchDatapath& b, int launch, RunResult& res) const {
  if (out_mxu_) {  // the testbench waits for the MXU: the last dispatch's result
    res.mxu_result = b.mxu(launch).ctrl.output_buf;
  }
  res.asram_results.clear();
  for (int a : asram_out_) {
    const I8Row& row = b.mxu(launch).asram.mem[a];
    res.asram_results.emplace_back();
    std::copy(row.begin(), row.end(), res.asram_results.back().begin());
  }
}

std::string RunResult::output() const {
  std::ostringstream out;
  auto line = [&](const char* tag, const auto& values, int n) {
    out << tag;
    for (int k = 0; k < n; ++k) out << ' ' << values[k];
    out << '\n';
  };
  if (mxu_result) line("mxu_result", *mxu_result, kRows);
  for (const Tile& t : vmem_results) line("vmem_result", t, kTileElems);
  for (const Row& r : asram_results) line("asram_result", r, kRows);
  out << "cycles " << cycles << "\nstatus ok\n";
  return out.str();
}

}  // namespace tinytpu
