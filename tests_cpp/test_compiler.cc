// The UOp compiler: IR parsing and checks, lane tracing, lowering within the hardware limits, execution.
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <sstream>
#include <tuple>

#include "base/config.h"
#include "compiler/compile.h"
#include "compiler/cost.h"
#include "compiler/ir.h"
#include "compiler/log.h"
#include "compiler/lower.h"
#include "compiler/mxu_dot.h"
#include "compiler/op_table.h"
#include "compiler/tracer.h"
#include "helpers.h"
#include "runtime/executor.h"
#include "sim/timing.h"

using namespace tinytpu;
using namespace tinytpu::compiler;
using Catch::Matchers::Contains;

namespace {
// out[i] = a[i] * b[i] + 3 for i < n (int32), as the renderer serialises it.
std::string muladd_ir(int n) {
  return "KERNEL muladd\n"
         "CONST idx 0 " +
         std::to_string(n) +
         "\n"                                              // 0
         "PARAM i32 1 0 0 GLOBAL 0 0\n"                    // 1 out
         "PARAM i32 1 0 1 GLOBAL 0 0\n"                    // 2 a
         "PARAM i32 1 0 2 GLOBAL 0 0\n"                    // 3 b
         "RANGE i32 1 0 0 WEAK\n"                          // 4
         "INDEX i32 2 2 4\nLOAD i32 1 5\n"                 // 5, 6
         "INDEX i32 2 3 4\nLOAD i32 1 7\n"                 // 7, 8
         "MUL i32 2 6 8\nCONST i32 0 3\nADD i32 2 9 10\n"  // 9, 10, 11
         "INDEX i32 2 1 4\nSTORE void 2 12 11\n"           // 12, 13
         "END void 2 13 4\nSINK void 1 14\n";
}
}  // namespace

TEST_CASE("IR: unknown ops and dtypes are NotImplemented, malformed IR is rejected") {
  CHECK_THROWS_WITH(parse_kernel("KERNEL k\nCONST f64 0 1\n"), Contains("dtype f64") && Contains("kernel k"));
  CHECK_THROWS_WITH(parse_kernel("KERNEL k\nWMMA f32 0\n"), Contains("op WMMA"));
  CHECK_THROWS_AS(parse_kernel("KERNEL k\nCONST f32 0 1\nSHL f32 2 0 0\n"), Unsupported);
  CHECK_THROWS_AS(parse_kernel("KERNEL k\nADD i32 2 0 5\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_kernel("KERNEL k\nCONST i32 0 1\nADD i32 1 0\n"), std::invalid_argument);
  CHECK(parse_kernel(muladd_ir(5)).nodes.size() == 16);
}

TEST_CASE("tracer: 16 iterations per chunk, inactive lanes past the end") {
  Kernel k = parse_kernel(muladd_ir(20));
  Tracer t(k, {}, {20, 20, 20});
  REQUIRE(t.num_chunks() == 2);
  TileProgram p;
  CHECK(t.trace_chunk(1, p));
  REQUIRE(p.stores.size() == 1);
  const TileStore& s = p.stores[0];
  for (int l = 0; l < kLanes; ++l) {
    CHECK(s.active[l] == (l < 4));
    if (l < 4) CHECK(s.index[l] == 16 + l);
  }
  const TileNode& leaf = p.nodes[p.nodes[p.nodes[s.value].a].a];  // (a*b)+3 -> a*b -> a
  CHECK(leaf.op == Op::LOAD);
  CHECK(p.lanes(leaf)[2].buf == 1);
  CHECK(p.lanes(leaf)[2].index == 18);
}

TEST_CASE("lowering splits long tile programs into launches within the hardware limits") {
  Kernel k = parse_kernel(muladd_ir(16 * 40));
  Tracer t(k, {}, {640, 640, 640});
  TileProgram p;
  for (int c = 0; c < 40; ++c) CHECK(t.trace_chunk(c, p));
  std::vector<Tile> consts;
  const TensorCoreConfig ref;
  auto launches = lower(p, ref, consts);
  CHECK(launches.size() > 1);
  size_t stores = 0;
  for (const Launch& l : launches) {
    CHECK(l.program.size() <= size_t(ref.prog_depth));
    CHECK(l.fills.size() <= size_t(ref.depth));
    CHECK(l.drains.size() <= size_t(ref.max_outputs));
    CHECK(l.program.back().op == 7);  // HALT
    for (const SlotDrain& d : l.drains) stores += d.store >= 0;
  }
  CHECK(stores == 40);
}

TEST_CASE("executor: a kernel runs on the TensorCore and writes device memory") {
  CompiledKernel k(muladd_ir(21));
  std::vector<DeviceBuffer> bufs{DeviceBuffer(21 * 4), DeviceBuffer(21 * 4), DeviceBuffer(21 * 4)};
  for (int i = 0; i < 21; ++i) {
    int32_t a = i - 10, b = 1000 * i;
    std::memcpy(bufs[1].data() + 4 * i, &a, 4);
    std::memcpy(bufs[2].data() + 4 * i, &b, 4);
  }
  KernelStats s = k.run(bufs, {}, true);
  for (int i = 0; i < 21; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    CHECK(out == (i - 10) * 1000 * i + 3);
  }
  CHECK(s.launches == s.tasm.size());
  CHECK(s.cycles > s.sxu_cycles);
}

TEST_CASE("executor: a kernel that reads the buffer it writes reads it as it was when the call began") {
  // buf[i] = buf[n - 1 - i] + 1 over many launches: later launches read elements earlier ones stored
  const int n = 16 * 64;
  const std::string ir = "KERNEL flip\nCONST idx 0 " + std::to_string(n) +
                         "\n"                                             // 0
                         "PARAM i32 1 0 0 GLOBAL 0 0\n"                   // 1 buf
                         "RANGE i32 1 0 0 WEAK\n"                         // 2 i
                         "CONST i32 0 -1\nMUL i32 2 2 3\nCONST i32 0 " +  // 3, 4, 5
                         std::to_string(n - 1) +
                         "\nADD i32 2 4 5\n"                                              // 6 n - 1 - i
                         "INDEX i32 2 1 6\nLOAD i32 1 7\nCONST i32 0 1\nADD i32 2 8 9\n"  // 7..10
                         "INDEX i32 2 1 2\nSTORE void 2 11 10\n"                          // 11, 12
                         "END void 2 12 2\nSINK void 1 13\n";
  CompiledKernel k(ir);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4)};
  for (int i = 0; i < n; ++i) std::memcpy(bufs[0].data() + 4 * i, &i, 4);
  KernelStats s = k.run(bufs, {}, false);
  REQUIRE(s.launches > 1);
  for (int i = 0; i < n; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    CHECK(out == n - 1 - i + 1);
  }
}

TEST_CASE("executor: a gather of one buffer with constant lanes (padding) reads through interned offsets") {
  // out[i] = i < 5 ? a[i] : 7, a load gated per lane: lanes 5.. read the constant
  const std::string ir =
      "KERNEL pad\nCONST idx 0 16\nPARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\n"     // 0-2
      "RANGE i32 1 0 0 WEAK\nCONST i32 0 5\nCMPLT bool 2 3 4\nINDEX i32 2 2 3\nCONST i32 0 7\n"  // 3-7
      "LOAD i32 3 6 7 5\nINDEX i32 2 1 3\nSTORE void 2 9 8\nEND void 2 10 3\nSINK void 1 11\n";  // 8-12
  Plan plan = compile(parse_kernel(ir), {}, {}, {16, 16});
  REQUIRE(plan.offset_gathers.size() == 1);
  const LaneOffsets& o = plan.lane_offsets[size_t(plan.offset_gathers[0].offsets)];
  for (int l = 0; l < kLanes; ++l) {
    CHECK(o.constant[size_t(l)] == (l >= 5));
    if (l >= 5) CHECK(o.constants[l] == 7);
  }
  CompiledKernel k(ir);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(16 * 4), DeviceBuffer(16 * 4)};
  for (int i = 0; i < 16; ++i) {
    const int32_t a = 100 + i;
    std::memcpy(bufs[1].data() + 4 * i, &a, 4);
  }
  k.run(bufs, {}, false);
  for (int i = 0; i < 16; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    CHECK(out == (i < 5 ? 100 + i : 7));
  }
}

TEST_CASE("replay: batches equal up to a shift of their indices run the first one's launches") {
  const int n = 16 * 200;
  Kernel ir = parse_kernel(muladd_ir(n));
  Plan plan = compile(ir, {}, {}, {n, n, n});
  int64_t launches = 0, shifted = 0;
  for (const LaunchRun& r : plan.runs) {
    launches += r.count;
    if (r.shift >= 0) {
      ++shifted;
      const std::vector<int64_t>& by = plan.shifts[r.shift];
      CHECK(by[0] > 0);  // later elements of every buffer, by the same amount
      CHECK(by[0] == by[1]);
      CHECK(by[1] == by[2]);
    }
  }
  CHECK(shifted > 0);
  CHECK(int64_t(plan.launches.size()) < launches);  // launches kept once

  // The replayed runs compute every element.
  CompiledKernel k(muladd_ir(n));
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
  for (int i = 0; i < n; ++i) {
    int32_t a = i - 10, b = 3 * i;
    std::memcpy(bufs[1].data() + 4 * i, &a, 4);
    std::memcpy(bufs[2].data() + 4 * i, &b, 4);
  }
  KernelStats st = k.run(bufs, {}, false);
  CHECK(int64_t(st.launches) == launches);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    wrong += out != (i - 10) * 3 * i + 3;
  }
  CHECK(wrong == 0);

  // A buffer one element short is an error when the plan is compiled, replayed batches or not.
  CHECK_THROWS_WITH(compile(ir, {}, {}, {n, n - 1, n}),
                    Contains("element " + std::to_string(n - 1)) && Contains("outside buffer 1"));
}

