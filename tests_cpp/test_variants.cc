// TensorCore variants: each micro-architecture switch's timing, derived from its definition in
// sim/config.h, and the named configurations that combine them. A variant changes cycles, never a
// result of a program without a timing race.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "helpers.h"
#include "isa/sxu_ops.h"
#include "runtime/executor.h"

using namespace tinytpu;
using Catch::Matchers::Contains;
using test::sxu_cycles;
namespace fs = std::filesystem;

namespace {

const char* kData =
    "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
    "WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n"
    "AMEM[0] = 1 2 3 4\n";

TensorCoreConfig overlap() { return config_from_spec("overlap"); }

}  // namespace

TEST_CASE("fetch overlap: an instruction costs its EXEC cycles, and HALT and sequential FETCHes are free") {
  // Reference: P = sum(1 + EXEC) + 1 for HALT. Overlapped: the first FETCH, then each instruction's EXEC
  // cycles, HALT fetched in the last EXEC cycle of the instruction before it.
  struct Case {
    const char* program;
    uint64_t reference, overlapped;
  } cases[] = {
      {"", 1, 1},                                                    // HALT alone: its FETCH
      {"LOAD v1, VMEM[0]", 3 + 1, 1 + 2},                            // REQ, RESP
      {"VPU v1 = ADD(v0, v0)", 3 + 1, 1 + 2},                        // dispatch, collect
      {"VPU v1 = EXP2(v0)", 116 + 1, 1 + 115},                       // TranscUnit: 16*7+3 EXEC cycles
      {"SELECT v3 = SELECT(v0, v1, v2)", 4 + 1, 1 + 3},              //
      {"VZERO v1\nVZERO v2\nVZERO v3\nVZERO v4", 4 * 2 + 1, 1 + 4},  // one instruction per cycle
      {"PSUM_READ v1, PSUM[1]", 3 + 1, 1 + 2},                       //
      // DISPATCH then WAIT: the wait ends when Done is visible, at the same time either way; only
      // HALT's FETCH is saved.
      {"MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU", 11 + 1, 11},
      {"MXU_OS WMEM[0], AMEM[0], k=4\nWAIT_MXU", 21 + 1, 21},
      // a taken loop branch refetches: LOOP_BEGIN 1, then per iteration VZERO 1 and LOOP_END 1 plus the
      // FETCH of the branch target (none after the last iteration, which falls through)
      {"LOOP_BEGIN count=5\nVZERO v1\nLOOP_END", 2 + 5 * 4 + 1, 1 + 1 + 5 * 2 + 4},
  };
  for (const Case& c : cases) {
    INFO(c.program);
    const std::string program = std::string(kData) + c.program;
    CHECK(sxu_cycles(program) == c.reference);
    CHECK(sxu_cycles(program, overlap()) == c.overlapped);
  }
}

TEST_CASE("fetch overlap forwards XLU results to the next instruction") {
  const std::string p =
      std::string(kData) +
      "LOAD v0, VMEM[0]\nBROADCAST_SCALAR v1 = v0[2, 3]\nSTORE VMEM[2], v1\n"
      "ROTATE v2, v0, amount=1\nSTORE VMEM[3], v2\nTRANSPOSE v3, v0\nSTORE VMEM[4], v3\nHALT\n"
      "OUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nOUTPUT_VMEM VMEM[4]\nEND";
  RunResult ref = test::run(p), fast = test::run(p, overlap());
  CHECK(fast.vmem_results == ref.vmem_results);
  CHECK(ref.sxu_cycles == 3 + 3 * (2 + 2) + 1);
  CHECK(fast.sxu_cycles == 1 + 2 + 3 * (1 + 1));
}

TEST_CASE("a VPU_BG write-back still stalls a reader until it retires, overlapped or not") {
  // FSUM_REDUCE_TILE dispatched at T retires at T+17 (§2.4); the STORE of its destination waits for it.
  const std::string p =
      "VMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\nLOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\n"
      "STORE VMEM[1], v1\nHALT\nOUTPUT_VMEM VMEM[1]\nEND";
  RunResult ref = test::run(p), fast = test::run(p, overlap());
  CHECK(fast.vmem_results == ref.vmem_results);
  CHECK(ref.vmem_results[0][0] == 16);  // 16 denormal ones
  // The STORE of the destination waits for the write-back at T+17 either way, its FETCH hidden in the
  // wait; overlapping saves the VPU_BG's FETCH (in the LOAD's last cycle) and HALT's.
  CHECK(ref.sxu_cycles - fast.sxu_cycles == 2);
}

