// TensorCoreConfig as a run-time value: the simulator's memories, register file, PSUM bank and loop
// stack take their sizes from it, validation its limits, and the compiler cuts launches by it.
#include <catch2/catch.hpp>
#include <cstring>

#include "compiler/compile.h"
#include "helpers.h"
#include "runtime/executor.h"

using namespace tinytpu;
using Catch::Matchers::Contains;

namespace {

TensorCoreConfig small_core() {
  TensorCoreConfig c;
  c.depth = 8;
  c.vregs = 8;
  c.psum_buckets = 4;
  c.prog_depth = 64;
  c.loop_depth = 2;
  c.max_outputs = 6;
  return c;
}

}  // namespace

TEST_CASE("config: the default is the reference TensorCore#(4,4,32)") {
  const TensorCoreConfig ref;
  CHECK(ref.depth == 32);
  CHECK(ref.vregs == 16);
  CHECK(ref.psum_buckets == 8);
  CHECK(ref.prog_depth == 256);
  CHECK(ref.loop_depth == 4);
  CHECK(ref.max_outputs == 31);
  CHECK_NOTHROW(ref.check());
  CHECK_NOTHROW(small_core().check());
}

TEST_CASE("config: sizes the model cannot have are refused, naming the field") {
  auto bad = [](auto set) {
    TensorCoreConfig c;
    set(c);
    return c;
  };
  CHECK_THROWS_WITH(bad([](auto& c) { c.depth = 24; }).check(),
                    Contains("depth = 24") && Contains("power of two"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.depth = 512; }).check(), Contains("depth = 512"));  // 8-bit addresses
  CHECK_THROWS_WITH(bad([](auto& c) { c.depth = 2; }).check(), Contains("depth = 2") && Contains("K-slice"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.vregs = 32; }).check(), Contains("vregs = 32"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.psum_buckets = 0; }).check(), Contains("psum_buckets = 0"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.prog_depth = 257; }).check(), Contains("prog_depth = 257"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.loop_depth = 0; }).check(), Contains("loop_depth = 0"));
  CHECK_THROWS_WITH(bad([](auto& c) { c.max_outputs = 0; }).check(), Contains("max_outputs = 0"));
  CHECK_THROWS_AS(test::run("HALT\nEND", bad([](auto& c) { c.vregs = 3; })), std::invalid_argument);
  CHECK_THROWS_AS(CompiledKernel("KERNEL k\nSINK void 0\n", bad([](auto& c) { c.depth = 3; })),
                  std::invalid_argument);
}

TEST_CASE("config: a bundle is validated against the core's sizes") {
  const TensorCoreConfig c = small_core();
  CHECK_THROWS_WITH(test::run("HALT\nOUTPUT_VMEM VMEM[8]\nEND", c),
                    Contains("VMEM address 8 out of range (0..7)"));
  CHECK_NOTHROW(test::run("HALT\nOUTPUT_VMEM VMEM[7]\nEND", c));
  std::string outputs = "HALT\n";
  for (int k = 0; k < 7; ++k) outputs += "OUTPUT_VMEM VMEM[0]\n";
  CHECK_THROWS_WITH(test::run(outputs + "END", c), Contains("more than 6 OUTPUT_VMEM records"));
  std::string program;
  for (int k = 0; k < 64; ++k) program += "VZERO v1\n";
  CHECK_THROWS_WITH(test::run(program + "HALT\nEND", c), Contains("more than 64 instructions"));
}