TEST_CASE("executor: a lane reads back the elements it stored earlier in the kernel") {
  // out[i] = 0; for k < 3: out[i] = out[i] + a[3i + k] -- an accumulator kept in global memory
  CompiledKernel k(
      "KERNEL readback\n"
      "CONST idx 0 5\nCONST idx 0 3\n"                                    // 0, 1
      "PARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\n"          // 2 out, 3 a
      "RANGE i32 1 0 0 WEAK\n"                                            // 4: i
      "INDEX i32 2 2 4\nCONST i32 0 0\nSTORE void 2 5 6\n"                // 5, 6, 7
      "RANGE i32 1 1 1 REDUCE\n"                                          // 8: k
      "INDEX i32 2 2 4\nLOAD i32 1 9\n"                                   // 9, 10: out[i]
      "MUL idx 2 4 1\nADD idx 2 11 8\nINDEX i32 2 3 12\nLOAD i32 1 13\n"  // 11..14: a[3i + k]
      "ADD i32 2 10 14\nSTORE void 2 9 15\n"                              // 15, 16
      "END void 2 16 8\nEND void 2 17 4\nSINK void 1 18\n");
  std::vector<DeviceBuffer> bufs{DeviceBuffer(5 * 4), DeviceBuffer(15 * 4)};
  for (int i = 0; i < 15; ++i) {
    int32_t a = i * i - 7;
    std::memcpy(bufs[1].data() + 4 * i, &a, 4);
  }
  k.run(bufs, {}, false);
  for (int i = 0; i < 5; ++i) {
    int32_t out, want = 0;
    std::memcpy(&out, bufs[0].data() + 4 * i, 4);
    for (int j = 3 * i; j < 3 * i + 3; ++j) want += j * j - 7;
    CHECK(out == want);
  }
}

namespace {
// sum_k x_k * y_k over 16 lanes as the tracer builds it; x_k depends on the lane's row (l / 4) and
// y_k on its column (l % 4), scaled by `scale` to push values out of int8 range.
TileProgram dot_program(int terms, int scale) {
  TileProgram p;
  auto leaf = [&](auto value) {
    TileNode t{Op::LOAD, DType::kI32};
    LeafLanes& lanes = p.lanes(t);
    for (int l = 0; l < kLanes; ++l) lanes[l].bits = uint32_t(value(l));
    p.nodes.push_back(t);
    return int(p.nodes.size()) - 1;
  };
  int acc = -1;
  for (int k = 0; k < terms; ++k) {
    int x = leaf([&](int l) { return scale * (l / 4 - k); });
    int y = leaf([&](int l) { return l % 4 + k; });
    p.nodes.push_back(TileNode{Op::MUL, DType::kI32, DType::kI32, x, y});
    int m = int(p.nodes.size()) - 1;
    if (acc >= 0) p.nodes.push_back(TileNode{Op::ADD, DType::kI32, DType::kI32, acc, m});
    acc = int(p.nodes.size()) - 1;
  }
  TileStore s{0, {}, {}, acc};
  s.active.fill(true);
  p.stores.push_back(s);
  return p;
}
}  // namespace

TEST_CASE("mxu_dot: int8 dot-product chains become WS or OS MXU blocks, wider data stays on the VPU") {
  for (auto [terms, scale, os] : {std::tuple{4, 1, false}, std::tuple{8, 1, true}}) {
    TileProgram p = dot_program(terms, scale);
    CHECK(fuse_mxu_dots(p, {}) == 1);  // one chain
    const TileNode& root = p.nodes[p.stores[0].value];
    REQUIRE(root.op == Op::MXU_DOT);
    const MxuDot& m = p.mxu[root.mxu];
    CHECK(m.os == os);  // one K-slice: 4 WS dispatches beat OS's read-back; two slices: OS
    CHECK(m.dispatches.size() == (os ? 2u : 4u));
  }
  TileProgram wide = dot_program(8, 40);  // 40 * 3 = 120 fits, but 40 * -7 does not
  size_t nodes = wide.nodes.size();
  CHECK(fuse_mxu_dots(wide, {}) == 0);  // constants are checked when compiled: not a candidate
  CHECK(wide.mxu.empty());
  CHECK(wide.nodes.size() == nodes);
  CHECK(wide.nodes[wide.stores[0].value].op == Op::ADD);
}

TEST_CASE("mxu_dot: element factors are checked at launch time, so a chain can be vetoed by number") {
  // x[k] = buffer 0 element 4*(l/4) + k (shared by each row group), y[k] = a constant column factor
  auto elements = [](TileProgram& p) {
    for (TileNode& n : p.nodes) {
      if (n.op != Op::LOAD) continue;
      LeafLanes& lanes = p.lanes(n);
      if (lanes[0].bits == lanes[1].bits)  // the x leaves vary by row only
        for (int l = 0; l < kLanes; ++l) lanes[l] = LeafLane{0, int32_t(lanes[l].bits) + 1000};
    }
  };
  TileProgram p = dot_program(8, 1);
  elements(p);
  CHECK(fuse_mxu_dots(p, {}, 5) == 6);  // chains are numbered from the first number given
  REQUIRE(p.mxu.size() == 1);
  CHECK(p.mxu[0].chains == std::vector<int>{5});
  REQUIRE(p.mxu[0].os);  // activation lane r of slice 0 is row r's element of term 0
  CHECK(p.mxu[0].acts[0][0].src == LeafLane{0, 1000});
  CHECK(p.mxu[0].acts[0][1].src == LeafLane{0, 1001});
  TileProgram vetoed = dot_program(8, 1);
  elements(vetoed);
  CHECK(fuse_mxu_dots(vetoed, {}, 5, Choices{{5}}) == 6);
  CHECK(vetoed.mxu.empty());
}

TEST_CASE("mxu_floor: an OS block's floor, term by term from hardware.md") {
  // A 4x4 block of 8 terms: two OS dispatches of kLen 4, all four matrix rows live.
  TileProgram p = dot_program(8, 1);
  REQUIRE(fuse_mxu_dots(p, {}) == 1);
  REQUIRE(p.mxu.size() == 1);
  const MxuDot& m = p.mxu[0];
  REQUIRE((m.os && m.dispatches.size() == 2 && m.weights.size() == 2));
  // §2.3: an OS dispatch of kLen 4 is Done at T+K'+kLen+rows+cols+3 = T+19, and the MXU does one at a time.
  const int64_t intervals = 2 * 19;
  // Records, 2 cycles each (§4.4's 2R): its program (2 dispatches, 4 LOAD_MXU_MATRIX_ROW, PSUM_WRITE and 3
  // PSUM_ACCUMULATE_ROW, PSUM_READ), 2 weight tiles, 8 activation rows at a quarter (four blocks share them),
  // and the STORE.
  const int64_t records = 2 * ((2 + 4 + 4 + 1) + 2 + 8 / 4 + 1);
  // The output line (M), and the four matrix reads (2 cycles each, §2.7), under which no dispatch runs.
  CHECK(mxu_floor(m) == intervals + records + 1 + 4 * 2);
}

TEST_CASE(
    "lowering: an OS block's dispatches run under the stacking, epilogue and store of the block before") {
  // Two chains of 8 terms (two OS K-slices each), each + 5 and stored: the second block's first dispatch
  // comes right after the first block's matrix reads, then the first block's PSUM stacking, its ADD and STORE
  // before the second block's second dispatch; and the MXU waits for no SXU work: fewer cycles than one block
  // after the other.
  auto program = [](int chains) {
    TileProgram p;
    for (int c = 0; c < chains; ++c) {
      TileProgram one = dot_program(8, 1);
      const int base = int(p.nodes.size()), leaves = int(p.leaves.size());
      for (TileNode n : one.nodes) {
        for (int* o : {&n.a, &n.b, &n.c})
          if (*o >= 0) *o += base;
        if (n.leaf >= 0) n.leaf += leaves;
        p.nodes.push_back(n);
      }
      p.leaves.insert(p.leaves.end(), one.leaves.begin(), one.leaves.end());
      TileNode five{Op::LOAD, DType::kI32};
      for (auto& l : p.lanes(five)) l.bits = 5;
      p.nodes.push_back(five);
      p.nodes.push_back(
          TileNode{Op::ADD, DType::kI32, DType::kI32, base + one.stores[0].value, int(p.nodes.size()) - 1});
      TileStore s{0, {}, {}, int(p.nodes.size()) - 1};
      for (int l = 0; l < kLanes; ++l) s.index[l] = 16 * c + l;
      s.active.fill(true);
      p.stores.push_back(s);
    }
    CHECK(fuse_mxu_dots(p, {}) == chains);
    return p;
  };
  std::vector<Tile> consts;
  TileProgram two_chains = program(2), one_chain = program(1);
  const std::vector<Launch> two = lower(two_chains, {}, consts);
  REQUIRE(two.size() == 1);
  std::vector<std::string> ops;
  for (const Instr& in : two[0].program) ops.push_back(kSxuOps[in.op].name);
  auto at = [&](const char* op, int nth) {
    int seen = 0;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i] == op && seen++ == nth) return int(i);
    return -1;
  };
  const int second_block = at("DISPATCH_MXU_OS", 1), stacking = at("PSUM_WRITE", 0);
  REQUIRE(second_block >= 0);
  CHECK(ops[second_block - 1] == "LOAD_MXU_MATRIX_ROW");  // right after the first block's rows
  CHECK(stacking > second_block);
  CHECK(at("STORE_VREG", 0) < at("DISPATCH_MXU_OS_ACCUMULATE", 1));  // its store before the second slice
  const std::vector<Launch> one = lower(one_chain, {}, consts);
  CHECK(estimated_cycles(two, {}) < 2 * estimated_cycles(one, {}));
}

TEST_CASE("IR: an int64 CAST is taken as a 32-bit element index only where INDEX uses it") {
  const std::string head =
      "KERNEL k\nCONST idx 0 4\nCAST i32 1 0\nPARAM i32 1 1 0 GLOBAL 0 0\nCONST idx 0 0\nCAST i32 1 3\n"
      "INDEX i32 2 2 4\nLOAD i32 1 5\nCAST i64 1 6\n";
  Kernel k = parse_kernel(head + "INDEX i32 2 2 7\nLOAD i32 1 8\nSTORE void 2 5 9\nSINK void 1 10\n");
  CHECK(k.nodes[7].dtype == DType::kI32);
  CHECK(k.nodes[7].dtype_text == "i64");
  // as a value (here added to another, or stored), int64 has no lanes
  CHECK_THROWS_AS(parse_kernel(head + "ADD i64 2 7 7\nSINK void 1 8\n"), Unsupported);
  CHECK_THROWS_AS(parse_kernel(head + "STORE void 2 5 7\nSINK void 1 8\n"), Unsupported);
  // and it must come from a 32-bit (or narrower) integer
  CHECK_THROWS_AS(parse_kernel("KERNEL k\nCONST f32 0 0x1p+0\nCAST i64 1 0\nSINK void 1 1\n"), Unsupported);
}