TEST_CASE("one-beat loader: cycles = R + P + M + 4") {
  const std::string p =
      std::string(kData) + "LOAD v1, VMEM[0]\nSTORE VMEM[5], v1\nHALT\nOUTPUT_VMEM VMEM[5]\nEND";
  const uint64_t R = 3 + 3 + 1, P = 3 + 2 + 1, M = 1;
  CHECK(test::run(p).cycles == 2 * R + P + M + 4);
  CHECK(test::run(p, config_from_spec("beat")).cycles == R + P + M + 4);
  RunResult both = test::run(p, config_from_spec("overlap-beat"));
  CHECK(both.sxu_cycles == 1 + 2 + 1);
  CHECK(both.cycles == R + both.sxu_cycles + M + 4);
  CHECK(both.vmem_results == test::run(p).vmem_results);
}

TEST_CASE("named configurations: the reference first and exact, and specs change fields by name") {
  const auto& all = named_configs();
  REQUIRE(all.size() >= 4);
  CHECK(all[0].name == "reference");
  CHECK(all[0].config.describe() == TensorCoreConfig{}.describe());
  for (const NamedConfig& n : all) {
    INFO(n.name);
    CHECK_NOTHROW(n.config.check());
    CHECK(!n.change.empty());
    CHECK(config_from_spec(n.name).describe() == n.config.describe());
  }
  TensorCoreConfig c = config_from_spec("overlap,depth=16,vregs=8");
  CHECK(c.fetch_overlap);
  CHECK(c.depth == 16);
  CHECK(c.vregs == 8);
  CHECK_THROWS_WITH(config_from_spec("wide"),
                    Contains("no TensorCore configuration named 'wide'") && Contains("reference"));
  CHECK_THROWS_WITH(config_from_spec("reference,speed=3"), Contains("no field 'speed'"));
  CHECK_THROWS_WITH(config_from_spec("reference,depth"), Contains("'depth' is not field=integer"));
  // a number past int's range once read as 0 ("depth = 0: must be a power of two")
  CHECK_THROWS_WITH(config_from_spec("reference,depth=99999999999999999999"),
                    Contains("'depth=99999999999999999999' is not field=integer"));
  CHECK_THROWS_WITH(config_from_spec("reference,depth=8x"), Contains("'depth=8x' is not field=integer"));
  CHECK_THROWS_WITH(config_from_spec("reference,depth=24"), Contains("depth = 24"));
  CHECK_THROWS_WITH(config_from_spec("reference,record_cycles=3"), Contains("record_cycles = 3"));
  CHECK_THROWS_WITH(config_from_spec("reference,fetch_overlap=2"),
                    Contains("fetch_overlap = 2: must be 0 or 1"));
}

TEST_CASE("cost proxy: PEs, SRAM bytes, ports and one area figure") {
  const CostProxy ref = cost_proxy({});
  CHECK(ref.pes == 16);
  // VMEM 32x64, WeightSRAM 2x32x16, ActivationSRAM 2x32x4, 16 vregs and 8 PSUM tiles of 64, 256x8 program
  CHECK(ref.sram_bytes == 32 * 64 + 2 * 32 * 16 + 2 * 32 * 4 + (16 + 8) * 64 + 256 * 8);
  CHECK(ref.ports == 0);
  CHECK(ref.area == Approx(16 + ref.sram_bytes / 256.0));
  const CostProxy both = cost_proxy(config_from_spec("overlap-beat"));
  CHECK(both.ports == 3);
  CHECK(both.area == Approx(ref.area + 3));
  CHECK(cost_proxy(config_from_spec("half")).sram_bytes < ref.sram_bytes);
}

