// The DMA engine and HBM beneath a chip configuration's core (config.h hbm_channels, sim/dma_engine.h): each
// expected cycle is derived from the definition there, a channel's request a cycle and HBMModel's read
// latency (hardware.md §6: readReq at T, readResp valid at T+latency).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "compiler/tracer.h"
#include "helpers.h"
#include "runtime/executor.h"
#include "sim/dma_engine.h"

using namespace tinytpu;

namespace {

TensorCoreConfig hbm(int channels, int bytes_per_cycle, int latency) {
  TensorCoreConfig c;
  c.hbm_channels = channels;
  c.hbm_bytes_per_cycle = bytes_per_cycle;
  c.hbm_latency = latency;
  return c;
}

// add_16 (hardware.md §4.4): 2 VMEM tiles, LOAD, LOAD, ADD, STORE, HALT, one OUTPUT_VMEM; P = 12.
const char* kAdd16 =
    "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nVMEM[1] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"
    "LOAD v0, VMEM[0]\nLOAD v1, VMEM[1]\nVPU v2 = ADD(v0, v1)\nSTORE VMEM[2], v2\nHALT\nOUTPUT_VMEM "
    "VMEM[2]\nEND\n";

}  // namespace

TEST_CASE("DMA engine: transfers go round-robin over the channels, a request a cycle, reads a latency late") {
  DmaEngine dma(hbm(2, 16, 3));
  // a 64-byte read is 4 requests: channel 0 from cycle 1, its last request in 4, the data at 4 + 3, visible
  // in 8
  CHECK(dma.read(64, 1) == 1 + 4 + 3);
  CHECK(dma.read(64, 2) == 2 + 4 + 3);   // channel 1, in parallel
  CHECK(dma.read(8, 3) == 5 + 1 + 3);    // channel 0 again: queued behind the first read until cycle 5
  CHECK(dma.write(64, 10) == 10 + 4);    // channel 1: a write is done with its last request
  CHECK(dma.read(4, 11) == 11 + 1 + 3);  // channel 0, idle since 6; a part-request still takes a cycle
  CHECK(dma.bytes == 64 + 64 + 8 + 64 + 4);
}

TEST_CASE(
    "DMA engine: with shared HBM a core's request holds its channel a cycle for each of the chip's cores") {
  TensorCoreConfig c = hbm(2, 16, 3);
  c.cores = 4;
  c.hbm_shared = true;
  DmaEngine dma(c);
  // a 64-byte read is 4 requests, each holding channel 0 for 4 cycles (its slot and the 3 other cores'):
  // from cycle 1 to 16, the data 3 later, visible in 20
  CHECK(dma.read(64, 1) == 1 + 4 * 4 + 3);
  CHECK(dma.read(64, 2) == 2 + 4 * 4 + 3);  // channel 1, in parallel
  CHECK(dma.read(8, 3) == 17 + 4 + 3);      // channel 0 again: queued until cycle 17
  CHECK(dma.read_cycles(32) == 2 * 4 + 3);
  CHECK(dma.write(16, 40) == 40 + 4);  // channel 1: done with its one request's slots
  // one core has the channels to itself: shared or not, the same
  TensorCoreConfig lone = hbm(1, 16, 3);
  lone.hbm_shared = true;
  CHECK(DmaEngine(lone).read(64, 1) == DmaEngine(hbm(1, 16, 3)).read(64, 1));
}

TEST_CASE("shared HBM needs HBM") {
  TensorCoreConfig c;
  c.cores = 4;
  c.hbm_shared = true;
  CHECK_THROWS_WITH(c.check(), Catch::Contains("hbm_shared = 1 needs HBM"));
}

TEST_CASE("DMA engine: a prefetched read never takes a channel in the previous launch's write cycles") {
  DmaEngine dma(hbm(1, 16, 3), 5);     // the last 5 cycles before cycle 0 are the previous launch's writes
  CHECK(dma.read(16, -10) == -9 + 3);  // cycle -10 alone: before the writes
  CHECK(dma.read(64, -8) == 4 + 3);    // cycles -8..-5 would reach into -5: it waits for cycle 0
  CHECK(dma.read(16, -7) == 5 + 3);    // queued behind it
  DmaEngine fits(hbm(1, 16, 3), 5);
  CHECK(fits.read(64, -9) == -5 + 3);  // cycles -9..-6: done just before the writes
}