TEST_CASE("IR: a buffer whose dtype has no lanes is refused before any lane is copied") {
  // fuzz_compile: a PARAM of dtype idx (8 bytes) made the scatter copy 8 bytes out of a 32-bit lane
  CHECK_THROWS_WITH(
      CompiledKernel("KERNEL k\nCONST idx 0 4\nCAST i32 1 0\nPARAM idx 1 1 0 GLOBAL 0 0\n"
                     "CONST idx 0 0\nCAST i32 1 3\nINDEX idx 2 2 4\nSTORE void 2 5 4\nSINK void 1 6\n"),
      Contains("cannot lower PARAM on idx in kernel k"));
  // a scalar variable stays an index value
  CHECK_NOTHROW(parse_kernel("KERNEL k\nPARAM idx 0 0 DEFINE_VAR 1 9\nSINK void 1 0\n"));
}

TEST_CASE("tracing: a chunk past the node limit is Unsupported, not an exhausted host") {
  // The muladd chunk traces 4 nodes per lane-parallel point (two loads, MUL, ADD with its constant).
  Kernel k = parse_kernel(muladd_ir(16));
  TileProgram p;
  CHECK(Tracer(k, {}, {16, 16, 16}, TraceLimits{64, 64}).trace_chunk(0, p));
  TileProgram q;
  CHECK_THROWS_WITH(Tracer(k, {}, {16, 16, 16}, TraceLimits{64, 2}).trace_chunk(0, q),
                    Contains("kernel muladd") && Contains("more than 2 tile operations"));
}

TEST_CASE(
    "tracing in parts: a long reduction stops at a loop iteration's end and resumes from pinned tiles") {
  Kernel k = parse_kernel(test::kSum16Ir);  // one output, an accumulator register over 16 terms
  Tracer t(k, {}, {1, 16}, TraceLimits{5, 64});
  TileProgram p;
  int parts = 1, kept = -1;
  auto reads = [&](int pin) {
    return std::any_of(p.nodes.begin(), p.nodes.end(), [&](const TileNode& n) { return n.pinned == pin; });
  };
  while (!t.trace_chunk(0, p)) {
    // a part ends in keeps of its live values: here the accumulator (and its register's first value)
    REQUIRE(!p.stores.empty());
    // in two banks by turns (numbers 3i+1, 3i+2): a part reads the bank the cut before it filled
    const int pin = p.stores.back().pin;
    CHECK(pin % 3 == 1 + (parts - 1) % 2);
    if (kept >= 0) CHECK(reads(kept));
    kept = pin;
    CHECK(p.nodes.size() <= 5 + 4);  // past the limit only by the iteration that reached it
    p.clear();
    ++parts;
    REQUIRE(parts < 16);
  }
  CHECK(parts > 2);
  // the last part reads the last kept accumulator as a pinned leaf and stores the sum to buffer 0
  CHECK(reads(kept));
  REQUIRE(!p.stores.empty());
  CHECK(p.stores.back().buf == 0);
  CHECK(p.stores.back().pin < 0);
}

TEST_CASE("tracing in parts: a long loop ends parts early where few values are live, a short one does not") {
  Kernel k = parse_kernel(test::kSum16Ir);  // one accumulator live across a loop of 16 iterations
  auto parts = [&](size_t early_cut_loop, int early_cut_live) {
    TraceLimits limits;  // far from the hard limit: only early cuts
    limits.early_cut_nodes = 5;
    limits.early_cut_loop = early_cut_loop;
    limits.early_cut_live = early_cut_live;
    Tracer t(k, {}, {1, 16}, limits);
    TileProgram p;
    int n = 1;
    for (; !t.trace_chunk(0, p); ++n) REQUIRE(n < 16);
    return n;
  };
  CHECK(parts(16, 16) > 2);        // the loop's 16 iterations make it long enough
  CHECK(parts(1 << 20, 16) == 1);  // a short loop lowers whole
  CHECK(parts(16, 0) == 1);        // more values live than an early cut keeps
}

namespace {
// out[i] = sum over r < terms of WHERE(test, a[16r + i], 0) in a register accumulator: `test` is r < k (known
// per chunk, the same in every lane) or i < k (known per lane).
std::string masked_sum_ir(bool f32, int terms, int k, bool per_lane) {
  const std::string t = f32 ? "f32" : "i32", zero = f32 ? "0x0p+0" : "0";
  return "KERNEL masked_sum\nCONST idx 0 16\nCONST idx 0 256\nCONST idx 0 " + std::to_string(terms) +  // 0-2
         "\nCONST i32 0 0\nCONST i32 0 16\nCONST i32 0 " + std::to_string(k) + "\nCONST " + t + " 0 " + zero +
         "\nPARAM " + t + " 1 0 0 GLOBAL 0 0\nPARAM " + t + " 1 1 1 GLOBAL 0 0\nBUFFER " + t +
         " 1 2 REG\n" +                                                                         // 3-9
         "RANGE i32 1 0 0 WEAK\nINDEX " + t + " 2 9 3\nSTORE void 2 11 6\n" +                   // 10-12
         "RANGE i32 1 2 1 REDUCE\nMUL i32 2 13 4\nADD i32 2 14 10\nINDEX " + t + " 2 8 15\n" +  // 13-16
         "LOAD " + t + " 1 16\nCMPLT bool 2 " + (per_lane ? "10" : "13") + " 5\nWHERE " + t +
         " 3 18 17 6\n" +  // 17-19
         "AFTER " + t + " 3 9 12 13\nINDEX " + t + " 2 20 3\nLOAD " + t + " 1 21\nADD " + t +
         " 2 22 19\n" +                                                                              // 20-23
         "STORE void 2 21 23\nEND void 2 24 13\nAFTER " + t + " 2 9 25\nINDEX " + t + " 2 26 3\n" +  // 24-27
         "LOAD " + t + " 1 27\nINDEX " + t +
         " 2 7 10\nSTORE void 2 29 28\nEND void 2 30 10\nSINK void 1 31\n";
}
int count(const TileProgram& p, Op op) {
  return int(std::count_if(p.nodes.begin(), p.nodes.end(), [&](const TileNode& n) { return n.op == op; }));
}
}  // namespace

TEST_CASE("tracer: a select on a condition known in every lane is its source, and x + 0 is x") {
  for (bool f32 : {false, true}) {
    INFO((f32 ? "f32" : "i32"));
    TileProgram p;
    Kernel k = parse_kernel(masked_sum_ir(f32, 16, 5, false));
    Tracer t(k, {}, {16, 256, 16});
    REQUIRE(t.trace_chunk(0, p));
    CHECK(count(p, Op::WHERE) == 0);  // r < 5 is all true or all false in each term
    // int: the first term's 0 + a is a; float: 0.0 + a is kept (a may be -0.0, and +0.0 + -0.0 is +0.0), and
    // the sums after it never hold -0.0, so adding the failed terms' +0.0 is dropped
    CHECK(count(p, Op::ADD) == (f32 ? 5 : 4));
    TileProgram lanes;
    Kernel per_lane = parse_kernel(masked_sum_ir(f32, 16, 5, true));
    Tracer t2(per_lane, {}, {16, 256, 16});
    REQUIRE(t2.trace_chunk(0, lanes));
    CHECK(count(lanes, Op::WHERE) == 16);  // i < 5 differs between lanes: every term keeps its select
  }
}

TEST_CASE(
    "a reduction's terms that fail their index test in every lane cost nothing, and results stay exact") {
  for (bool f32 : {false, true}) {
    INFO((f32 ? "f32" : "i32"));
    auto run = [&](int terms, int k) {
      CompiledKernel kernel(masked_sum_ir(f32, terms, k, false));
      std::vector<DeviceBuffer> bufs{DeviceBuffer(16 * 4), DeviceBuffer(256 * 4)};
      auto* a = reinterpret_cast<uint32_t*>(bufs[1].data());
      for (int e = 0; e < 256; ++e) {
        const float x = float(e % 37) * 0.37f - 5.0f;
        a[e] = uint32_t(e * 7919 - 900000);
        if (f32) std::memcpy(&a[e], &x, 4);
      }
      KernelStats s = kernel.run(bufs, {}, false);
      for (int i = 0; i < 16; ++i) {
        uint32_t want = 0;
        float fsum = 0.0f;
        for (int r = 0; r < std::min(terms, k); ++r) {
          float x;
          std::memcpy(&x, &a[16 * r + i], 4);
          fsum += x;  // the VPU's FADD: IEEE RNE, in term order
          want += a[16 * r + i];
        }
        if (f32) std::memcpy(&want, &fsum, 4);
        CHECK(reinterpret_cast<uint32_t*>(bufs[0].data())[i] == want);
      }
      return s.cycles;
    };
    // 16 terms of which 5 pass cost what 5 terms that all pass cost: the same tile program
    CHECK(run(16, 5) == run(5, 16));
    CHECK(run(16, 0) < run(16, 5));
  }
}

namespace {
// out[i] = init + sum over r1 < outer, r2 < inner of WHERE(r2 < passing AND guard, a[16·r2 + i], 0),
// accumulated in a register; the guard, computed before the inner loop, is r1 < k (the same in every lane) or
// i < k (per lane).
std::string guarded_sum_ir(bool f32, int outer, int inner, int k, const std::string& init, bool per_lane,
                           int passing = 2) {
  const std::string t = f32 ? "f32" : "i32", zero = f32 ? "0x0p+0" : "0";
  return "KERNEL guarded_sum\nCONST idx 0 16\nCONST idx 0 256\nCONST idx 0 " + std::to_string(outer) +
         "\nCONST idx 0 " + std::to_string(inner) + "\nCONST i32 0 0\nCONST i32 0 16\nCONST i32 0 " +
         std::to_string(k) + "\nCONST i32 0 " + std::to_string(passing) + "\nCONST " + t + " 0 " + zero +
         "\nCONST " + t + " 0 " + init +  // 0-9
         "\nPARAM " + t + " 1 0 0 GLOBAL 0 0\nPARAM " + t + " 1 1 1 GLOBAL 0 0\nBUFFER " + t + " 1 5 REG\n" +
         "RANGE i32 1 0 0 WEAK\nINDEX " + t + " 2 12 4\nSTORE void 2 14 9\n" +          // 10-15
         "RANGE i32 1 2 1 REDUCE\nCMPLT bool 2 " + (per_lane ? "13" : "16") + " 6\n" +  // 16-17
         "RANGE i32 1 3 2 REDUCE\nAFTER " + t + " 4 12 15 16 18\nINDEX " + t + " 2 19 4\nLOAD " + t +
         " 1 20\nMUL i32 2 18 5\nADD i32 2 22 13\nINDEX " + t + " 2 11 23\nLOAD " + t + " 1 24\n" +   // 18-25
         "CMPLT bool 2 18 7\nAND bool 2 26 17\nWHERE " + t + " 3 27 25 8\nADD " + t + " 2 21 28\n" +  // 26-29
         "STORE void 2 20 29\nEND void 2 30 18\nEND void 2 31 16\nAFTER " + t + " 2 12 32\nINDEX " + t +
         " 2 33 4\nLOAD " + t + " 1 34\nINDEX " + t + " 2 10 13\nSTORE void 2 36 35\nEND void 2 37 13\n" +
         "SINK void 1 38\n";  // 30-39
}
}  // namespace

