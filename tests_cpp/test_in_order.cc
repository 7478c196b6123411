// Running a program's launches in order, in batches (sim/runner.h BatchRunner), against ticking each
// (run_validated): the same results for every program computes_in_order accepts, on the reference core and on
// the variants whose timing differs (fetch overlap, the DMA loader), and a refusal of every program whose
// results or timing could depend on its timing or data.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "base/errors.h"
#include "helpers.h"
#include "isa/sxu_ops.h"
#include "isa/vpu_ops.h"
#include "sim/batch.h"
#include "sim/tensorcore.h"

using namespace tinytpu;
namespace fs = std::filesystem;

namespace {

std::vector<TensorCoreConfig> cores() {
  TensorCoreConfig reference, fetch_overlap, dma, pipelined;
  fetch_overlap.fetch_overlap = true;
  dma.dma_overlap = true;
  pipelined.mxu_pipelined = true;
  pipelined.fetch_overlap = true;
  return {reference, fetch_overlap, dma, pipelined};
}
// Cores with a float MXU: float32 as the reference sequences it, pipelined with a float latency, bfloat16.
std::vector<TensorCoreConfig> float_cores() {
  TensorCoreConfig f32, f32_pipelined, bf16;
  f32.mxu_dtype = 2;
  f32_pipelined.mxu_dtype = 2;
  f32_pipelined.mxu_pipelined = true;
  f32_pipelined.mxu_fp_latency = 3;
  bf16.mxu_dtype = 1;
  bf16.mxu_pipelined = true;
  return {f32, f32_pipelined, bf16};
}

// A launch's memories, as an edit of its data changes them: a core's, or a launch's of a batch.
struct Memories {
  std::function<Tile&(int addr)> vmem;
  std::function<I8Tile&(int addr)> wsram;
  std::function<I8Row&(int addr)> asram;
};
// A launch's data: changes to its memories' entries.
using Edit = std::function<void(const Memories& entry)>;

Memories memories_of(TensorCore& tc) {
  return {[&](int a) -> Tile& { return tc.vmem.mem[a]; }, [&](int a) -> I8Tile& { return tc.wsram.mem[a]; },
          [&](int a) -> I8Row& { return tc.asram.mem[a]; }};
}
Memories memories_of(BatchDatapath& b, int l) {
  return {[&b, l](int a) -> Tile& { return b.vmem.mem[a][l]; },
          [&b, l](int a) -> I8Tile& { return b.mxu(l).wsram.mem[a]; },
          [&b, l](int a) -> I8Row& { return b.mxu(l).asram.mem[a]; }};
}

RunResult ticked_run(const Bundle& b, const TensorCoreConfig& cfg, const Edit& e) {
  return run_validated(
      b, [&](TensorCore& tc) { e ? e(memories_of(tc)) : void(); }, cfg);
}

// Whether a program's launches run in order: it computes in order, and its ticked run meets no running MXU
// dispatch's writes (the executor's test: TimingCache).
bool runs_in_order(const Bundle& b, const TensorCoreConfig& cfg) {
  return computes_in_order(b) && !ticked_run(b, cfg, {}).mxu_overlapped;
}

// The launches of a kernel call: the bundle as loaded, with `edit`, as loaded again, with `edit` again. Their
// results in order, in one batch and in batches of one on the same runner, against each launch ticked; and
// the counters of each ticked launch, which running in order takes from the first, the same.
void check_in_order(const Bundle& b, const TensorCoreConfig& cfg, const Edit& edit) {
  REQUIRE(computes_in_order(b));
  const std::vector<Edit> launches = {Edit{}, edit, Edit{}, edit};
  std::vector<RunResult> ticked;
  for (const Edit& e : launches) ticked.push_back(ticked_run(b, cfg, e));
  REQUIRE_FALSE(ticked[0].mxu_overlapped);
  for (const RunResult& t : ticked) {
    CHECK(t.mxu_overlapped == ticked[0].mxu_overlapped);
#define RUN(name, type, combine, energy, doc) CHECK(t.name == ticked[0].name);
#define BUSY(unit, name, type, doc) CHECK(t.busy.unit == ticked[0].busy.unit);
#include "sim/counters.def"
  }
  const BatchRunner runner(b, cfg);
  BatchDatapath batch(cfg, int(launches.size()));
  auto run_batch = [&](size_t first, size_t n) {
    runner.start(batch, int(n));
    for (size_t l = 0; l < n; ++l)
      if (launches[first + l]) launches[first + l](memories_of(batch, int(l)));
    runner.run(batch);
    for (size_t l = 0; l < n; ++l) {
      RunResult in_order;
      runner.results(batch, int(l), in_order);
      CHECK(in_order.vmem_results == ticked[first + l].vmem_results);
      CHECK(in_order.mxu_result == ticked[first + l].mxu_result);
      CHECK(in_order.asram_results == ticked[first + l].asram_results);
    }
  };
  run_batch(0, launches.size());
  for (size_t l = 0; l < launches.size(); ++l) run_batch(l, 1);
}

// A random valid instruction that leaves a program computing in order: any such opcode but the MXU's, any
// fields.
Instr random_in_order_instr(std::mt19937& rng) {
  auto field = [&](int n) { return uint8_t(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  for (;;) {
    Instr i;
    i.op = field(kNumSxuOps);
    i.vmemAddr = field(TensorCoreConfig::kMaxDepth);
    i.vregDst = field(TensorCoreConfig::kMaxVregs);
    i.vregSrc = field(TensorCoreConfig::kMaxVregs);
    i.vregSrc2 = field(TensorCoreConfig::kMaxVregs);
    i.vpuOp = field(kNumVpuOps);
    i.mxuWBase = field(256);
    i.mxuABase = field(TensorCoreConfig::kMaxDepth);
    i.mxuTLen = uint8_t(1 + field(3));  // loop counts: short runs
    if (SxuOpcode(i.op) == SxuOpcode::kHalt) continue;
    Bundle one;
    one.records.push_back({RecordType::kInstr, 0, {}, i});
    if (!computes_in_order(one) || kSxuOps[i.op].waits_for_mxu) continue;  // MXU programs: below
    try {
      validate(one);
      return i;
    } catch (const AsmError&) {
    }
  }
}

}  // namespace

TEST_CASE("which programs compute in order: decided by the opcode rows' columns") {
  auto program = [](const std::string& body) {
    return assemble(body + "\nHALT\nOUTPUT_VMEM VMEM[1]\nEND\n");
  };
  // The instructions a quiet core takes whole, and synchronous VPU ops of any kind
  CHECK(computes_in_order(program("LOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\nSTORE VMEM[1], v1")));
  CHECK(computes_in_order(program("LOAD v0, VMEM[0]\nVPU v1 = FSUM_REDUCE_TILE(v0)\nSTORE VMEM[1], v1")));
  CHECK(computes_in_order(program("LOOP_BEGIN count=3\nBROADCAST_ROW v1 = ROW(v1, row=1)\nLOOP_END")));
  // A background op of many cycles works on after the SXU moves on
  CHECK_FALSE(
      computes_in_order(program("LOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\nSTORE VMEM[1], v1")));
  // The MXU, whose dispatches take fixed cycles
  CHECK(computes_in_order(program("MXU_OS WMEM[0], AMEM[0], k=1\nWAIT_MXU")));
  CHECK(computes_in_order(
      assemble("MXU_OS WMEM[0], AMEM[0], k=1\nHALT\nOUTPUT_MXU\nOUTPUT_ASRAM ASRAM[1]\nEND\n")));
  // Control flow or values that read data or the cycle
  CHECK_FALSE(computes_in_order(program("SET_PRED_IF_ZERO v0\nSKIP_IF_PRED\nVZERO v1")));
  CHECK_FALSE(computes_in_order(program("READ_CYCLE v0\nSTORE VMEM[1], v0")));
}

TEST_CASE("a program that computes in order gives, its launches run in batches, what ticking each gives") {
  std::mt19937 rng(36);
  auto value = [&] { return int32_t(rng()); };
  int programs = 0;
  for (int n = 0; n < 300; ++n) {
    Bundle b;
    for (int a = 0; a < TensorCoreConfig{}.depth; ++a) {
      Record r{RecordType::kVmemTile, a};
      for (int32_t& x : r.data) x = value();
      b.records.push_back(r);
    }
    const int length = 4 + n % 20;
    for (int k = 0; k < length; ++k)
      b.records.push_back({RecordType::kInstr, 0, {}, random_in_order_instr(rng)});
    b.records.push_back({RecordType::kInstr, 0, {}, Instr{uint8_t(SxuOpcode::kHalt)}});
    for (int a = 0; a < 8; ++a) b.records.push_back({RecordType::kOutputVmem, int(rng() % 32)});
    try {
      validate(b);
    } catch (const AsmError&) {
      continue;  // a loop the validator refuses: drawn again with the next n
    }
    Tile other;
    for (int32_t& x : other) x = value();
    const int at = int(rng() % 32);
    const Edit edit = [&](const Memories& entry) { entry.vmem(at) = other; };
    INFO(disassemble(b));
    for (const TensorCoreConfig& cfg : cores()) check_in_order(b, cfg, edit);
    ++programs;
  }
  CHECK(programs >= 250);
}

TEST_CASE(
    "every recorded reference program and seed kernel that computes in order gives the ticked results") {
  int in_order = 0, refused = 0;
  auto check = [&](const Bundle& b) {
    bool ran = false;
    for (const TensorCoreConfig& cfg : cores()) {
      if (!runs_in_order(b, cfg)) continue;
      check_in_order(b, cfg, [](const Memories& entry) {
        entry.vmem(0)[3] ^= 5;
        entry.wsram(1)[2] ^= 7;
        entry.asram(2)[1] ^= 3;
      });
      ran = true;
    }
    ++(ran ? in_order : refused);
  };
  for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/reference")) {
    if (entry.path().extension() != ".bundle") continue;
    INFO(entry.path().filename().string());
    check(parse_wire(test::read_file(entry.path())));
  }
  for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/seed")) {
    INFO(entry.path().filename().string());
    check(assemble(test::read_file(entry.path())));
  }
  CHECK(in_order >= 5);
  CHECK(refused >= 40);  // the random reference programs mix in the MXU, predicates and background ops
}