TEST_CASE("every recorded reference program gives the reference's outputs on every variant") {
  // Programs whose outputs depend on timing are left out: READ_CYCLE reads the clock, and the bg_*
  // programs race a main-FSM write against a VPU write-back on purpose. The compiler emits neither.
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/reference")) {
    if (entry.path().extension() != ".bundle") continue;
    const std::string text = test::read_file(entry.path());
    const std::string name = entry.path().filename().string();
    if (name.rfind("bg_", 0) == 0) continue;
    const Bundle bundle = parse_wire(text);
    bool reads_clock = false;
    for (const Record& r : bundle.records)
      reads_clock |= r.type == RecordType::kInstr && SxuOpcode(r.instr.op) == SxuOpcode::kReadCycle;
    if (reads_clock) continue;
    const RunResult ref = run_bundle(bundle);
    for (const NamedConfig& n : named_configs()) {
      if (n.config.depth < TensorCoreConfig{}.depth || n.config.vregs < TensorCoreConfig{}.vregs) continue;
      INFO(name << " on " << n.name);
      const RunResult v = run_bundle(bundle, n.config);
      CHECK(v.vmem_results == ref.vmem_results);
      CHECK(v.mxu_result == ref.mxu_result);
      CHECK(v.asram_results == ref.asram_results);
      CHECK(v.cycles <= ref.cycles);
    }
    ++checked;
  }
  CHECK(checked >= 25);  // of 49: 3 bg_* races, 19 read the clock
}

TEST_CASE("DMA loader: the SXU starts after the program, and data records arrive while it runs") {
  const TensorCoreConfig dma = config_from_spec("dma");
  // H header records (program and outputs) at one cycle each: cycles = H + P + M + 4 when nothing waits.
  const std::string add =
      "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nVMEM[1] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"
      "LOAD v0, VMEM[0]\nLOAD v1, VMEM[1]\nVPU v2 = ADD(v0, v1)\nSTORE VMEM[2], v2\nHALT\nOUTPUT_VMEM "
      "VMEM[2]\nEND";
  RunResult ref = test::run(add), fast = test::run(add, dma);
  CHECK(fast.vmem_results == ref.vmem_results);
  CHECK(ref.cycles == 2 * 8 + 12 + 1 + 4);
  // header done at cycle 1 + 6, first FETCH at 9; the data records are in at 8 and 9, before the first
  // LOAD's EXEC at 10
  CHECK(fast.sxu_cycles == ref.sxu_cycles);
  CHECK(fast.cycles == 6 + 12 + 1 + 4);

  // A LOAD of the last of six data records waits for it: header (3 instructions, 1 output) done at 5,
  // first FETCH at 7, data in at 6..11; the LOAD's EXEC waits from 8 to 11, 3 cycles.
  std::string late;
  for (int k = 0; k < 6; ++k)
    late += "VMEM[" + std::to_string(k) + "] = " + std::to_string(k) + " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  late += "LOAD v0, VMEM[5]\nSTORE VMEM[6], v0\nHALT\nOUTPUT_VMEM VMEM[6]\nEND";
  ref = test::run(late);
  fast = test::run(late, dma);
  CHECK(fast.vmem_results == ref.vmem_results);
  CHECK(fast.vmem_results[0][0] == 5);
  CHECK(fast.sxu_cycles == 3 + 2 + 1 + 3);
  CHECK(fast.cycles == 4 + fast.sxu_cycles + 1 + 4);

  // A STORE to an entry whose record is still coming waits for it, so the record cannot overwrite it.
  std::string waw = late;
  waw.replace(waw.find("LOAD v0, VMEM[5]\nSTORE VMEM[6], v0"), 34, "VFILL v0, imm=9\nSTORE VMEM[5], v0");
  waw.replace(waw.find("OUTPUT_VMEM VMEM[6]"), 19, "OUTPUT_VMEM VMEM[5]");
  CHECK(test::run(waw, dma).vmem_results == test::run(waw).vmem_results);
  CHECK(test::run(waw, dma).vmem_results[0][0] == 9);

  // The outputs wait for every record: ten data records, HALT and one output. Header done at 3, HALT's
  // FETCH at 5, the last record in at 13: running-done at 13, the output line at 14, `cycles 15`.
  std::string tail;
  for (int k = 0; k < 10; ++k)
    tail += "VMEM[" + std::to_string(k) + "] = " + std::to_string(k) + " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  tail += "HALT\nOUTPUT_VMEM VMEM[9]\nEND";
  fast = test::run(tail, dma);
  CHECK(fast.vmem_results == test::run(tail).vmem_results);
  CHECK(fast.cycles == 15);
}