TEST_CASE("tracer: a reduction loop whose every term fails a guard computed before it is skipped, exactly") {
  const int outer = 6, inner = 4;
  for (bool f32 : {false, true}) {
    INFO((f32 ? "f32" : "i32"));
    auto skipped = [&](int k, const std::string& init, bool per_lane) {
      TileProgram p;
      Kernel kernel = parse_kernel(guarded_sum_ir(f32, outer, inner, k, init, per_lane));
      Tracer t(kernel, {}, {16, 256});
      REQUIRE(t.trace_chunk(0, p));
      return t.loops_skipped();
    };
    CHECK(skipped(2, "0", false) == outer - 2);  // r1 = 2..5: every term's r1 < 2 fails
    CHECK(skipped(0, "0", false) == outer);
    CHECK(skipped(5, "0", true) == 0);  // i < 5 holds in some lanes: the loops run
    // -0.0 + +0.0 is +0.0: the first loop changes the accumulator, so it runs; the next ones find +0.0
    if (f32) CHECK(skipped(0, "-0x0p+0", false) == outer - 1);

    auto run = [&](int k, const std::string& init, bool per_lane, int loops) {
      CompiledKernel kernel(guarded_sum_ir(f32, loops, inner, k, init, per_lane));
      std::vector<DeviceBuffer> bufs{DeviceBuffer(16 * 4), DeviceBuffer(256 * 4)};
      auto* a = reinterpret_cast<uint32_t*>(bufs[1].data());
      for (int e = 0; e < 256; ++e) {
        const float x = e == 3 ? -0.0f : float(e % 29) * 0.31f - 4.0f;
        a[e] = uint32_t(e * 7919 - 900000);
        if (f32) std::memcpy(&a[e], &x, 4);
      }
      KernelStats s = kernel.run(bufs, {}, false);
      const float finit = init[0] == '-' ? -0.0f : 0.0f;
      for (int i = 0; i < 16; ++i) {
        float fsum = finit;
        uint32_t want = 0;
        for (int r1 = 0; r1 < loops; ++r1)
          for (int r2 = 0; r2 < inner; ++r2) {
            const bool pass = r2 < 2 && (per_lane ? i < k : r1 < k);
            float x = 0.0f;
            if (pass) std::memcpy(&x, &a[16 * r2 + i], 4);
            fsum += x;  // the VPU's FADD: IEEE RNE, in term order, +0.0 for a failed term
            want += pass ? a[16 * r2 + i] : 0;
          }
        if (f32) std::memcpy(&want, &fsum, 4);
        CHECK(reinterpret_cast<uint32_t*>(bufs[0].data())[i] == want);
      }
      return s.cycles;
    };
    // loops whose terms all fail cost nothing: the same program as the loops that pass alone
    CHECK(run(2, "0", false, outer) == run(2, "0", false, 2));
    run(5, "0", true, outer);
    if (f32) run(0, "-0x0p+0", false, outer);  // lane 3 of a[] is -0.0; the result is +0.0 in every lane
  }
}

TEST_CASE(
    "tracing in parts: parts end at whole iterations of the outer loop, so they repeat and are replayed") {
  // every term passes: an inner iteration traces a leaf and an ADD, 2 nodes, 6 per outer iteration; a part
  // cut at any inner iteration's end past 9 nodes would hold 4 (a pinned leaf and 4 iterations)
  const int outer = 12, inner = 3;
  const std::string ir = guarded_sum_ir(false, outer, inner, 16, "0", true, inner);
  const TraceLimits limits{9, 64};
  Kernel k = parse_kernel(ir);
  Tracer t(k, {}, {16, 256}, limits);
  TileProgram p;
  std::vector<int> adds;  // per part
  while (!t.trace_chunk(0, p)) {
    adds.push_back(count(p, Op::ADD));
    p.clear();
  }
  REQUIRE(adds.size() >= 3);
  for (size_t i = 1; i < adds.size(); ++i) {
    CHECK(adds[i] % inner == 0);  // whole outer iterations: an inner loop's iteration alone is too small
    CHECK(adds[i] == adds[1]);
  }

  Plan plan = compile(k, {}, {}, {16, 256}, {}, {}, limits);
  CHECK(std::any_of(plan.runs.begin(), plan.runs.end(), [](const LaunchRun& r) { return r.shift >= 0; }));
  // Middle parts differ only in the bank of pinned tiles they read and the one they fill: the second one runs
  // the first one's launches with the banks exchanged, so only the first, one middle and the last compile.
  CHECK(std::any_of(plan.runs.begin(), plan.runs.end(), [](const LaunchRun& r) { return r.swap_banks; }));
  CHECK(std::count_if(plan.runs.begin(), plan.runs.end(), [](const LaunchRun& r) { return r.shift < 0; }) <=
        3);
  CompiledKernel kernel(ir, {}, limits);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(16 * 4), DeviceBuffer(256 * 4)};
  auto* a = reinterpret_cast<int32_t*>(bufs[1].data());
  for (int e = 0; e < 256; ++e) a[e] = e * 7919 - 900000;
  kernel.run(bufs, {}, false);
  for (int i = 0; i < 16; ++i)
    CHECK(reinterpret_cast<int32_t*>(bufs[0].data())[i] == outer * (a[i] + a[16 + i] + a[32 + i]));
}

namespace {
// out[i] = b[i] ^ u32(i + offset), u32: the XOR's second operand is a constant that differs across lanes
// and moves with the chunk.
std::string counter_ir(int n, int64_t offset) {
  return "KERNEL counter\nCONST idx 0 " + std::to_string(n) +
         "\n"                                                        // 0
         "PARAM u32 1 0 0 GLOBAL 0 0\nPARAM u32 1 0 1 GLOBAL 0 0\n"  // 1 out, 2 b
         "RANGE i32 1 0 0 WEAK\nINDEX u32 2 2 3\nLOAD u32 1 4\n"     // 3, 4, 5
         "CAST u32 1 3\nCONST u32 0 " +
         std::to_string(offset) +
         "\n"                                                                  // 6, 7
         "ADD u32 2 6 7\nXOR u32 2 5 8\nINDEX u32 2 1 3\nSTORE void 2 10 9\n"  // 8..11
         "END void 2 11 3\nSINK void 1 12\n";
}
// out[i] = b[i] + k for i < n, int32, where k is computed before the loop from a[0] and a[1]: `((a[0] * 3) ^
// 5) + a[1]` (three operations), or just a[0].
std::string prefix_ir(int n, bool computed) {
  std::string k = computed
                      ? "CONST i32 0 3\nMUL i32 2 7 13\nCONST i32 0 5\nXOR i32 2 14 15\nADD i32 2 16 11\n"
                      : "NOOP void 0\nNOOP void 0\nNOOP void 0\nNOOP void 0\nAFTER i32 1 7\n";
  return "KERNEL prefix\nCONST idx 0 " + std::to_string(n) +
         "\n"                                                                                    // 0
         "PARAM i32 1 0 0 GLOBAL 0 0\nPARAM i32 1 0 1 GLOBAL 0 0\nPARAM i32 1 0 2 GLOBAL 0 0\n"  // 1 out, 2
                                                                                                 // b, 3 a
         "CONST idx 0 0\nCAST i32 1 4\nINDEX i32 2 3 5\nLOAD i32 1 6\n"                          // 4..7 a[0]
         "CONST idx 0 1\nCAST i32 1 8\nINDEX i32 2 3 9\nLOAD i32 1 10\n"                         // 8..11 a[1]
         "NOOP void 0\n" +                                                                       // 12
         k +                                                                                     // 13..17: k
         "RANGE i32 1 0 0 WEAK\nINDEX i32 2 2 18\nLOAD i32 1 19\nADD i32 2 20 17\n"              // 18..21
         "INDEX i32 2 1 18\nSTORE void 2 22 21\nEND void 2 23 18\nSINK void 1 24\n";
}
// Occurrences of `text` (an instruction's name and its parenthesis, say) in a run's launches.
int count_in(const std::vector<std::string>& launches, const std::string& text) {
  int n = 0;
  for (const std::string& tasm : launches)
    for (size_t at = tasm.find(text); at != std::string::npos; at = tasm.find(text, at + 1)) ++n;
  return n;
}
// out[c * w + i] = x[c * w + i] * t(s[c]) for c < channels, i < w (float32), where t is `ops` operations on
// the channel's s[c]: t = s; t = t * 1.5 + 0.25; ... (a batch norm's per-channel scale, say). With
// `rewrite`, the kernel also stores s[c] back to s, which makes s no source of kept values.
std::string channel_ir(int channels, int w, int ops, bool rewrite = false) {
  std::string ir = "KERNEL channel\nCONST idx 0 " + std::to_string(channels * w) +
                   "\n"                                                        // 0
                   "PARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\n"  // 1 out, 2 x
                   "CONST idx 0 " +
                   std::to_string(channels) +
                   "\nPARAM f32 1 3 2 GLOBAL 0 0\n"  // 3, 4 s
                   "CONST f32 0 0x1.8p+0\nCONST f32 0 0x1p-2\nCONST idx 0 " +
                   std::to_string(w) +
                   "\n"                                                      // 5, 6, 7
                   "RANGE i32 1 3 0 WEAK\nINDEX f32 2 4 8\nLOAD f32 1 9\n";  // 8 c, 9, 10 s[c]
  if (rewrite) ir += "STORE void 2 9 10\n";                                  // 11
  int t = 10, at = rewrite ? 12 : 11;
  for (int k = 0; k < ops; ++k, ++at) {
    ir +=
        (k % 2 == 0 ? "MUL f32 2 " + std::to_string(t) + " 5\n" : "ADD f32 2 " + std::to_string(t) + " 6\n");
    t = at;
  }
  const int i = at;  // the inner loop and its element
  ir +=
      "RANGE i32 1 7 1 WEAK\n"  // i
      "MUL i32 2 8 7\nADD i32 2 " +
      std::to_string(i + 1) + " " + std::to_string(i) +                                       // i+1, i+2
      "\nINDEX f32 2 2 " + std::to_string(i + 2) + "\nLOAD f32 1 " + std::to_string(i + 3) +  // i+3, i+4
      "\nMUL f32 2 " + std::to_string(i + 4) + " " + std::to_string(t) +                      // i+5
      "\nINDEX f32 2 1 " + std::to_string(i + 2) + "\nSTORE void 2 " + std::to_string(i + 6) + " " +
      std::to_string(i + 5) + "\nEND void 2 " + std::to_string(i + 7) + " " + std::to_string(i) +
      "\nEND void 2 " + std::to_string(i + 8) + " 8\nSINK void 1 " + std::to_string(i + 9) + "\n";
  return ir;
}
}  // namespace