TEST_CASE("a long batch polls every kPollCycles of its launches' cycles, and what the poll throws stops it") {
  const Bundle b = assemble(
      "LOOP_BEGIN count=255\nLOOP_BEGIN count=255\nVZERO v0\nLOOP_END\nLOOP_END\nHALT\nOUTPUT_VMEM "
      "VMEM[0]\nEND\n");
  REQUIRE(computes_in_order(b));
  TensorCoreConfig cfg;
  cfg.max_cycles = 10'000'000;
  const RunResult ticked = run_bundle(b, cfg);
  for (int launches : {1, 4}) {  // polled about every kPollCycles of the launches' cycles
    const BatchRunner runner(b, cfg);
    BatchDatapath batch(cfg, launches);
    runner.start(batch, launches);
    int polls = 0;
    runner.run(batch, [&] { ++polls; });
    RunResult in_order;
    runner.results(batch, launches - 1, in_order);
    CHECK(in_order.vmem_results == ticked.vmem_results);
    const int cycles = int(ticked.cycles) * launches;
    CHECK(polls >= int(ticked.sxu_cycles) * launches / int(kPollCycles) - 1);  // counted from the SXU's start
    CHECK(polls <= cycles / int(kPollCycles) + 1);
    runner.start(batch, launches);
    CHECK_THROWS_WITH(runner.run(batch, [] { throw SimError("stopped"); }), "stopped");
  }
}