TEST_CASE("a core fed from HBM: the records come by the DMA engine, the output lines go back by it") {
  const RunResult ref = test::run(kAdd16);
  REQUIRE(ref.cycles == 33);  // 2R + P + M + 4
  // One channel of 16 bytes a cycle, latency 3; the records in bundle order, requested from cycle 1: the two
  // VMEM tiles take 4 cycles each (1-4, 5-8), the five instructions and the output request one each (9-14);
  // the last is visible at 14 + 1 + 3 = 18. END and do_start (18, 19), the first FETCH in 20, P = 12 to
  // HALT's FETCH in 31, running done in 32, the output line in 33, its 64-byte write in 33-36: done in 37.
  const RunResult r = test::run(kAdd16, hbm(1, 16, 3));
  CHECK(r.vmem_results == ref.vmem_results);
  CHECK(r.sxu_cycles == ref.sxu_cycles);
  CHECK(r.start == 19);
  CHECK(r.output_start == 32);
  CHECK(r.cycles == 37);
  CHECK(r.hbm_bytes == 2 * 64 + 5 * 8 + 4 + 64);
  // A channel of 64 bytes moves every record in one cycle: the requests go in 1..8, the last visible in
  // 8 + 1 + 3 = 12; the first FETCH in 14, HALT's in 25, running done 26, the output line and its write
  // in 27.
  const RunResult wide = test::run(kAdd16, hbm(1, 64, 3));
  CHECK(wide.cycles == 28);
  // Two channels of 16 bytes: the tiles in parallel (1-4 and 2-5), the rest alternating from cycle 5 on
  // channel 0 and 6 on channel 1: the output request, the last, goes on channel 1 in cycle 8, visible in 12.
  CHECK(test::run(kAdd16, hbm(2, 16, 3)).cycles == 28 + 3);  // and the 64-byte write takes 4 cycles, not 1
  // Output lines of two sizes on two channels: the VMEM tile's line the cycle after running done, its write
  // on channel 0 for 4 cycles; the ActivationSRAM row's line next, its 4 bytes on channel 1 in one. The run
  // ends with the longer write, not the last.
  std::string two = kAdd16;
  two.insert(0, "AMEM[0] = 1 2 3 4\n");
  two.insert(two.find("END"), "OUTPUT_ASRAM ASRAM[0]\n");
  const RunResult mixed = test::run(two, hbm(2, 16, 3));
  CHECK(mixed.asram_results.size() == 1);
  CHECK(mixed.cycles == mixed.output_start + 1 + 4);
}

TEST_CASE(
    "a prefetched launch from HBM waits for the previous launch's writes, then loads as if not prefetched") {
  const Bundle b = assemble(kAdd16);
  const TensorCoreConfig cfg = hbm(1, 16, 3);
  const RunResult alone = run_validated(b, {}, cfg);
  // Begun 100 cycles early with the last 100 taken by writes: every read waits for cycle 0, one cycle before
  // the first request of a launch not prefetched (cycle 1), and the run is that much shorter.
  CHECK(run_validated(b, {}, cfg, nullptr, {}, {100, false, 100}).cycles == alone.cycles - 1);
  // With no writes in the way, everything is in before cycle 0: do_start in 0, the first FETCH in 1.
  const RunResult early = run_validated(b, {}, cfg, nullptr, {}, {100, false, 0});
  CHECK(early.start == 0);
  CHECK(early.cycles == 1 + 12 + 1 + 4);  // P, running done, the output line's write
  CHECK(early.vmem_results == alone.vmem_results);
}

TEST_CASE("an add streamed from HBM: exact, every byte counted, no faster than the channels allow") {
  // out[i] = a[i] + b[i] over 16384 int32 elements on the `hbm` configuration (one channel of 16 bytes a
  // cycle)
  const std::string ir =
      "KERNEL add\nCONST idx 0 16384\nPARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\nPARAM i32 1 0 "
      "2 "
      "GLOBAL 0 0\nRANGE i32 1 0 0 WEAK\nINDEX i32 2 2 4\nLOAD i32 1 5\nINDEX i32 2 3 4\nLOAD i32 1 7\nADD "
      "i32 "
      "2 6 8\nINDEX i32 2 1 4\nSTORE void 2 10 9\nEND void 2 11 4\nSINK void 1 12\n";
  const int n = 16384;
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
  for (int i = 0; i < n; ++i) {
    const int32_t a = i * 7, b = 3 - i;
    std::memcpy(bufs[1].data() + 4 * i, &a, 4);
    std::memcpy(bufs[2].data() + 4 * i, &b, 4);
  }
  const TensorCoreConfig cfg = config_from_spec("hbm");
  RunMode verify;
  verify.verify = true;  // every launch run in order is ticked as well and compared
  CoreState core;        // keeps the resident programs
  const KernelStats stats = CompiledKernel(ir, cfg).run(bufs, {}, false, nullptr, {}, &core, verify);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    wrong += out != i * 7 + 3 - i;
  }
  CHECK(wrong == 0);
  CoreState ticked_core;
  const KernelStats ticked =
      CompiledKernel(ir, cfg).run(bufs, {}, false, nullptr, {}, &ticked_core, RunMode{false});
  CHECK(ticked.cycles == stats.cycles);
  // the data, both ways, and the first launch's program and output list (resident after it)
  CHECK(stats.hbm_bytes >= uint64_t(3 * n * 4));
  CHECK(stats.hbm_bytes < uint64_t(3 * n * 4 + 1024));
  CHECK(stats.cycles * cfg.hbm_channels * cfg.hbm_bytes_per_cycle >= stats.hbm_bytes);
}