TEST_CASE("tracer: a channel's value of enough operations is kept per element and read by later batches") {
  const int channels = 6, w = 16 * 12;
  struct Case {
    int ops;
    bool rewrite;
    bool kept;
  };
  std::vector<std::pair<int, uint64_t>> fmuls_cycles;
  // Worth keeping; the same with s also written by the kernel; too short to keep (ElementMemos::kMinCost).
  for (Case c :
       {Case{10, false, true}, Case{10, true, false}, Case{ElementMemos::kMinCost - 2, false, false}}) {
    INFO(c.ops << " operations on s[c]" << (c.rewrite ? ", s written back" : ""));
    const std::string text = channel_ir(channels, w, c.ops, c.rewrite);
    Plan plan = compile(parse_kernel(text), {}, {}, {channels * w, channels * w, channels});
    CHECK(plan.memo_sizes == (c.kept ? std::vector<int64_t>{channels} : std::vector<int64_t>{}));

    CompiledKernel k(text);
    std::vector<DeviceBuffer> bufs{DeviceBuffer(channels * w * 4), DeviceBuffer(channels * w * 4),
                                   DeviceBuffer(channels * 4)};
    auto* x = reinterpret_cast<float*>(bufs[1].data());
    auto* s = reinterpret_cast<float*>(bufs[2].data());
    for (int ch = 0; ch < channels; ++ch) s[ch] = 0.37f * float(ch) - 1.1f;
    for (int e = 0; e < channels * w; ++e) x[e] = float(e % 97) * 0.013f - 0.5f;
    KernelStats st = k.run(bufs, {}, true);
    int wrong = 0;
    for (int ch = 0; ch < channels; ++ch) {
      float t = s[ch];  // float32 add and mul are IEEE on the VPU and the host alike
      for (int j = 0; j < c.ops; ++j) t = j % 2 == 0 ? t * 1.5f : t + 0.25f;
      for (int e = ch * w; e < (ch + 1) * w; ++e) {
        const float want = x[e] * t;
        wrong += std::memcmp(&reinterpret_cast<float*>(bufs[0].data())[e], &want, 4) != 0;
      }
    }
    CHECK(wrong == 0);
    fmuls_cycles.push_back({count_in(st.tasm, "FMUL("), st.cycles});
  }
  // Kept, t is computed in a channel's first batches only; read from s, in every batch (lane packing puts
  // several chunks' t side by side in one tile, so not one per chunk).
  INFO("FMULs and cycles, kept: " << fmuls_cycles[0].first << ", " << fmuls_cycles[0].second
                                  << "; s written: " << fmuls_cycles[1].first << ", "
                                  << fmuls_cycles[1].second);
  const int chunks = channels * w / 16;  // one FMUL each is x * t
  CHECK(2 * (fmuls_cycles[0].first - chunks) < fmuls_cycles[1].first - chunks);
  CHECK(fmuls_cycles[0].second < fmuls_cycles[1].second);
}

TEST_CASE(
    "replay: an integer constant that differs across lanes moves with the chunk, so its batches replay") {
  const int n = 16 * 2000;
  const int64_t offset = 4294967296 - 16000;  // u32 wraps halfway through
  Plan plan = compile(parse_kernel(counter_ir(n, offset)), {}, {}, {n, n});
  REQUIRE(counter_slot(std::vector<int64_t>{n, n}) == 2);
  int shifted = 0;
  for (const LaunchRun& r : plan.runs) {
    if (r.shift < 0) continue;
    ++shifted;
    const std::vector<int64_t>& by = plan.shifts[r.shift];
    REQUIRE(by.size() == 3);
    CHECK(by[0] > 0);
    CHECK(by[0] == by[1]);
    CHECK(uint32_t(by[2]) == uint32_t(by[0]));  // the counter moves as the elements do (mod 2^32: it wraps)
  }
  INFO(plan.runs.size() << " runs");
  CHECK(shifted >= int(plan.runs.size()) - 3);

  CompiledKernel k(counter_ir(n, offset));
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
  auto* b = reinterpret_cast<uint32_t*>(bufs[1].data());
  for (int i = 0; i < n; ++i) b[i] = uint32_t(i) * 2654435761u;
  k.run(bufs, {}, false);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += reinterpret_cast<uint32_t*>(bufs[0].data())[i] != (b[i] ^ uint32_t(i + offset));
  CHECK(wrong == 0);
}

TEST_CASE(
    "tracer: a prefix without a loop is pinned when it computes more instructions than it keeps tiles") {
  const int n = 16 * 8;
  for (bool computed : {true, false}) {
    INFO((computed ? "k computed from a[0] and a[1]" : "k = a[0]"));
    Kernel ir = parse_kernel(prefix_ir(n, computed));
    Tracer t(ir, {}, {n, n, 2});
    TileProgram first, second;
    REQUIRE(t.trace_chunk(0, first));
    CHECK(t.pinned_prefix() == computed);
    REQUIRE(t.trace_chunk(1, second));
    CHECK(count(first, Op::MUL) == (computed ? 1 : 0));
    CHECK(count(second, Op::MUL) == 0);  // later chunks read the pinned k

    CompiledKernel k(prefix_ir(n, computed));
    std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(2 * 4)};
    auto* a = reinterpret_cast<int32_t*>(bufs[2].data());
    auto* b = reinterpret_cast<int32_t*>(bufs[1].data());
    a[0] = -123457;
    a[1] = 99;
    for (int i = 0; i < n; ++i) b[i] = i * 1000 - 7;
    k.run(bufs, {}, false);
    const int32_t key = computed ? ((a[0] * 3) ^ 5) + a[1] : a[0];
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += reinterpret_cast<int32_t*>(bufs[0].data())[i] != b[i] + key;
    CHECK(wrong == 0);
  }
}

TEST_CASE("tracer: a prefix of one op lowered to several instructions (a reciprocal) is pinned") {
  // out[i] = b[i] * (1 / a[0]) for i < n, float32: one computed node, one kept tile.
  const int n = 16 * 8;
  const std::string text =
      "KERNEL reciprocal\nCONST idx 0 " + std::to_string(n) +
      "\nPARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\n"               // 0, 1 out, 2 b
      "CONST idx 0 1\nPARAM f32 1 3 2 GLOBAL 0 0\n"                              // 3, 4 a
      "CONST idx 0 0\nCAST i32 1 5\nINDEX f32 2 4 6\nLOAD f32 1 7\n"             // 5..8 a[0]
      "RECIPROCAL f32 1 8\n"                                                     // 9
      "RANGE i32 1 0 0 WEAK\nINDEX f32 2 2 10\nLOAD f32 1 11\nMUL f32 2 12 9\n"  // 10..13
      "INDEX f32 2 1 10\nSTORE void 2 14 13\nEND void 2 15 10\nSINK void 1 16\n";
  Kernel ir = parse_kernel(text);
  Tracer t(ir, {}, {n, n, 1});
  TileProgram first, second;
  REQUIRE(t.trace_chunk(0, first));
  CHECK(t.pinned_prefix());
  REQUIRE(t.trace_chunk(1, second));
  CHECK(count(first, Op::RECIPROCAL) == 1);
  CHECK(count(second, Op::RECIPROCAL) == 0);  // later chunks read the pinned reciprocal

  CompiledKernel k(text);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(4)};
  auto* b = reinterpret_cast<float*>(bufs[1].data());
  const float a = 3.7f;
  std::memcpy(bufs[2].data(), &a, 4);
  for (int i = 0; i < n; ++i) b[i] = float(i) * 0.25f - 9.0f;
  KernelStats st = k.run(bufs, {}, true);
  CHECK(count_in(st.tasm, "FRECIP(") == 1);
  int wrong = 0;  // RECIPROCAL is within an ulp or two of 1/a (README), each product then rounded
  for (int i = 0; i < n; ++i)
    wrong += std::fabs(reinterpret_cast<float*>(bufs[0].data())[i] - b[i] / a) > 3e-7f * std::fabs(b[i] / a);
  CHECK(wrong == 0);
}

TEST_CASE(
    "tracer: a prefix of constants alone is not pinned, and later chunks start after it with its values") {
  // out[i] = b[i + (3 + 5)] * (2.5 * 4) for i < n, float32: the prefix folds to constants and makes no tile.
  const int n = 16 * 4;
  const std::string text =
      "KERNEL constants\nCONST idx 0 " + std::to_string(n) +
      "\nPARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\n"              // 0, 1 out, 2 b
      "CONST f32 0 0x1.4p+1\nCONST f32 0 0x1p+2\nMUL f32 2 3 4\n"               // 3..5: 10
      "CONST idx 0 3\nCONST idx 0 5\nADD idx 2 6 7\n"                           // 6..8: 8
      "RANGE i32 1 0 0 WEAK\nADD idx 2 9 8\nINDEX f32 2 2 10\nLOAD f32 1 11\n"  // 9..12
      "MUL f32 2 12 5\nINDEX f32 2 1 9\nSTORE void 2 14 13\nEND void 2 15 9\nSINK void 1 16\n";
  Kernel ir = parse_kernel(text);
  Tracer t(ir, {}, {n, n + 8});
  for (int64_t chunk = 0; chunk < n / 16; ++chunk) {
    TileProgram p;
    REQUIRE(t.trace_chunk(chunk, p));
    CHECK_FALSE(t.pinned_prefix());  // nothing to pin: no launch has to run before the next chunk
    CHECK(count(p, Op::MUL) == 1);   // b's element times the folded constant
    CHECK(std::none_of(p.stores.begin(), p.stores.end(), [](const TileStore& s) { return s.pin >= 0; }));
  }

  CompiledKernel k(text);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer((n + 8) * 4)};
  auto* b = reinterpret_cast<float*>(bufs[1].data());
  for (int i = 0; i < n + 8; ++i) b[i] = float(i) * 0.75f - 20.0f;
  k.run(bufs, {}, false);
  int wrong = 0;  // b[i + 8] * 10 is one rounding, the same on the VPU
  for (int i = 0; i < n; ++i) wrong += reinterpret_cast<float*>(bufs[0].data())[i] != b[i + 8] * 10.0f;
  CHECK(wrong == 0);
}