TEST_CASE("DMA loader: an MXU dispatch waits for every WeightSRAM and ActivationSRAM record") {
  // Records: VMEM[0], WMEM[0], AMEM[0] data; MXU + WAIT + LOAD_MXU_RESULT + STORE + HALT and an output.
  // Header (5 instructions, 1 output) done at 7, first FETCH at 9; the data in at 8, 9, 10: the
  // dispatch's EXEC at 10 goes (AMEM[0] is in at 10).
  const std::string p =
      std::string(kData) +
      "MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU\nLOAD_MXU_RESULT v1\nSTORE VMEM[1], v1\nHALT\n"
      "OUTPUT_VMEM VMEM[1]\nEND";
  RunResult ref = test::run(p), fast = test::run(p, config_from_spec("dma"));
  CHECK(fast.vmem_results == ref.vmem_results);
  CHECK(fast.sxu_cycles == ref.sxu_cycles);
  CHECK(fast.cycles == 6 + ref.sxu_cycles + 1 + 4);
  // One more data record ahead of them delays the dispatch by one cycle.
  RunResult later = test::run("VMEM[5] = 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" + p, config_from_spec("dma"));
  CHECK(later.sxu_cycles == ref.sxu_cycles + 1);
  CHECK(later.vmem_results == ref.vmem_results);
}

TEST_CASE("launch prefetch: each launch's records load while the one before runs") {
  // out[i] = a[i] + 1 over 4096 elements: launches that read nothing an earlier launch output.
  const std::string ir =
      "KERNEL inc\nCONST idx 0 4096\nPARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\nRANGE i32 1 0 0 "
      "WEAK\nINDEX i32 2 2 3\nLOAD i32 1 4\nCONST i32 0 1\nADD i32 2 5 6\nINDEX i32 2 1 3\nSTORE void 2 8 "
      "7\nEND void 2 9 3\nSINK void 1 10\n";
  auto run = [&](const TensorCoreConfig& cfg, KernelStats& stats) {
    std::vector<DeviceBuffer> bufs{DeviceBuffer(4096 * 4), DeviceBuffer(4096 * 4)};
    for (int i = 0; i < 4096; ++i) std::memcpy(bufs[1].data() + 4 * i, &i, 4);
    stats = CompiledKernel(ir, cfg).run(bufs, {}, true);
    int wrong = 0;
    for (int i = 0; i < 4096; ++i) {
      int32_t out;
      std::memcpy(&out, bufs[0].data() + 4 * i, 4);
      wrong += out != i + 1;
    }
    return wrong;
  };
  KernelStats ref, pre;
  CHECK(run({}, ref) == 0);
  CHECK(run(config_from_spec("prefetch"), pre) == 0);
  REQUIRE(ref.launches > 2);
  CHECK(pre.launches == ref.launches);
  CHECK(pre.sxu_cycles == ref.sxu_cycles);
  // The timeline by the definition (config.h), from each launch run alone: loading L = 2R + 2 cycles
  // (open, records, END), then a run of C - L cycles. The next launch's loading begins when the loader
  // and the idle banks are free: after the previous loading and once the launch before started.
  uint64_t end = 0, started = 0, loader_free = 0;
  for (size_t i = 0; i < ref.tasm.size(); ++i) {
    const Bundle b = assemble(ref.tasm[i]);
    const RunResult alone = run_bundle(b);
    const uint64_t loading = 2 * b.records.size() + 2;
    if (i == 0) {
      end = alone.cycles;
      started = loader_free = loading;
      continue;
    }
    const uint64_t begin = std::max(loader_free, started);
    loader_free = begin + loading;
    const uint64_t wait = loader_free > end ? loader_free - end : 0;
    started = end + wait;
    end += wait + alone.cycles - loading;
  }
  CHECK(pre.cycles == end);
  CHECK(pre.cycles < ref.cycles);
}

