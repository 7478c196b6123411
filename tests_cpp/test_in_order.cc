// Running a program's launches in order, in batches (sim/runner.h BatchRunner), against ticking each
// (run_validated): the same results for every program computes_in_order accepts, on the reference core and on
// the variants whose timing differs (fetch overlap, the DMA loader), and a refusal of every program whose
// results or timing could depend on its timing or data.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
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
  TensorCoreConfig reference, fetch_overlap, dma;
  fetch_overlap.fetch_overlap = true;
  dma.dma_overlap = true;
  return {reference, fetch_overlap, dma};
}

// A launch's data: changes to VMEM entries, made through `entry` (a core's, or a launch's of a batch).
using Edit = std::function<void(const std::function<Tile&(int addr)>& entry)>;

// The launches of a kernel call: the bundle as loaded, with `edit`, as loaded again, with `edit` again. Their
// results in order, in one batch and in batches of one on the same runner, against each launch ticked.
void check_in_order(const Bundle& b, const TensorCoreConfig& cfg, const Edit& edit) {
  REQUIRE(computes_in_order(b));
  const std::vector<Edit> launches = {Edit{}, edit, Edit{}, edit};
  std::vector<RunResult> ticked;
  for (const Edit& e : launches)
    ticked.push_back(run_validated(
        b, [&](TensorCore& tc) { e ? e([&](int a) -> Tile& { return tc.vmem.mem[a]; }) : void(); }, cfg));
  const BatchRunner runner(b, cfg);
  BatchDatapath batch(cfg, int(launches.size()));
  auto run_batch = [&](size_t first, size_t n) {
    runner.start(batch, int(n));
    for (size_t l = 0; l < n; ++l)
      if (launches[first + l]) launches[first + l]([&](int a) -> Tile& { return batch.vmem.mem[a][int(l)]; });
    runner.run(batch);
    for (size_t l = 0; l < n; ++l) {
      RunResult in_order;
      runner.results(batch, int(l), in_order);
      CHECK(in_order.vmem_results == ticked[first + l].vmem_results);
    }
  };
  run_batch(0, launches.size());
  for (size_t l = 0; l < launches.size(); ++l) run_batch(l, 1);
}

// A random valid instruction that leaves a program computing in order: any such opcode, any fields.
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
    if (!computes_in_order(one)) continue;
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
  // The MXU works on after its dispatch
  CHECK_FALSE(computes_in_order(program("MXU_OS WMEM[0], AMEM[0], k=1\nWAIT_MXU")));
  // Control flow or values that read data or the cycle
  CHECK_FALSE(computes_in_order(program("SET_PRED_IF_ZERO v0\nSKIP_IF_PRED\nVZERO v1")));
  CHECK_FALSE(computes_in_order(program("READ_CYCLE v0\nSTORE VMEM[1], v0")));
  CHECK_FALSE(computes_in_order(assemble("HALT\nOUTPUT_MXU\nEND\n")));
}

TEST_CASE("a program that computes in order gives, its launches run in batches, what ticking each gives") {
  std::mt19937 rng(36);
  auto value = [&] { return int32_t(rng()); };
  int programs = 0;
  for (int n = 0; n < 300; ++n) {
    Bundle b;
    for (int a = 0; a < TensorCoreConfig::kMaxDepth; ++a) {
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
    const Edit edit = [&](const auto& entry) { entry(at) = other; };
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
    if (!computes_in_order(b)) return void(++refused);
    for (const TensorCoreConfig& cfg : cores())
      check_in_order(b, cfg, [](const auto& entry) { entry(0)[3] ^= 5; });
    ++in_order;
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