namespace {
// out[i] = x[i] / s for i < n, float32, where s = y[0] + ... + y[m-1] is summed before the loop over i
// (softmax's sum, say), or with `per_element`, out[i] = x[i] / y[i].
std::string quotient_ir(int n, int m, bool per_element) {
  const std::string divisor =
      per_element ? "INDEX f32 2 4 23\nLOAD f32 1 26\n" : "NOOP void 0\nNOOP void 0\n";
  return "KERNEL quotient\nCONST idx 0 " + std::to_string(n) +
         "\n"                                                        // 0
         "PARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\n"  // 1 out, 2 x
         "CONST idx 0 " +
         std::to_string(m) +
         "\nPARAM f32 1 3 2 GLOBAL 0 0\n"                                       // 3, 4 y
         "CONST idx 0 1\nBUFFER f32 1 5 REG\nCONST idx 0 0\nINDEX f32 2 6 7\n"  // 5..8: acc[0]
         "CONST f32 0 0x0p+0\nSTORE void 2 8 9\n"                               // 9, 10
         "RANGE i32 1 3 0 REDUCE\nINDEX f32 2 4 11\nLOAD f32 1 12\n"            // 11 j, 12, 13 y[j]
         "AFTER f32 3 6 10 11\nINDEX f32 2 14 7\nLOAD f32 1 15\n"               // 14..16 acc
         "ADD f32 2 16 13\nSTORE void 2 15 17\nEND void 2 18 11\n"              // 17..19
         "AFTER f32 2 6 19\nINDEX f32 2 20 7\nLOAD f32 1 21\n"                  // 20..22 s
         "RANGE i32 1 0 1 WEAK\nINDEX f32 2 2 23\nLOAD f32 1 24\n" +            // 23 i, 24, 25 x[i]
         divisor +                                                              // 26, 27: y[i]
         "FDIV f32 2 25 " +
         (per_element ? "27" : "22") +  // 28
         "\nINDEX f32 2 1 23\nSTORE void 2 29 28\nEND void 2 30 23\nSINK void 1 31\n";
}
}  // namespace

TEST_CASE("compiler: a divisor's half of exact division is computed where the divisor is, once") {
  const int n = 16 * 24, m = 8;
  for (bool per_element : {false, true}) {
    // Divisors of 1, 2^-130 (subnormal) or 2^100 times small integers: the divisor's scaling by a power of
    // two (float_sequences.cc div_scale) takes each of its three ways. Quotients are within the range where
    // the division rounds exactly (float_sequences.cc div_exact), or zeros, infinities and NaNs. The sum of
    // these integers is exact in any order.
    for (float unit : {1.0f, std::ldexp(1.0f, -130), std::ldexp(1.0f, 100)}) {
      INFO((per_element ? "x[i] / y[i]" : "x[i] / sum(y)") << ", unit " << unit);
      CompiledKernel k(quotient_ir(n, m, per_element));
      std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
      auto* x = reinterpret_cast<float*>(bufs[1].data());
      auto* y = reinterpret_cast<float*>(bufs[2].data());
      const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
      uint32_t seed = 12345;
      for (int i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        const float mantissa = float(seed >> 8) / float(1 << 23) - 1.0f;  // [-1, 1)
        x[i] = i < 5 ? specials[i] : std::ldexp(mantissa, int(seed % 41) - 20) * unit;
        y[i] = per_element ? (i % 17 == 3 ? specials[i % 5] : float(int(seed % 61) - 30) * unit)
                           : (i < m ? float(i % 2 ? 3 : 6) * unit : 0.0f);
      }
      float s = 0.0f;
      for (int j = 0; j < m; ++j) s += y[j];
      KernelStats st = k.run(bufs, {}, true);
      int wrong = 0;
      for (int i = 0; i < n; ++i) {
        const float want = x[i] / (per_element ? y[i] : s), got = reinterpret_cast<float*>(bufs[0].data())[i];
        wrong += std::isnan(want) ? !std::isnan(got) : std::memcmp(&got, &want, 4) != 0;
      }
      CHECK(wrong == 0);
      const int frecips = count_in(st.tasm, "FRECIP(");
      // The sum's reciprocal once, in the uniform prefix; a divisor of each element's own, once per tile. And
      // in each tile's DIV_EXACT, one more: of the power of two that scales its quotient.
      CHECK(frecips == (per_element ? n / 16 : 1) + n / 16);
    }
  }
}

namespace {
// out[i] = sqrt(x[i]) for n float32 x, as tinygrad renders x.sqrt() when the backend declares SQRT.
std::string sqrt_ir(int n) {
  return "KERNEL root\nCONST idx 0 " + std::to_string(n) +
         "\n"                                                        // 0
         "PARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\n"  // 1 out, 2 x
         "RANGE i32 1 0 0 WEAK\nINDEX f32 2 2 3\nLOAD f32 1 4\n"     // 3 i, 4, 5 x[i]
         "SQRT f32 1 5\nINDEX f32 2 1 3\nSTORE void 2 7 6\n"         // 6..8
         "END void 2 8 3\nSINK void 1 9\n";
}
}  // namespace

TEST_CASE("compiler: SQRT is IEEE's square root, rounded alike, over the whole float range") {
  const int n = 16 * 64;
  CompiledKernel k(sqrt_ir(n));
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
  auto* x = reinterpret_cast<float*>(bufs[1].data());
  // Zeros of both signs, infinities, a NaN, negatives (NaN), the smallest and largest subnormals and
  // normals; then random bits over every exponent, the subnormals among them (the 2^24 pre-scaling).
  const float edges[] = {0.0f,
                         -0.0f,
                         INFINITY,
                         -INFINITY,
                         NAN,
                         -1.0f,
                         -1e-45f,
                         std::ldexp(1.0f, -149),
                         std::ldexp(1.0f - std::ldexp(1.0f, -23), -126),
                         std::ldexp(1.0f, -126),
                         FLT_MAX,
                         1.0f,
                         2.0f,
                         4.0f,
                         0.5f,
                         16777216.0f};
  uint32_t seed = 99;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = seed & 0x7FFFFFFFu;
    if (i % 4 == 0) bits &= 0x007FFFFFu;  // a subnormal (or zero)
    std::memcpy(&x[i], &bits, 4);
    if (i < int(std::size(edges))) x[i] = edges[i];
  }
  k.run(bufs, {}, false);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const float want = std::sqrt(x[i]), got = reinterpret_cast<float*>(bufs[0].data())[i];
    wrong += std::isnan(want) ? !std::isnan(got) : std::memcmp(&got, &want, 4) != 0;
  }
  CHECK(wrong == 0);
}

TEST_CASE("lowering: combinational VPU ops run in the background, and a launch's constants share a palette") {
  // sqrt asks for about twenty constants a tile (masks, exponent offsets, the estimate's magic,
  // Newton's 1.5).
  const int n = 16 * 64;
  CompiledKernel k(sqrt_ir(n));
  std::vector<DeviceBuffer> bufs{DeviceBuffer(n * 4), DeviceBuffer(n * 4)};
  auto* x = reinterpret_cast<float*>(bufs[1].data());
  for (int i = 0; i < n; ++i) x[i] = float(i) * 0.37f + 0.01f;
  KernelStats st = k.run(bufs, {}, true);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const float want = std::sqrt(x[i]), got = reinterpret_cast<float*>(bufs[0].data())[i];
    wrong += std::memcmp(&got, &want, 4) != 0;
  }
  CHECK(wrong == 0);
  // Every VPU op sqrt lowers to is combinational: each goes in the background (2 cycles, not 3).
  CHECK(count_in(st.tasm, "VPU_BG ") > 0);
  int palettes = 0;
  for (const std::string& launch : st.tasm) {
    std::istringstream lines(launch);
    int uniform = 0, broadcasts = 0;
    bool palette = false;
    for (std::string line; std::getline(lines, line);) {
      CHECK(line.rfind("VPU ", 0) != 0);  // no synchronous DISPATCH_VPU
      broadcasts += line.rfind("BROADCAST_SCALAR ", 0) == 0;
      if (line.rfind("VMEM[", 0) != 0) continue;
      std::istringstream values(line.substr(line.find('=') + 1, line.find('#') - line.find('=') - 1));
      std::vector<int64_t> v{std::istream_iterator<int64_t>(values), std::istream_iterator<int64_t>()};
      uniform += std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == v[0]; });
      palette = palette || std::find(v.begin(), v.end(), 0x5F3759DF) != v.end();  // the estimate's magic
    }
    // One constant tile of its own at most; the others are lanes of the palette, broadcast.
    CHECK(uniform <= 1);
    CHECK(palette == (broadcasts > 0));
    palettes += palette;
  }
  CHECK(palettes == int(st.tasm.size()));
}

namespace {
// out[0] = acc after acc = init; for j < m: acc = max(acc, max(max(max(x[4j], x[4j+1]), x[4j+2]), x[4j+3])),
// float32, as tinygrad's x.max() of 4m elements comes (a reduce unrolled by 4). `init`: a float literal.
std::string max_ir(int m, const std::string& init) {
  return "KERNEL fmax\nCONST idx 0 1\n"                                                         // 0
         "PARAM f32 1 0 0 GLOBAL 0 0\nPARAM f32 1 0 1 GLOBAL 0 0\nCONST idx 0 " +               // 1 out, 2 x
         std::to_string(m) +                                                                    // 3
         "\nCONST idx 0 1\nBUFFER f32 1 4 REG\nCONST idx 0 0\nINDEX f32 2 5 6\nCONST f32 0 " +  // 4..8
         init +
         "\nSTORE void 2 7 8\n"                                               // 9
         "RANGE i32 1 3 0 REDUCE\nCONST i32 0 4\nMUL i32 2 10 11\n"           // 10 j, 11, 12 4j
         "INDEX f32 2 2 12\nLOAD f32 1 13\n"                                  // 13, 14
         "CONST i32 0 1\nADD i32 2 12 15\nINDEX f32 2 2 16\nLOAD f32 1 17\n"  // 15..18
         "CONST i32 0 2\nADD i32 2 12 19\nINDEX f32 2 2 20\nLOAD f32 1 21\n"  // 19..22
         "CONST i32 0 3\nADD i32 2 12 23\nINDEX f32 2 2 24\nLOAD f32 1 25\n"  // 23..26
         "MAX f32 2 14 18\nMAX f32 2 27 22\nMAX f32 2 28 26\n"                // 27..29 the group's
         "AFTER f32 3 5 9 10\nINDEX f32 2 30 6\nLOAD f32 1 31\n"              // 30..32 acc
         "MAX f32 2 32 29\nSTORE void 2 31 33\nEND void 2 34 10\n"            // 33..35
         "AFTER f32 2 5 35\nINDEX f32 2 36 6\nLOAD f32 1 37\n"                // 36..38
         "INDEX f32 2 1 6\nSTORE void 2 39 38\nSINK void 1 40\n";             // 39..41
}
float tinygrad_max(float a, float b) { return a < b ? b : a; }  // a NaN b keeps a; a NaN a stays
}  // namespace