TEST_CASE("launch prefetch: a launch that reads the one before's output loads after it") {
  // A sum of 4096 elements: each launch adds its part to the partial sum the launch before output, so
  // nothing can load early and the cycles are the reference's.
  std::string ir = test::kSum16Ir;
  ir.replace(ir.find("CONST idx 0 16\n"), 15, "CONST idx 0 4096\n");
  std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(4096 * 4)};
  for (int i = 0; i < 4096; ++i) std::memcpy(bufs[1].data() + 4 * i, &i, 4);
  const KernelStats ref = CompiledKernel(ir).run(bufs, {}, false);
  const KernelStats pre = CompiledKernel(ir, config_from_spec("prefetch")).run(bufs, {}, false);
  int32_t sum;
  std::memcpy(&sum, bufs[0].data(), 4);
  CHECK(sum == 4095 * 4096 / 2);
  REQUIRE(ref.launches > 2);
  CHECK(pre.cycles == ref.cycles);
}

namespace {

// A launch listing's program and output list: its lines but the data records' (VMEM/WMEM/AMEM[a] = ...).
std::string program_of(const std::string& tasm) {
  std::string out, line;
  for (std::istringstream in(tasm); std::getline(in, line);)
    if (line.find("] = ") == std::string::npos || line.find("MEM[") != 1) out += line + "\n";
  return out;
}
// Records the loader sends for a launch whose program is resident: its data records alone.
uint64_t data_records(const Bundle& b) { return std::count_if(b.records.begin(), b.records.end(), is_data); }

}  // namespace

TEST_CASE("resident program: a launch whose program is resident sends only its data records") {
  // One launch: 2 data records, 5 instructions (P = 12), 1 output. The reference: 2R + P + M + 4 = 33;
  // resident: R counts the 2 data records alone; the DMA loader then has no header: H + P + M + 4 = 17.
  const Bundle add = assemble(
      "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nVMEM[1] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"
      "LOAD v0, VMEM[0]\nLOAD v1, VMEM[1]\nVPU v2 = ADD(v0, v1)\nSTORE VMEM[2], v2\nHALT\nOUTPUT_VMEM "
      "VMEM[2]\nEND");
  const RunResult ref = run_bundle(add);
  const RunResult kept = run_validated(add, {}, config_from_spec("resident"), nullptr, {}, {0, true});
  const RunResult dma =
      run_validated(add, {}, config_from_spec("dma,resident_program=1"), nullptr, {}, {0, true});
  CHECK(ref.cycles == 2 * 8 + 12 + 1 + 4);
  CHECK(kept.cycles == 2 * 2 + 12 + 1 + 4);
  CHECK(dma.cycles == 12 + 1 + 4);
  CHECK(kept.vmem_results == ref.vmem_results);
  CHECK(dma.vmem_results == ref.vmem_results);
  Bundle other = add;
  other.records.insert(other.records.begin() + 2, add.records[1]);  // a third data record: the same program
  CHECK(same_program(add, other));
  other = add;
  other.records.pop_back();  // the output list without its last output: another program
  CHECK_FALSE(same_program(add, other));
  other = add;
  other.records[3].instr.vregDst = 3;  // LOAD v3: another program
  CHECK_FALSE(same_program(add, other));
  other = add;
  other.records[0].data[0] = 7;  // other data, the same program
  CHECK(same_program(add, other));

  // A kernel of two programs (31 tiles, and one), called twice on one device. Both fit in program
  // memory, so each is sent once: every later launch sends only its data, 2 cycles less per program and
  // output record. In a ring too small for both, each evicts the other and nothing is saved.
  const std::string ir =
      "KERNEL inc\nCONST idx 0 4096\nPARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\nRANGE i32 1 0 0 "
      "WEAK\nINDEX i32 2 2 3\nLOAD i32 1 4\nCONST i32 0 1\nADD i32 2 5 6\nINDEX i32 2 1 3\nSTORE void 2 8 "
      "7\nEND void 2 9 3\nSINK void 1 10\n";
  std::vector<DeviceBuffer> bufs{DeviceBuffer(4096 * 4), DeviceBuffer(4096 * 4)};
  for (int i = 0; i < 4096; ++i) std::memcpy(bufs[1].data() + 4 * i, &i, 4);
  const KernelStats plain = CompiledKernel(ir).run(bufs, {}, true);
  std::map<std::string, int> entries;  // program -> its instructions
  uint64_t saved = 0, first_sent = 0;  // header cycles of all launches, and of each program's first
  for (const std::string& tasm : plain.tasm) {
    const Bundle b = assemble(tasm);
    const uint64_t header = 2 * (b.records.size() - data_records(b));
    saved += header;
    if (entries
            .emplace(program_of(tasm),
                     std::count_if(b.records.begin(), b.records.end(),
                                   [](const Record& r) { return r.type == RecordType::kInstr; }))
            .second)
      first_sent += header;
  }
  REQUIRE(entries.size() == 2);
  const int both = entries.begin()->second + entries.rbegin()->second;
  REQUIRE(both <= 256);
  const CompiledKernel kernel(ir, config_from_spec("resident"));
  CoreState core;
  const KernelStats first = kernel.run(bufs, {}, false, nullptr, {}, &core);
  const KernelStats second = kernel.run(bufs, {}, false, nullptr, {}, &core);
  int wrong = 0;
  for (int i = 0; i < 4096; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    wrong += out != i + 1;
  }
  CHECK(wrong == 0);
  CHECK(first.cycles == plain.cycles - (saved - first_sent));
  CHECK(second.cycles == plain.cycles - saved);
  CHECK(kernel.run(bufs, {}, false).cycles == plain.cycles);  // no device state: nothing resident
  const std::string ring = "resident,prog_depth=" + std::to_string(both - 1);
  CoreState small;
  const KernelStats evicting =
      CompiledKernel(ir, config_from_spec(ring)).run(bufs, {}, true, nullptr, {}, &small);
  CHECK(evicting.tasm == plain.tasm);
  CHECK(evicting.cycles == plain.cycles);
}