namespace {

// A random valid instruction of an MXU program: a dispatch of any kind, a read of the MXU's results or
// state, a PSUM access, or a load, store or VPU op between them; any fields.
Instr random_mxu_instr(std::mt19937& rng, const TensorCoreConfig& cfg) {
  static const SxuOpcode kOps[] = {SxuOpcode::kDispatchMxuOsFloat,
                                   SxuOpcode::kDispatchMxuOsFloatAccumulate,
                                   SxuOpcode::kDispatchMxuSeed,
                                   SxuOpcode::kLoadMxuBank,
                                   SxuOpcode::kDispatchMxu,
                                   SxuOpcode::kDispatchMxuAccumulate,
                                   SxuOpcode::kDispatchMxuOs,
                                   SxuOpcode::kDispatchMxuOsAccumulate,
                                   SxuOpcode::kDispatchMxuEpilogue,
                                   SxuOpcode::kDispatchMxuRequant,
                                   SxuOpcode::kDispatchMxuVpuEpilogue,
                                   SxuOpcode::kWaitMxu,
                                   SxuOpcode::kLoadMxuResult,
                                   SxuOpcode::kLoadMxuMatrixRow,
                                   SxuOpcode::kMxuClear,
                                   SxuOpcode::kSetRequantConfig,
                                   SxuOpcode::kLoadEpilogueStat,
                                   SxuOpcode::kPsumWrite,
                                   SxuOpcode::kPsumAccumulate,
                                   SxuOpcode::kPsumAccumulateRow,
                                   SxuOpcode::kPsumRead,
                                   SxuOpcode::kPsumReadRow,
                                   SxuOpcode::kPsumClear,
                                   SxuOpcode::kPsumClearAll,
                                   SxuOpcode::kLoadVreg,
                                   SxuOpcode::kStoreVreg,
                                   SxuOpcode::kDispatchVpu};
  auto field = [&](int n) { return uint8_t(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  for (;;) {
    Instr i;
    i.op = uint8_t(kOps[field(int(std::size(kOps)))]);
    i.vmemAddr = field(TensorCoreConfig::kMaxDepth);
    i.vregDst = field(TensorCoreConfig::kMaxVregs);
    i.vregSrc = field(TensorCoreConfig::kMaxVregs);
    i.vregSrc2 = field(TensorCoreConfig::kMaxVregs);
    i.vpuOp = field(kNumVpuOps);
    i.mxuWBase = field(TensorCoreConfig::kMaxDepth);
    i.mxuABase = field(TensorCoreConfig::kMaxDepth);
    i.mxuTLen = field(9);  // up to 8: K past the OS slots too
    if (cfg.mxu_dtype && field(2))
      i.vpuOp = field(TensorCoreConfig::kRows + 1);  // the float dispatches' group
    Bundle one;
    one.records.push_back({RecordType::kInstr, 0, {}, i});
    try {
      validate(one, cfg);
      return i;
    } catch (const AsmError&) {
    }
  }
}

// A random MXU program for `cfg`: records in every memory, a first dispatch, random instructions, its
// outputs. On a float MXU, float dispatches among them and the MXU's entries half int8 records, half 32-bit
// words of small floats (mostly normal; an int8 record's words are tiny subnormals); on a pipelined one, bank
// reads.
Bundle random_mxu_program(std::mt19937& rng, int length, const TensorCoreConfig& cfg = {}) {
  const bool float_ops = cfg.mxu_dtype != 0;
  Bundle b;
  for (int a = 0; a < cfg.depth; ++a)
    for (RecordType type : {RecordType::kVmemTile, RecordType::kWeightTile, RecordType::kActTile}) {
      const bool words = float_ops && type != RecordType::kVmemTile && rng() % 2;
      Record r{type, a, {}, {}};
      if (words) r.type = type == RecordType::kWeightTile ? RecordType::kWeightWords : RecordType::kActWords;
      for (int32_t& x : r.data)
        x = type == RecordType::kVmemTile ? int32_t(rng())
            : words ? int32_t(0x3E000000u + rng() % 0x02000000u) ^ int32_t(rng() % 2 << 31)
                    : int32_t(rng() % 256) - 128;
      b.records.push_back(r);
    }
  Instr first;
  first.op = uint8_t(SxuOpcode::kDispatchMxuOs);
  first.mxuTLen = 3;
  b.records.push_back({RecordType::kInstr, 0, {}, first});
  for (int k = 0; k < length; ++k)
    b.records.push_back({RecordType::kInstr, 0, {}, random_mxu_instr(rng, cfg)});
  b.records.push_back({RecordType::kInstr, 0, {}, Instr{uint8_t(SxuOpcode::kHalt)}});
  if (rng() % 2) b.records.push_back({RecordType::kOutputMxu, 1, {}, {}});
  for (int a = 0; a < 4; ++a) b.records.push_back({RecordType::kOutputVmem, int(rng() % 32), {}, {}});
  if (rng() % 2)
    for (int a = 0; a < 2; ++a) b.records.push_back({RecordType::kOutputAsram, int(rng() % 32), {}, {}});
  return b;
}

}  // namespace

namespace {
// How a random program fared: its launches checked in order against ticking, or left ticked (its run met a
// running dispatch's writes), or a reference hang (a result awaited with no dispatch to give it).
enum class Fared { kChecked, kOverlapped, kHung };
Fared check_random_program(const Bundle& b, const TensorCoreConfig& cfg, std::mt19937& rng) {
  REQUIRE(computes_in_order(b));
  const int w = int(rng() % 32), a = int(rng() % 32), v = int(rng() % 32);
  const Edit edit = [&](const Memories& entry) {
    entry.wsram(w)[5] ^= 0x5a;
    entry.asram(a)[2] ^= 0x33;
    entry.vmem(v)[7] ^= 12345;
  };
  INFO(disassemble(b));
  RunResult ticked;
  try {
    ticked = ticked_run(b, cfg, {});
  } catch (const SimError&) {
    return Fared::kHung;
  }
  if (ticked.mxu_overlapped) return Fared::kOverlapped;
  check_in_order(b, cfg, edit);
  return Fared::kChecked;
}
}  // namespace

TEST_CASE("an MXU program gives, its launches run in order, what ticking each gives: results and counters") {
  std::mt19937 rng(50);
  std::map<Fared, int> fared;
  for (int n = 0; n < 300; ++n) {
    const Bundle b = random_mxu_program(rng, 3 + n % 16);
    for (const TensorCoreConfig& cfg : cores()) ++fared[check_random_program(b, cfg, rng)];
  }
  CHECK(fared[Fared::kChecked] >= 300);
  CHECK(fared[Fared::kOverlapped] >=
        10);  // the random PSUM accesses and ActivationSRAM outputs meet running dispatches
  INFO(fared[Fared::kHung]);
}

TEST_CASE("a float MXU's program gives, its launches run in order, what ticking each gives") {
  std::mt19937 rng(51);
  int programs = 0;
  for (int n = 0; n < 150; ++n)
    for (const TensorCoreConfig& cfg : float_cores())
      programs += check_random_program(random_mxu_program(rng, 3 + n % 16, cfg), cfg, rng) == Fared::kChecked;
  CHECK(programs >= 150);
}

TEST_CASE("a PSUM access or ActivationSRAM output that meets a running dispatch's writes keeps it ticked") {
  const std::string data = "WMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nAMEM[0] = 1 -2 3 -4\n";
  const std::string deposit = "MXU WMEM[0], AMEM[0], tiles=1, psum_write=PSUM[0], psum_row=0\n";
  const std::string read = "PSUM_READ v0, PSUM[0]\nSTORE VMEM[1], v0\nHALT\nOUTPUT_VMEM VMEM[1]\nEND\n";
  const std::string requant =
      "SET_REQUANT_CONFIG scale_mul=1000 scale_shift=4\n"
      "DISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 ASRAM[5]\n";
  const std::string out_asram = "HALT\nOUTPUT_ASRAM ASRAM[5]\nEND\n";
  const TensorCoreConfig cfg;
  for (const auto& [racing, waiting] :
       {std::pair{data + deposit + read, data + deposit + "WAIT_MXU\n" + read},
        std::pair{data + requant + out_asram, data + requant + "WAIT_MXU\n" + out_asram}}) {
    INFO(racing);
    const Bundle raced = assemble(racing), waited = assemble(waiting);
    REQUIRE(computes_in_order(raced));
    const RunResult ticked = run_bundle(raced, cfg);
    CHECK(ticked.mxu_overlapped);
    // Run in order, its dispatch would be done before the read: not what ticking gives
    const BatchRunner runner(raced, cfg);
    BatchDatapath batch(cfg, 1);
    runner.start(batch, 1);
    runner.run(batch);
    RunResult in_order;
    runner.results(batch, 0, in_order);
    CHECK((in_order.vmem_results != ticked.vmem_results || in_order.asram_results != ticked.asram_results));
    // Waiting for the MXU first, it runs in order
    CHECK_FALSE(run_bundle(waited, cfg).mxu_overlapped);
    check_in_order(waited, cfg, [](const Memories& entry) { entry.asram(0)[1] = 7; });
  }
}