namespace {
// out[0] = ((x0 + x1) + x2) + x3, its ADDs from a REDUCE (the renderer's "reduce" word) or written so
std::string float_chain_ir(bool from_reduce) {
  const std::string mark = from_reduce ? " reduce" : "";
  std::string ir =
      "KERNEL chain\nCONST idx 0 1\nPARAM f32 1 0 0 GLOBAL 0 0\nCONST idx 0 4\nPARAM f32 1 2 1 GLOBAL 0 "
      "0\n";                   // 0-3
  for (int i = 0; i < 4; ++i)  // 4-15: index i, INDEX, LOAD
    ir += "CONST idx 0 " + std::to_string(i) + "\nINDEX f32 2 3 " + std::to_string(4 + 3 * i) +
          "\nLOAD f32 1 " + std::to_string(5 + 3 * i) + "\n";
  ir += "ADD f32 2 6 9" + mark + "\nADD f32 2 16 12" + mark + "\nADD f32 2 17 15" + mark + "\n";  // 16-18
  return ir + "INDEX f32 2 1 4\nSTORE void 2 19 18\nSINK void 1 20\n";                            // 19-21
}
}  // namespace

TEST_CASE(
    "lane packing: a float sum from a REDUCE is packed and reassociated, one written so keeps its order") {
  const float half_ulp = std::ldexp(1.0f, -24);  // 1 + each alone rounds back to 1; two together make an ulp
  for (bool from_reduce : {true, false}) {
    INFO((from_reduce ? "from a REDUCE" : "written"));
    CompiledKernel k(float_chain_ir(from_reduce));
    std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(16)};
    const float x[4] = {1.0f, half_ulp, half_ulp, half_ulp};
    std::memcpy(bufs[1].data(), x, 16);
    KernelStats st = k.run(bufs, {}, true);
    float got;
    std::memcpy(&got, bufs[0].data(), 4);
    const float in_order = ((x[0] + x[1]) + x[2]) + x[3];
    CHECK(in_order == 1.0f);
    if (from_reduce) {  // the row's pairwise tree: (x0 + x1) + (x2 + x3)
      CHECK(count_in(st.tasm, "FSUM_REDUCE(") == 1);
      CHECK(got == (x[0] + x[1]) + (x[2] + x[3]));
    } else {  // at most its first add, two terms, is packed (exact: the padding lanes add -0.0)
      CHECK(got == in_order);
    }
  }
}

TEST_CASE("lane packing: a float max reduction is packed and gives the fold's result bit for bit") {
  const int m = 256, n = 4 * m;
  enum Data { kRandom, kSignedZeros, kNaNs, kNothingAboveInit };
  for (Data data : {kRandom, kSignedZeros, kNaNs, kNothingAboveInit}) {
    for (const char* init : {"-inf", "0x0p+0"}) {
      INFO("data " << int(data) << ", init " << init);
      CompiledKernel k(max_ir(m, init));
      std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(n * 4)};
      auto* x = reinterpret_cast<float*>(bufs[1].data());
      uint32_t seed = 777;
      for (int i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        const float r = float(seed >> 8) / float(1 << 24);  // [0, 1)
        switch (data) {
          case kRandom:
            x[i] = r * 200.0f - 150.0f;
            break;
          case kSignedZeros:  // the maximum is zero, first met as +0.0 in group 41 (a later lane's run),
                              // then as -0.0: the first one found is the result
            x[i] = i / 4 < 41 ? -1.0f : i / 4 == 41 ? 0.0f : seed % 2 ? -1.0f : -0.0f;
            break;
          case kNaNs:  // a NaN first in its group hides the group (the largest values among them), else
                       // it is passed over
            x[i] = i % 4 == 0 && seed % 5 == 0 ? NAN : i % 4 == 1 && (seed >> 4) % 5 == 0 ? 1e30f : r;
            break;
          case kNothingAboveInit:
            x[i] = seed % 2 ? -INFINITY : seed % 7 == 0 ? NAN : -0.0f;
            break;
        }
      }
      float want = std::strtof(init, nullptr);
      for (int j = 0; j < m; ++j)
        want = tinygrad_max(
            want,
            tinygrad_max(tinygrad_max(tinygrad_max(x[4 * j], x[4 * j + 1]), x[4 * j + 2]), x[4 * j + 3]));
      KernelStats st = k.run(bufs, {}, true);
      const float got = reinterpret_cast<float*>(bufs[0].data())[0];
      INFO("want " << want << " got " << got);
      CHECK(std::memcmp(&got, &want, 4) == 0);
      const int compares = count_in(st.tasm, "FCMPLT("),
                tile_reduces = count_in(st.tasm, "FMAX_REDUCE_TILE(");
      // Packed: 4 compares per 16 groups side by side, then one whole-tile reduce (unpacked: 4 per group).
      CHECK(compares <= n / 16 + 2);
      CHECK(tile_reduces == 1);
    }
  }
}

TEST_CASE(
    "op table: every op the renderer may pass lowers, by a function of its row or its one instruction") {
  const std::vector<std::string> names = compiler::lowered_ops();
  CHECK(names.size() == 23);  // tinygrad's ALU ops that reach the compiler (the rest tinygrad decomposes)
  for (const std::string& name : names) {
    INFO(name);
    const compiler::OpInfo* info = compiler::find_op(name);
    REQUIRE(info);
    CHECK((info->lower || info->int_op || info->f32_op));
  }
}

namespace {
// out[b * w + i] = sum over r < reduce of x[b * reduce * w + r * w + i] * v[r] (float32, in r order), for
// b < batches, i < w. `use`: how the kernel reads b besides the element indices: "" not at all, "square" its
// output index is b * b * w (b < 2: the same elements), "value" adds float(b) to the sum.
std::string batched_ir(int batches, int w, int reduce, const std::string& use) {
  std::string ir = "KERNEL batched\n";
  int nodes = 0;
  auto add = [&](const std::string& line) {
    ir += line + "\n";
    return std::to_string(nodes++);
  };
  const std::string out_size = add("CONST idx 0 " + std::to_string(batches * w)),
                    x_size = add("CONST idx 0 " + std::to_string(batches * reduce * w)),
                    terms = add("CONST idx 0 " + std::to_string(reduce)),
                    batch_count = add("CONST idx 0 " + std::to_string(batches)),
                    points = add("CONST idx 0 " + std::to_string(w)), zero = add("CONST i32 0 0"),
                    x_step = add("CONST i32 0 " + std::to_string(reduce * w)),
                    w32 = add("CONST i32 0 " + std::to_string(w)), one = add("CONST i32 0 1"),
                    fzero = add("CONST f32 0 0x0p+0");
  const std::string out = add("PARAM f32 1 " + out_size + " 0 GLOBAL 0 0"),
                    x = add("PARAM f32 1 " + x_size + " 1 GLOBAL 0 0"),
                    v = add("PARAM f32 1 " + terms + " 2 GLOBAL 0 0"),
                    acc = add("BUFFER f32 1 " + one + " REG");
  const std::string b = add("RANGE i32 1 " + batch_count + " 0 WEAK"),
                    i = add("RANGE i32 2 " + points + " " + b + " 1 WEAK");
  const std::string x_at = add("MUL i32 2 " + b + " " + x_step),
                    out_at = use == "square" ? add("MUL i32 2 " + add("MUL i32 2 " + b + " " + b) + " " + w32)
                                             : add("MUL i32 2 " + b + " " + w32);
  const std::string acc0 = add("INDEX f32 2 " + acc + " " + zero),
                    init = add("STORE void 2 " + acc0 + " " + fzero);
  const std::string r = add("RANGE i32 1 " + terms + " 2 REDUCE"),
                    acc1 =
                        add("INDEX f32 2 " + add("AFTER f32 3 " + acc + " " + init + " " + r) + " " + zero),
                    sum = add("LOAD f32 1 " + acc1);
  const std::string at =
      add("ADD i32 2 " + add("ADD i32 2 " + add("MUL i32 2 " + r + " " + w32) + " " + x_at) + " " + i);
  const std::string term = add("MUL f32 2 " + add("LOAD f32 1 " + add("INDEX f32 2 " + x + " " + at)) + " " +
                               add("LOAD f32 1 " + add("INDEX f32 2 " + v + " " + r)));
  const std::string loop =
      add("END void 2 " + add("STORE void 2 " + acc1 + " " + add("ADD f32 2 " + sum + " " + term)) + " " + r);
  std::string result =
      add("LOAD f32 1 " + add("INDEX f32 2 " + add("AFTER f32 2 " + acc + " " + loop) + " " + zero));
  if (use == "value") result = add("ADD f32 2 " + result + " " + add("CAST f32 1 " + b));
  const std::string store =
      add("STORE void 2 " + add("INDEX f32 2 " + out + " " + add("ADD i32 2 " + out_at + " " + i)) + " " +
          result);
  add("SINK void 1 " + add("END void 2 " + add("END void 2 " + store + " " + i) + " " + b));
  return ir;
}
}  // namespace