TEST_CASE("config: addresses and register numbers keep their low bits on a smaller core") {
  const TensorCoreConfig c = small_core();
  const Tile t{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  // VMEM[11] is VMEM[3] on an 8-deep core, v9 is v1 with 8 vregs.
  RunResult wrapped = test::run(
      test::vmem_decl(3, t) + "LOAD v9, VMEM[11]\nSTORE VMEM[12], v1\nHALT\nOUTPUT_VMEM VMEM[4]\nEND", c);
  RunResult direct = test::run(test::vmem_decl(3, t) +
                               "LOAD v1, VMEM[3]\nSTORE VMEM[4], v1\nHALT\nOUTPUT_VMEM VMEM[4]\nEND");
  REQUIRE(wrapped.vmem_results.size() == 1);
  CHECK(wrapped.vmem_results[0] == t);
  CHECK(wrapped.cycles == direct.cycles);  // sizes change what is addressed, not when
}

TEST_CASE(
    "config: a core up to 256 deep addresses every entry (8-bit address fields), a shallower one wraps") {
  const Tile a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
      b{-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16};
  const std::string read = "LOAD v1, VMEM[200]\nSTORE VMEM[5], v1\nHALT\nOUTPUT_VMEM VMEM[5]\nEND";
  TensorCoreConfig deep;
  deep.depth = 256;
  RunResult r = test::run(test::vmem_decl(200, a) + test::vmem_decl(72, b) + read, deep);
  REQUIRE(r.vmem_results.size() == 1);
  CHECK(r.vmem_results[0] == a);
  deep.depth = 128;  // a record past the memory is refused; an instruction's address keeps its low 7 bits
  CHECK_THROWS_WITH(test::run(test::vmem_decl(200, a) + read, deep),
                    Contains("VMEM address 200 out of range (0..127)"));
  r = test::run(test::vmem_decl(72, b) + read, deep);
  REQUIRE(r.vmem_results.size() == 1);
  CHECK(r.vmem_results[0] == b);
}

TEST_CASE("config: PSUM_CLEAR_ALL clears one bucket per cycle, however many there are") {
  // hardware.md §2.7: FETCH, then one EXEC cycle per bucket (9 on the reference's 8 buckets).
  TensorCoreConfig c;
  for (int buckets : {1, 2, 4, 8}) {
    c.psum_buckets = buckets;
    CHECK(test::sxu_cycles("PSUM_CLEAR_ALL", c) == uint64_t(1 + buckets + 1));  // + HALT
  }
}

TEST_CASE("config: LOOP_BEGINs past loop_depth are ignored, as the reference ignores a fifth") {
  // LOAD_LOOP_DEPTH reads the loop stack's top: three nested loops on a 2-deep stack keep two.
  TensorCoreConfig c;
  c.loop_depth = 2;
  RunResult r = test::run(
      "LOOP_BEGIN count=1\nLOOP_BEGIN count=1\nLOOP_BEGIN count=1\nLOAD_LOOP_DEPTH v1\nSTORE VMEM[0], v1\n"
      "HALT\nOUTPUT_VMEM VMEM[0]\nEND",
      c);
  REQUIRE(r.vmem_results.size() == 1);
  CHECK(r.vmem_results[0][0] == 2);
}

TEST_CASE("config: a kernel compiled for a smaller core stays within its limits and computes the same") {
  // out[i] = a[i] * b[i] + 3 over 16 * 100 int32 elements
  const int n = 16 * 100;
  const std::string ir =
      "KERNEL muladd\nCONST idx 0 " + std::to_string(n) +
      "\nPARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\nPARAM i32 1 0 2 GLOBAL 0 0\n"
      "RANGE i32 1 0 0 WEAK\nINDEX i32 2 2 4\nLOAD i32 1 5\nINDEX i32 2 3 4\nLOAD i32 1 7\n"
      "MUL i32 2 6 8\nCONST i32 0 3\nADD i32 2 9 10\nINDEX i32 2 1 4\nSTORE void 2 12 11\n"
      "END void 2 13 4\nSINK void 1 14\n";
  const TensorCoreConfig small = small_core(), ref;
  compiler::Plan plan = compiler::compile(compiler::parse_kernel(ir), small, {}, {n, n, n});
  CHECK(plan.config.depth == small.depth);
  for (const compiler::PlanLaunch& l : plan.launches) {
    int instrs = 0, outputs = 0;
    for (const Record& r : l.image->bundle.records) {
      instrs += r.type == RecordType::kInstr;
      outputs += r.type == RecordType::kOutputVmem;
      if (r.type == RecordType::kInstr) {
        CHECK((r.instr.vregDst < small.vregs && r.instr.vregSrc < small.vregs));
      } else if (r.type == RecordType::kVmemTile || r.type == RecordType::kOutputVmem) {
        CHECK(r.addr < small.depth);
      }
    }
    CHECK(instrs <= small.prog_depth);
    CHECK(outputs <= small.max_outputs);
  }

  auto run_on = [&](const TensorCoreConfig& cfg, KernelStats& stats) {
    std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
    for (int i = 0; i < n; ++i) {
      int32_t a = i * 7 - 900, b = 13 - i;
      std::memcpy(bufs[1].data() + 4 * i, &a, 4);
      std::memcpy(bufs[2].data() + 4 * i, &b, 4);
    }
    stats = CompiledKernel(ir, cfg).run(bufs, {}, false);
    std::vector<int32_t> out(n);
    std::memcpy(out.data(), bufs[0].data(), 4 * n);
    return out;
  };
  KernelStats on_small, on_ref;
  std::vector<int32_t> out = run_on(small, on_small);
  CHECK(out == run_on(ref, on_ref));
  for (int i = 0; i < n; ++i) {
    int32_t want = int32_t(uint32_t(i * 7 - 900) * uint32_t(13 - i) + 3u);
    if (out[i] != want) FAIL("element " << i << ": " << out[i] << " != " << want);
  }
  CHECK(on_small.launches > on_ref.launches);  // 6 outputs a launch instead of 31
}