TEST_CASE(
    "resident program with launch prefetch: a launch loaded while none runs takes the bank holding it") {
  // A one-launch kernel called three times: the first call loads into one bank, the second finds both
  // free and takes the bank holding its program, as does the third.
  std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(16 * 4)};
  for (int i = 0; i < 16; ++i) std::memcpy(bufs[1].data() + 4 * i, &i, 4);
  const KernelStats plain = CompiledKernel(test::kSum16Ir).run(bufs, {}, true);
  REQUIRE(plain.launches == 1);
  const Bundle b = assemble(plain.tasm[0]);
  const CompiledKernel kernel(test::kSum16Ir, config_from_spec("prefetch,resident_program=1"));
  CoreState core;
  const uint64_t cold = kernel.run(bufs, {}, false, nullptr, {}, &core).cycles;
  CHECK(cold == plain.cycles);
  for (int call = 0; call < 2; ++call)
    CHECK(kernel.run(bufs, {}, false, nullptr, {}, &core).cycles ==
          plain.cycles - 2 * (b.records.size() - data_records(b)));
  int32_t sum;
  std::memcpy(&sum, bufs[0].data(), 4);
  CHECK(sum == 15 * 16 / 2);
}

TEST_CASE(
    "resident program ring: a new program evicts the oldest, and the host sees when it overwrites the last "
    "one's") {
  // Three programs of 3 instructions in a ring of 6 entries: two fit.
  auto image = [](int imm, int data) {
    auto i = std::make_shared<compiler::Image>();
    i->bundle = assemble("VMEM[1] = " + std::to_string(data) +
                         " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nVFILL v0, imm=" + std::to_string(imm) +
                         "\nSTORE VMEM[0], v0\nHALT\nOUTPUT_VMEM VMEM[0]\nEND");
    return std::shared_ptr<const compiler::Image>(i);
  };
  const auto a = image(1, 0), b = image(2, 0), c = image(3, 0), a_other_data = image(1, 9);
  CoreState ring;
  bool evicts = true;
  CHECK_FALSE(ring.load(a, 6, evicts));
  CHECK_FALSE(evicts);
  CHECK_FALSE(ring.load(b, 6, evicts));
  CHECK(ring.load(a_other_data, 6, evicts));  // the same program with other data: resident
  CHECK_FALSE(evicts);
  CHECK_FALSE(ring.load(c, 6, evicts));  // evicts a, the oldest: the program the last launch ran
  CHECK(evicts);
  CHECK(ring.entries == 6);
  CHECK(ring.load(b, 6, evicts));
  CHECK(ring.load(c, 6, evicts));
  CHECK_FALSE(ring.load(a, 6, evicts));  // evicts b, the oldest; the last launch ran c
  CHECK_FALSE(evicts);
  CHECK(ring.load(c, 6, evicts));
  CHECK_FALSE(ring.load(b, 6, evicts));  // evicts c, which the last launch ran
  CHECK(evicts);
  CHECK(ring.resident.size() == 2);
}