TEST_CASE("SparseCore lookups: one bag at a time, its row read from HBM, in VMEM two cycles after the data") {
  TensorCoreConfig cfg = hbm(1, 16, 3);
  cfg.sparse_core = true;
  SparseCoreLookups sparse(cfg);
  // submitted at 1: requests in 2..5, the data at 5 + 3, done the cycle after (9), in VMEM at 10
  CHECK(sparse.would_look_up(64, 1) == 1 + 4 + 3 + 2);
  CHECK(sparse.look_up(64, 1) == 10);
  CHECK(sparse.look_up(64, 2) == 10 + 9);  // the next bag is submitted once the row is in
  CHECK((sparse.lookups == 2 && sparse.bytes == 128));
}

TEST_CASE(
    "with a SparseCore the loader hands a table row to it when it has the row in sooner than a channel") {
  // Four VMEM tiles, all table rows, then HALT and one output request, on one channel of 16 B a cycle.
  const Bundle b = assemble(
      "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nVMEM[1] = 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
      "VMEM[2] = 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nVMEM[3] = 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nHALT\n"
      "OUTPUT_VMEM VMEM[0]\nEND\n");
  TensorCoreConfig cfg = hbm(1, 16, 3);
  const std::vector<bool> rows(4, true);
  // No SparseCore: the tiles on the channel in 1-4, 5-8, 9-12, 13-16, visible at 8, 12, 16, 20; HALT in 17
  // (21), the output request in 18 (22). The first FETCH at 24 is HALT's, running done 25, the line 26, its
  // write to 30.
  const RunResult dma_only = run_validated(b, {}, cfg, nullptr, {}, {0, false, 0, &rows});
  CHECK(dma_only.cycles == 30);
  CHECK(dma_only.sc_lookups == 0);
  // With one: row 0 on the channel (in at 8, against the SparseCore's 10); row 1, handed over at 2, the
  // SparseCore has in at 11, the channel (free at 5) at 12: the SparseCore's. Rows 2 and 3 on the channel
  // (12, 16: the SparseCore is busy to 11, then 9 a row), HALT at 17, the output request at 18: the first
  // FETCH at 20, running done 21, the line 22, its write to 26.
  cfg.sparse_core = true;
  const RunResult sparse = run_validated(b, {}, cfg, nullptr, {}, {0, false, 0, &rows});
  CHECK(sparse.cycles == 26);
  CHECK(sparse.sc_lookups == 1);
  CHECK(sparse.hbm_bytes == dma_only.hbm_bytes);  // the SparseCore reads its row from HBM too
  CHECK(sparse.vmem_results == dma_only.vmem_results);
  // traced, the lookup is a slice of its own: handed over at 2, in VMEM at 11
  TraceLog log;
  run_validated(b, {}, cfg, &log, {}, {0, false, 0, &rows});
  const auto& names = log.names();
  const auto lookup = std::find_if(log.events().begin(), log.events().end(), [&](const TraceEvent& e) {
    return names[e.name].rfind("SparseCore lookup VMEM[1]", 0) == 0;
  });
  REQUIRE(lookup != log.events().end());
  CHECK((lookup->begin == 2 && lookup->end == 11));
  TensorCoreConfig no_hbm;
  no_hbm.sparse_core = true;
  CHECK_THROWS_WITH(no_hbm.check(), Catch::Contains("sparse_core = 1 needs HBM"));
}

TEST_CASE("the compiler finds the tables whose rows a launch-time variable picks") {
  // out[i] = table[v * 16 + i] for a scalar variable v: the table's rows are picked by v
  const std::string row_at_v =
      "KERNEL row\nCONST idx 0 16\nPARAM f32 1 0 0 GLOBAL 0 0\nCONST idx 0 64\nPARAM f32 1 2 1 GLOBAL 0 0\n"
      "STACK void 0\nPARAM i32 1 4 2 ALU 0 3\nCONST i32 0 4\nSHL i32 2 5 6\nRANGE i32 1 0 0 WEAK\nADD i32 2 "
      "7 8\n"
      "INDEX f32 2 3 9\nLOAD f32 1 10\nINDEX f32 2 1 8\nSTORE void 2 12 11\nEND void 2 13 8\nSINK void 1 "
      "14\n";
  CHECK(compiler::rows_picked_by_variables(compiler::parse_kernel(row_at_v)) == std::set<int>{1});
  // the same table also read at a fixed index (table[i] + table[v * 16 + i]): not a table of picked rows
  std::string also_fixed = row_at_v;
  also_fixed.replace(also_fixed.find("INDEX f32 2 1 8\n"), std::string::npos,
                     "INDEX f32 2 3 8\nLOAD f32 1 12\nADD f32 2 11 13\nINDEX f32 2 1 8\nSTORE void 2 15 14\n"
                     "END void 2 16 8\nSINK void 1 17\n");
  CHECK(compiler::rows_picked_by_variables(compiler::parse_kernel(also_fixed)).empty());
}