TEST_CASE("compile: chunks repeating earlier ones a whole period on are replayed untraced, exactly") {
  const int reduce = 50;  // 200 tile nodes a chunk
  struct Case {
    std::string use;  // batched_ir's
    int batches, w;
    size_t cut_nodes;       // TraceLimits
    int64_t chunks, units;  // the period's (0: none)
    const char* logged;     // the decision log's line
  };
  const size_t whole = TraceLimits{}.cut_nodes;
  for (const Case& c : {
           Case{"", 3, 64, whole, 4, 1, "7 of them not traced"},  // a batch per chunk: 0 and 1..4 traced
           Case{"square", 2, 64, whole, 0, 1, nullptr},           // b reaches other than element indices
           Case{"value", 3, 64, whole, 0, 1, nullptr},
           // 40 points per b: 2 of them fill 5 chunks, whose lanes straddle two b; chunks traced in parts
           Case{"", 6, 40, 100, 5, 2, "of them not traced"},
       }) {
    INFO("b used " << (c.use.empty() ? "in element indices only" : c.use) << ", " << c.w << " points each");
    const int batches = c.batches, w = c.w;
    const TraceLimits limits{c.cut_nodes};
    const std::vector<int64_t> sizes{batches * w, batches * reduce * w, reduce};
    const Kernel k = parse_kernel(batched_ir(batches, w, reduce, c.use));
    const ChunkPeriod period = Tracer(k, {}, sizes, limits).chunk_period();
    CHECK(period.chunks == c.chunks);
    if (c.chunks > 0) {
      CHECK(period.units == c.units);
      CHECK(period.bounds == std::vector<int64_t>{batches});
      CHECK(period.steps == std::vector<std::vector<int64_t>>{{w, reduce * w, 0}});
    }

    // the plan is the one tracing every chunk gives
    std::ostringstream log;  // the decision log, to it alone
    const auto sinks = decision_log().sinks();
    const auto level = decision_log().level();
    decision_log().sinks() = {std::make_shared<spdlog::sinks::ostream_sink_mt>(log)};
    decision_log().set_level(spdlog::level::info);
    const Plan plan = compile(k, {}, {}, sizes, {}, {}, limits);
    decision_log().sinks() = sinks;
    decision_log().set_level(level);
    TraceLimits every = limits;
    every.trace_every_chunk = true;
    const Plan traced = compile(k, {}, {}, sizes, {}, {}, every);
    REQUIRE(plan.runs.size() == traced.runs.size());
    for (size_t r = 0; r < plan.runs.size(); ++r) {
      const LaunchRun &a = plan.runs[r], &t = traced.runs[r];
      CHECK(std::tie(a.first, a.count, a.swap_banks) == std::tie(t.first, t.count, t.swap_banks));
      CHECK((a.shift < 0 ? std::vector<int64_t>{} : plan.shifts[a.shift]) ==
            (t.shift < 0 ? std::vector<int64_t>{} : traced.shifts[t.shift]));
    }
    CHECK(plan.launches.size() == traced.launches.size());
    INFO(log.str());
    CHECK((c.logged && log.str().find(c.logged) != std::string::npos) == (c.chunks > 0));
    if (c.cut_nodes < whole) CHECK(log.str().find("long chunks traced in parts") != std::string::npos);

    CompiledKernel kernel(batched_ir(batches, w, reduce, c.use), {}, limits);
    std::vector<DeviceBuffer> bufs{DeviceBuffer(sizes[0] * 4), DeviceBuffer(sizes[1] * 4),
                                   DeviceBuffer(sizes[2] * 4)};
    auto* x = reinterpret_cast<float*>(bufs[1].data());
    auto* v = reinterpret_cast<float*>(bufs[2].data());
    for (int e = 0; e < sizes[1]; ++e) x[e] = float(e % 113) * 0.017f - 0.9f;
    for (int r = 0; r < reduce; ++r) v[r] = float(r % 7) * 0.29f - 0.8f;
    kernel.run(bufs, {}, false);
    int wrong = 0;
    for (int b = 0; b < batches; ++b)
      for (int i = 0; i < w; ++i) {
        float want = 0.0f;  // the VPU's FMUL then FADD, IEEE RNE, in term order
        for (int r = 0; r < reduce; ++r) want = want + x[b * reduce * w + r * w + i] * v[r];
        if (c.use == "value") want = want + float(b);
        wrong +=
            std::memcmp(&reinterpret_cast<float*>(bufs[0].data())[(c.use == "square" ? b * b : b) * w + i],
                        &want, 4) != 0;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("estimated_cycles sends a resident program again only when the ring has dropped it") {
  // Three programs of 100 instructions on a core whose program memory (256 entries, no prefetch) holds two:
  // cycling A B A B A B C, the runtime's ring (CoreState::load, the oldest evicted first) keeps A and B, so
  // A, B and C are each sent once (Residency::kRing); cycling A B C A B C, each is evicted before it comes
  // back and every launch sends its program, as on a core without resident programs. kAllOrNone sends every
  // program of launches whose programs do not fit together.
  using compiler::Residency;
  auto program = [](int id) {
    std::vector<Instr> p(99, Instr{});
    p[0].vmemAddr = uint8_t(id);
    p.push_back(Instr{uint8_t(SxuOpcode::kHalt)});
    return p;
  };
  auto launches = [&](const std::vector<int>& ids) {
    std::vector<compiler::Launch> out;
    for (int id : ids) out.push_back(compiler::Launch{program(id)});
    return out;
  };
  TensorCoreConfig kept;
  kept.resident_program = true;
  const TensorCoreConfig sent;  // the reference: every launch sends its program
  auto saved = [&](const std::vector<compiler::Launch>& l, Residency r) {
    return compiler::estimated_cycles(l, sent, r) - compiler::estimated_cycles(l, kept, r);
  };
  const std::vector<compiler::Launch> alternating = launches({0, 1, 0, 1, 0, 1, 2});
  const std::vector<compiler::Launch> cycling = launches({0, 1, 2, 0, 1, 2}),
                                      fitting = launches({0, 1, 0, 1});
  CHECK(saved(alternating, Residency::kRing) == sent.record_cycles * 4 * 100);
  CHECK(saved(alternating, Residency::kAllOrNone) == 0);
  CHECK(saved(cycling, Residency::kRing) == 0);
  for (Residency r : {Residency::kRing, Residency::kAllOrNone})  // none is sent once they all fit
    CHECK(saved(fitting, r) == sent.record_cycles * 4 * 100);
}

TEST_CASE("estimated_cycles counts the SXU's stalls as the model does (hardware.md §2.3, §2.4, §2.7)") {
  // Each program runs on the model, on the reference core and with fetch_overlap and one cycle a record; its
  // estimate (records and P) plus the testbench's fixed 4 must be its cycles: back-to-back dispatches wait
  // for the one before to be Done, reads of results for the last; what reads or writes vregs waits for a
  // VPU_BG's write-back (a combinational one's lands in the next FETCH on the reference, in the next EXEC
  // with fetch overlapped), LOAD in its second cycle, an epilogue only in the collect cycle.
  const std::string data =
      "WMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nAMEM[0] = 1 2 3 4\nAMEM[1] = 5 6 7 8\n"
      "AMEM[2] = 1 1 1 1\nAMEM[3] = 2 2 2 2\nVMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n";
  std::string epilogue_at_collect =
      "LOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\nPSUM_READ v9, PSUM[0]\n";
  for (int i = 0; i < 6; ++i) epilogue_at_collect += "VZERO v2\n";
  epilogue_at_collect += "MXU_EPILOGUE v5 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG\n";
  TensorCoreConfig overlapped;
  overlapped.fetch_overlap = true;
  overlapped.record_cycles = 1;
  for (const std::string& program : std::vector<std::string>{
           "MXU_OS WMEM[0], AMEM[0], k=4\nMXU_OS_ACCUMULATE WMEM[0], AMEM[0], k=4\n"
           "MXU_OS_ACCUMULATE WMEM[0], AMEM[0], k=2\nLOAD_MXU_MATRIX_ROW v1, row=0\nLOAD_MXU_MATRIX_ROW v2, "
           "row=3\n",
           "MXU WMEM[0], AMEM[0], tiles=1, psum_write=PSUM[0], psum_row=0\n"
           "MXU WMEM[0], AMEM[1], tiles=2, psum_acc=PSUM[0], psum_row=0\nVZERO v3\nWAIT_MXU\nPSUM_READ v0, "
           "PSUM[0]\n",
           "MXU_OS WMEM[0], AMEM[0], k=4\nVZERO v3\nVZERO v4\nVZERO v5\nLOAD_MXU_MATRIX_ROW v1, row=1\n"
           "MXU_VPU_EPILOGUE v2 = GEMM(WMEM[0], AMEM[1], tiles=1) SRC2=v3 OP=ADD DST_VREG\n",
           "VZERO v0\nVZERO v1\n",
           "LOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\nVPU_BG v2 = MUL(v1, v1)\nVPU_BG v1 = SUB(v2, v0)\n"
           "STORE VMEM[1], v1\nVPU_BG v3 = ADD(v1, v1)\nLOAD v4, VMEM[1]\nVPU v5 = FMUL(v4, v3)\n",
           "LOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\nVZERO v2\nMXU_OS WMEM[0], AMEM[0], k=4\n"
           "VPU_BG v3 = ADD(v1, v1)\nVMOV v4, v3\nLOAD_MXU_MATRIX_ROW v1, row=1\nVPU_BG v2 = ADD(v1, v0)\n"
           "PSUM_WRITE PSUM[1], v2\n",
           "VPU_BG v1 = FSUM_REDUCE_TILE(v0)\nVZERO v2\nPSUM_READ v3, PSUM[0]\nLOAD v4, VMEM[0]\n"
           "VPU_BG v5 = EXP2(v4)\nVPU v6 = ADD(v4, v4)\nVPU_BG v7 = FSUM_REDUCE_TILE(v0)\nLOAD v8, VMEM[0]\n",
           "VPU_BG v1 = ADD(v0, v0)\nMXU_EPILOGUE v5 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG\n"
           "VPU_BG v1 = ADD(v0, v0)\nMXU_OS WMEM[0], AMEM[0], k=4\nVPU_BG v2 = ADD(v0, v1)\n"
           "MXU_VPU_EPILOGUE v2 = GEMM(WMEM[0], AMEM[1], tiles=1) SRC2=v3 OP=ADD DST_VREG\n",
           epilogue_at_collect}) {
    const std::string tasm = data + program + "HALT\nEND\n";
    std::vector<Instr> instrs;
    int data_records = 0;
    for (const Record& r : assemble(tasm).records) {
      if (r.type == RecordType::kInstr) instrs.push_back(r.instr);
      data_records += is_data(r);
    }
    INFO(program);
    for (const TensorCoreConfig& cfg : {TensorCoreConfig{}, overlapped}) {
      INFO("fetch_overlap " << cfg.fetch_overlap);
      CHECK(compiler::estimated_cycles(data_records, instrs, cfg) + 4 == test::run(tasm, cfg).cycles);
    }
  }
}
