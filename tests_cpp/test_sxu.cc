// SXU: every opcode's unstalled cost (hardware.md §2.7 table, cycles include FETCH; HALT costs 1) and
// its semantics. P is counted from the first FETCH through the FETCH of HALT.
#include <catch2/catch.hpp>
#include <set>

#include "base/errors.h"
#include "helpers.h"
#include "sim/timing.h"

using namespace tinytpu;
using test::sxu_cycles;

namespace {
const char* kData =
    "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
    "VMEM[1] = 0 -1 2 -3 4 -5 6 -7 8 -9 10 -11 12 -13 14 -15\n"
    "WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n"
    "AMEM[0] = 1 2 3 4\n";
std::string with_data(const std::string& p) { return std::string(kData) + p; }
}  // namespace

TEST_CASE("SXU opcode costs (hardware.md §2.7)") {
  struct Case {
    const char* program;
    uint64_t p;  // expected sxu_cycles including the final HALT (1)
  } cases[] = {
      {"", 1},                                              // 7 HALT: 1
      {"LOAD v1, VMEM[0]", 3 + 1},                          // 0 LOAD_VREG: 3
      {"STORE VMEM[2], v0", 2 + 1},                         // 1 STORE_VREG: 2
      {"VPU v1 = ADD(v0, v0)", 3 + 1},                      // 2 DISPATCH_VPU combinational: 3
      {"VPU v1 = FSUM_REDUCE_TILE(v0)", 19 + 1},            // 2 FpReducer: 19
      {"VPU v1 = EXP2(v0)", 116 + 1},                       // 2 TranscUnit EXP2: 16*7+4
      {"VPU v1 = LOG2(v0)", 100 + 1},                       // LOG2: 16*6+4
      {"VPU v1 = SIN(v0)", 180 + 1},                        // SIN: 16*11+4
      {"VPU v1 = COS(v0)", 84 + 1},                         // COS: 16*5+4
      {"BROADCAST v0, lane=2", 2 + 1},                      // 3: 2, async write-back
      {"MXU WMEM[0], AMEM[0], tiles=1", 2 + 1},             // 4: 2, async
      {"MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU", 11 + 1},  // 4+5: tLen + rows + 6
      {"MXU WMEM[0], AMEM[0], tiles=3\nWAIT_MXU", 13 + 1},  // tLen = 3
      {"MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU\nLOAD_MXU_RESULT v1", 11 + 2 + 1},  // 6: 2
      {"SELECT v3 = SELECT(v0, v1, v2)", 4 + 1},                                    // 8: 4
      {"BROADCAST_SCALAR v1 = v0[1, 2]", 2 + 1},                                    // 9
      {"BROADCAST_ROW v1 = ROW(v0, row=3)", 2 + 1},                                 // 10
      {"BROADCAST_COL v1 = COL(v0, col=1)", 2 + 1},                                 // 11
      {"TRANSPOSE v1, v0", 2 + 1},                                                  // 12
      {"LOAD_VPU_RESULT v1", 2 + 1},                                                // 13
      {"LOAD_XLU_RESULT v1", 2 + 1},                                                // 14
      {"PSUM_WRITE PSUM[1], v0", 2 + 1},                                            // 15
      {"PSUM_ACCUMULATE PSUM[1], v0", 2 + 1},                                       // 16
      {"PSUM_READ v1, PSUM[1]", 3 + 1},                                             // 17: REQ + RESP
      {"PSUM_READ_ROW v1, PSUM[1], row=2", 2 + 1},                                  // 18
      {"PSUM_CLEAR PSUM[3]", 2 + 1},                                                // 19
      {"SET_PRED_IF_ZERO v0", 2 + 1},                                               // 20
      {"SKIP_IF_PRED", 2 + 1},                                                      // 21
      {"PSUM_ACCUMULATE_ROW PSUM[2], row=1, v0", 2 + 1},                            // 22
      {"MXU_ACCUMULATE WMEM[0], AMEM[0], tiles=1", 2 + 1},                          // 23
      {"MXU_CLEAR", 2 + 1},                                                         // 24
      {"MXU_OS WMEM[0], AMEM[0], k=4", 2 + 1},                                      // 25
      {"MXU_OS WMEM[0], AMEM[0], k=4\nWAIT_MXU", 21 + 1},  // 25+5: K' + kLen + rows + cols + 5
      {"MXU_OS WMEM[0], AMEM[0], k=1\nWAIT_MXU", 15 + 1},  // kLen = 1: 1 + 1 + 13
      {"MXU_OS WMEM[0], AMEM[0], k=4\nWAIT_MXU\nLOAD_MXU_MATRIX_ROW v1, row=2", 21 + 2 + 1},  // 26
      {"READ_CYCLE v1", 2 + 1},                                                               // 27
      {"LOOP_BEGIN count=1\nLOOP_END", 4 + 1},                    // 28, 29: 2 each
      {"LOOP_BEGIN count=5\nVZERO v1\nLOOP_END", 2 + 5 * 4 + 1},  // a taken branch costs nothing extra
      {"VZERO v1", 2 + 1},                                        // 30
      {"VFILL v1, imm=-7", 2 + 1},                                // 31
      {"VMOV v1, v0", 2 + 1},                                     // 32
      {"MXU_OS_ACCUMULATE WMEM[0], AMEM[0], k=4", 2 + 1},         // 33
      {"VNEG v1, v0", 2 + 1},                                     // 34
      {"VABS v1, v0", 2 + 1},                                     // 35
      {"LOAD_LOOP_DEPTH v1", 2 + 1},                              // 36
      {"ROTATE v1, v0, amount=1", 2 + 1},                         // 37
      {"PSUM_CLEAR_ALL", 9 + 1},                                  // 38: one bucket per cycle
      {"SET_PRED_NE_ZERO v0", 2 + 1},                             // 39
      {"SKIP_IF_NOT_PRED\nVZERO v1", 2 + 1},                      // 40: pred is clear, so VZERO is skipped
      {"VPU_BG v1 = ADD(v0, v0)", 2 + 1},                         // 41: 2 + background
      {"MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG", 12 + 1},  // 42: tLen + 11
      {"MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=4) RELU DST_VMEM[3]", 15 + 1},
      {"MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=1) REDUCE_SUM DST_VREG\nLOAD_EPILOGUE_STAT v2",
       12 + 2 + 1},                                                                               // 43
      {"SET_REQUANT_CONFIG scale_mul=3 scale_shift=1", 2 + 1},                                    // 44
      {"DISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 ASRAM[5]", 2 + 1},                           // 45
      {"MXU_VPU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=2) SRC2=v0 OP=ADD DST_VREG", 13 + 1},  // 46
  };
  for (const auto& c : cases) {
    INFO(c.program);
    CHECK(sxu_cycles(with_data(std::string("LOAD v0, VMEM[0]\n") + c.program)) == 3 + c.p);
  }
}

TEST_CASE("cycles = 2R + P + M + 4 (hardware.md §4.4)") {
  auto r = test::run(
      with_data("LOAD v1, VMEM[1]\nSTORE VMEM[5], v1\nHALT\nOUTPUT_VMEM VMEM[5]\nOUTPUT_VMEM VMEM[0]\nEND"));
  uint64_t R = 4 + 3 + 2, P = 3 + 2 + 1, M = 2;
  CHECK(r.sxu_cycles == P);
  CHECK(r.cycles == 2 * R + P + M + 4);
  CHECK(r.vmem_results[0] == Tile{0, -1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12, -13, 14, -15});
}

TEST_CASE("READ_CYCLE reads the testbench's time base at the EXEC cycle") {
  auto r = test::run(
      "VMEM[0] = 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nREAD_CYCLE v1\nSTORE VMEM[0], v1\nHALT\nOUTPUT_VMEM "
      "VMEM[0]\nEND");
  // R = 1 + 3 instructions + 1 output = 5: FETCH of READ_CYCLE at 2*5+3 = 13, EXEC at 14.
  CHECK(r.vmem_results[0][0] == 14);
  CHECK(r.vmem_results[0][1] == 0);
}

TEST_CASE("XLU write-back lands during the next FETCH, so no RAW stall (hardware.md §2.6, §2.7)") {
  auto r = test::run(with_data(
      "LOAD v0, VMEM[0]\nBROADCAST_SCALAR v1 = v0[2, 3]\nSTORE VMEM[2], v1\n"
      "ROTATE v2, v0, amount=1\nSTORE VMEM[3], v2\nTRANSPOSE v3, v0\nSTORE VMEM[4], v3\n"
      "BROADCAST_ROW v4 = ROW(v0, row=1)\nSTORE VMEM[5], v4\nBROADCAST v0, lane=3\nSTORE VMEM[6], v0\n"
      "HALT\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nOUTPUT_VMEM VMEM[4]\nOUTPUT_VMEM VMEM[5]\nOUTPUT_VMEM "
      "VMEM[6]\nEND"));
  CHECK(r.sxu_cycles == 3 + 5 * (2 + 2) + 1);
  Tile twelve;
  twelve.fill(12);
  CHECK(r.vmem_results[0] == twelve);
  CHECK(r.vmem_results[1] == Tile{2, 3, 4, 1, 6, 7, 8, 5, 10, 11, 12, 9, 14, 15, 16, 13});
  CHECK(r.vmem_results[2] == Tile{1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16});
  CHECK(r.vmem_results[3] == Tile{5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8});
  CHECK(r.vmem_results[4] == Tile{4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 16, 16, 16, 16});
}

TEST_CASE("SELECT, VFILL, VNEG/VABS wrap, predicates and loops") {
  auto r = test::run(with_data(
      "LOAD v0, VMEM[1]\nVFILL v1, imm=-128\nVFILL v2, imm=5\nSELECT v3 = SELECT(v0, v1, v2)\nSTORE VMEM[2], "
      "v3\n"
      "VPU v4 = MUL(v1, v1)\nVPU v4 = MUL(v4, v4)\nVPU v4 = MUL(v4, v1)\nVPU v4 = MUL(v4, v1)\n"  // (-128)^8
                                                                                                  // = 2^56
                                                                                                  // wraps to
                                                                                                  // 0
      "STORE VMEM[3], v4\n"
      "VZERO v9\nSET_PRED_IF_ZERO v9\nSKIP_IF_PRED\nVFILL v9, imm=9\nSET_PRED_NE_ZERO "
      "v9\nSKIP_IF_NOT_PRED\nVFILL v9, imm=7\n"
      "STORE VMEM[4], v9\n"
      "VZERO v10\nVFILL v11, imm=1\nLOOP_BEGIN count=3\nLOOP_BEGIN count=4\nVPU v10 = ADD(v10, "
      "v11)\nLOOP_END\nLOAD_LOOP_DEPTH v12\nLOOP_END\n"
      "STORE VMEM[5], v10\nSTORE VMEM[6], v12\n"
      "HALT\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nOUTPUT_VMEM VMEM[4]\nOUTPUT_VMEM VMEM[5]\nOUTPUT_VMEM "
      "VMEM[6]\nEND"));
  // SELECT: cond = VMEM[1] (0 in lane 0 only)
  Tile sel;
  sel.fill(-128);
  sel[0] = 5;
  CHECK(r.vmem_results[0] == sel);
  CHECK(r.vmem_results[1] == Tile{});
  // v9 = 0: SET_PRED_IF_ZERO sets pred, so VFILL 9 is skipped; SET_PRED_NE_ZERO clears it, so
  // SKIP_IF_NOT_PRED skips VFILL 7. A skip that failed would leave 9 or 7.
  CHECK(r.vmem_results[2] == Tile{});
  Tile twelve;
  twelve.fill(12);
  CHECK(r.vmem_results[3] == twelve);  // 3 x 4 iterations
  Tile depth{};
  depth[0] = 1;  // inside the outer loop, after the inner one popped
  CHECK(r.vmem_results[4] == depth);
}

TEST_CASE("VNEG and VABS keep INT_MIN (hardware.md §2.7 ops 34, 35)") {
  auto r = test::run(
      "VMEM[0] = -2147483648 -5 0 7 0 0 0 0 0 0 0 0 0 0 0 0\nLOAD v0, VMEM[0]\nVNEG v1, v0\nVABS v2, v0\n"
      "STORE VMEM[1], v1\nSTORE VMEM[2], v2\nHALT\nOUTPUT_VMEM VMEM[1]\nOUTPUT_VMEM VMEM[2]\nEND");
  CHECK(r.vmem_results[0][0] == INT32_MIN);
  CHECK(r.vmem_results[0][1] == 5);
  CHECK(r.vmem_results[0][3] == -7);
  CHECK(r.vmem_results[1][0] == INT32_MIN);
  CHECK(r.vmem_results[1][1] == 5);
}

TEST_CASE("a fifth nested LOOP_BEGIN is ignored, and LOOP_END on an empty stack falls through") {
  std::string p = "VZERO v1\nVFILL v2, imm=1\n";
  for (int i = 0; i < 5; ++i) p += "LOOP_BEGIN count=2\n";
  p += "VPU v1 = ADD(v1, v2)\n";
  for (int i = 0; i < 6; ++i) p += "LOOP_END\n";
  p += "LOAD_LOOP_DEPTH v3\nSTORE VMEM[0], v1\nSTORE VMEM[1], v3\nHALT\nOUTPUT_VMEM VMEM[0]\nOUTPUT_VMEM "
       "VMEM[1]\nEND";
  auto r = test::run(p);
  // Only four frames exist: the fifth LOOP_END pops nothing... the body runs 2^4 = 16 times.
  CHECK(r.vmem_results[0][0] == 16);
  CHECK(r.vmem_results[1][0] == 0);
}

// The VPU_BG write-back (hardware.md §8 item 1) as bsc schedules the reference: do_vpu_collect fires
// in the first cycle the result is ready, alongside any main-FSM rule, and a main-FSM write to the same
// vreg in that cycle wins (G0117). These cycle counts and values were also checked on the reference
// Bluesim testbench (tools/refdiff.py).
TEST_CASE("VPU_BG retires beside the main FSM without stalling it") {
  const char* p =
      "VMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\nLOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\nVZERO v2\nVZERO "
      "v3\n"
      "STORE VMEM[1], v1\nHALT\nOUTPUT_VMEM VMEM[1]\nEND";
  auto r = test::run(p);
  CHECK(r.sxu_cycles == 3 + 2 + 2 + 2 + 2 + 1);  // the collect happens during the first VZERO's FETCH
  CHECK(r.cycles == 33);                         // reference testbench: cycles 33
  CHECK(r.vmem_results[0][0] == 2);
}

TEST_CASE("a chain of VPU_BG ops, each reading the one before, costs 2 cycles an op") {
  // The compiler's use of it: the collect lands in the next instruction's FETCH, so the next EXEC reads the
  // result and no guard (!vpu_wb_pending) stalls. SXU cycles by the table: LOAD 3, three VPU_BG 2 each,
  // STORE 2, HALT 1.
  const char* p =
      "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nLOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\n"
      "VPU_BG v2 = MUL(v1, v1)\nVPU_BG v1 = SUB(v2, v0)\nSTORE VMEM[1], v1\nHALT\nOUTPUT_VMEM VMEM[1]\nEND";
  auto r = test::run(p);
  CHECK(r.sxu_cycles == 3 + 3 * 2 + 2 + 1);
  for (int i = 0; i < 16; ++i) CHECK(r.vmem_results[0][i] == 4 * (i + 1) * (i + 1) - (i + 1));
}

TEST_CASE("a main-FSM write to the VPU_BG destination in the collect cycle wins") {
  // FSUM_REDUCE_TILE dispatched at T retires at T+17 (§2.4). PSUM_READ (3) + n VZEROs (2 each) put the
  // VFILL's EXEC at T+5+2n: n=6 lands on T+17 and the VFILL survives; n=5 lands on T+15 and the
  // collect overwrites it with the reduction (16 denormal ones sum to bit pattern 16).
  for (int n : {5, 6}) {
    std::string p =
        "VMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\nLOAD v0, VMEM[0]\nPSUM_CLEAR_ALL\n"
        "VPU_BG v1 = FSUM_REDUCE_TILE(v0)\nPSUM_READ v9, PSUM[0]\n";
    for (int i = 0; i < n; ++i) p += "VZERO v2\n";
    p += "VFILL v1, imm=7\nSTORE VMEM[1], v1\nHALT\nOUTPUT_VMEM VMEM[1]\nEND";
    auto r = test::run(p);
    CHECK(r.vmem_results[0][0] == (n == 6 ? 7 : 16));
    CHECK(r.cycles == (n == 6 ? 69 : 66));  // the reference testbench's counts
  }
}

TEST_CASE("a VPU write-back out-ranks an MXU epilogue dispatch in the same cycle (bsc G0010)") {
  std::string p =
      "WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\nAMEM[0] = 1 2 3 4\nVMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 "
      "1\n"
      "LOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\nPSUM_READ v9, PSUM[0]\n";
  for (int i = 0; i < 6; ++i) p += "VZERO v2\n";
  // The epilogue's EXEC would be T+17, the collect cycle: it waits one cycle (reference: cycles 66).
  p += "MXU_EPILOGUE v5 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG\nHALT\nEND";
  auto r = test::run(p);
  CHECK(r.sxu_cycles == 3 + 2 + 3 + 12 + (12 + 1) + 1);
  CHECK(r.cycles == 66);
}

TEST_CASE("back-to-back MXU dispatches: the second waits for Done (hardware.md §2.7 derived costs)") {
  // Second dispatch EXEC fires in the first cycle the Controller shows Done: T + tLen + 8.
  // MXU(2) + MXU stalled until Done, then WAIT sees Done after another full dispatch.
  uint64_t p =
      sxu_cycles(with_data("MXU WMEM[0], AMEM[0], tiles=1\nMXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU"));
  // First dispatch EXEC at T; second FETCH at T+1, EXEC blocked until T+9 (Done), fires at T+9;
  // WAIT FETCH at T+10, sees Done at T+18, so the program spans T-1 .. T+18, then HALT.
  CHECK(p == 20 + 1);
}

TEST_CASE("instructions between dispatch and WAIT overlap with the MXU") {
  uint64_t p = sxu_cycles(with_data("MXU WMEM[0], AMEM[0], tiles=1\nVZERO v1\nVZERO v2\nWAIT_MXU"));
  CHECK(p == 11 + 1);  // the two VZEROs (4 cycles) hide inside the 9-cycle wait
  uint64_t q = sxu_cycles(
      with_data("MXU WMEM[0], AMEM[0], tiles=1\nVZERO v1\nVZERO v2\nVZERO v3\nVZERO v4\nVZERO v5\nWAIT_MXU"));
  CHECK(q == 2 + 10 + 2 + 1);  // Done at T+9 is already visible when WAIT executes: 1 + max(1, 0)
}

TEST_CASE("PSUM bank: SXU ops and MXU row deposits") {
  auto r = test::run(with_data(
      "LOAD v0, VMEM[0]\nPSUM_WRITE PSUM[2], v0\nPSUM_ACCUMULATE PSUM[2], v0\nPSUM_READ v1, PSUM[2]\n"
      "PSUM_CLEAR PSUM[3]\nPSUM_ACCUMULATE_ROW PSUM[3], row=1, v0\nPSUM_READ_ROW v2, PSUM[3], row=1\n"
      "MXU WMEM[0], AMEM[0], tiles=1, psum_write=PSUM[4], psum_row=2\nWAIT_MXU\n"
      "MXU WMEM[0], AMEM[0], tiles=1, psum_acc=PSUM[4], psum_row=2\nWAIT_MXU\nPSUM_READ_ROW v3, PSUM[4], "
      "row=2\n"
      "STORE VMEM[2], v1\nSTORE VMEM[3], v2\nSTORE VMEM[4], v3\nPSUM_CLEAR_ALL\nPSUM_READ v4, PSUM[2]\nSTORE "
      "VMEM[5], v4\n"
      "HALT\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nOUTPUT_VMEM VMEM[4]\nOUTPUT_VMEM VMEM[5]\nEND"));
  CHECK(r.vmem_results[0] == Tile{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32});
  CHECK(r.vmem_results[1] == Tile{1, 2, 3, 4});
  CHECK(r.vmem_results[2] == Tile{2, 4, 6, 8});  // identity weights: two deposits of a = (1,2,3,4)
  CHECK(r.vmem_results[3] == Tile{});
}

TEST_CASE("an SXU PSUM write in the MXU drain cycle waits one cycle (hardware.md §8 item 2, model choice)") {
  // Dispatch EXEC at T; the drain deposits its PSUM row at T+8. The PSUM_WRITE EXEC lands on T+8 and
  // loses the single RegFile write port to the drain.
  auto r =
      test::run(with_data("LOAD v0, VMEM[0]\nMXU WMEM[0], AMEM[0], tiles=1, psum_write=PSUM[1], "
                          "psum_row=0\nVZERO v1\nVZERO v2\nVZERO v3\n"
                          "PSUM_WRITE PSUM[2], v0\nWAIT_MXU\nPSUM_READ v4, PSUM[1]\nPSUM_READ v5, "
                          "PSUM[2]\nSTORE VMEM[2], v4\nSTORE VMEM[3], v5\n"
                          "HALT\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nEND"));
  CHECK(r.sxu_cycles == 3 + 2 + 3 * 2 + (2 + 1) + 2 + 3 + 3 + 2 + 2 + 1);
  CHECK(std::equal(r.vmem_results[0].begin(), r.vmem_results[0].begin() + 4, Row{1, 2, 3, 4}.begin()));
  CHECK(r.vmem_results[1] == Tile{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
}

TEST_CASE("memory the bundle never wrote reads as Bluesim's 0xAA fill (hardware.md §2.1)") {
  auto r = test::run("HALT\nOUTPUT_VMEM VMEM[9]\nEND");
  Tile aa;
  aa.fill(int32_t(0xAAAAAAAAu));
  CHECK(r.vmem_results[0] == aa);
}

namespace {
// One instruction of each opcode, with what must run before it for its row's cost to apply (a quiet core;
// after the awaited unit is done for a kWait row).
struct OpCase {
  const char* setup;  // run before, and measured alone
  const char* instr;  // the one instruction measured
};
const OpCase kOneOfEach[] = {
    {"", "LOAD v1, VMEM[0]"},
    {"", "STORE VMEM[2], v0"},
    {"", "VPU v1 = ADD(v0, v0)"},
    {"", "VPU v1 = FSUM_REDUCE_TILE(v0)"},
    {"", "VPU v1 = EXP2(v0)"},
    {"", "VPU v1 = SIN(v0)"},
    {"", "BROADCAST v0, lane=2"},
    {"", "MXU WMEM[0], AMEM[0], tiles=1"},
    {"MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU", "WAIT_MXU"},
    {"MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU", "LOAD_MXU_RESULT v1"},
    {"", "SELECT v3 = SELECT(v0, v1, v2)"},
    {"", "BROADCAST_SCALAR v1 = v0[1, 2]"},
    {"", "BROADCAST_ROW v1 = ROW(v0, row=3)"},
    {"", "BROADCAST_COL v1 = COL(v0, col=1)"},
    {"", "TRANSPOSE v1, v0"},
    {"", "LOAD_VPU_RESULT v1"},
    {"", "LOAD_XLU_RESULT v1"},
    {"", "PSUM_WRITE PSUM[1], v0"},
    {"", "PSUM_ACCUMULATE PSUM[1], v0"},
    {"", "PSUM_READ v1, PSUM[1]"},
    {"", "PSUM_READ_ROW v1, PSUM[1], row=2"},
    {"", "PSUM_CLEAR PSUM[3]"},
    {"", "SET_PRED_IF_ZERO v0"},
    {"", "SKIP_IF_PRED"},
    {"", "PSUM_ACCUMULATE_ROW PSUM[2], row=1, v0"},
    {"", "MXU_ACCUMULATE WMEM[0], AMEM[0], tiles=1"},
    {"", "MXU_CLEAR"},
    {"", "MXU_OS WMEM[0], AMEM[0], k=4"},
    {"MXU_OS WMEM[0], AMEM[0], k=4\nWAIT_MXU", "LOAD_MXU_MATRIX_ROW v1, row=2"},
    {"", "READ_CYCLE v1"},
    {"", "LOOP_BEGIN count=1"},
    {"LOOP_BEGIN count=1", "LOOP_END"},
    {"", "VZERO v1"},
    {"", "VFILL v1, imm=-7"},
    {"", "VMOV v1, v0"},
    {"", "MXU_OS_ACCUMULATE WMEM[0], AMEM[0], k=4"},
    {"", "VNEG v1, v0"},
    {"", "VABS v1, v0"},
    {"", "LOAD_LOOP_DEPTH v1"},
    {"", "ROTATE v1, v0, amount=1"},
    {"", "PSUM_CLEAR_ALL"},
    {"", "SET_PRED_NE_ZERO v0"},
    {"SET_PRED_NE_ZERO v0", "SKIP_IF_NOT_PRED"},  // v0[0] = 1: no skip
    {"", "VPU_BG v1 = ADD(v0, v0)"},
    {"", "MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG"},
    {"", "MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=4) RELU DST_VMEM[3]"},
    {"MXU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=1) REDUCE_SUM DST_VREG", "LOAD_EPILOGUE_STAT v2"},
    {"", "SET_REQUANT_CONFIG scale_mul=3 scale_shift=1"},
    {"", "DISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 ASRAM[5]"},
    {"", "MXU_VPU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=2) SRC2=v0 OP=ADD DST_VREG"},
    {"", "HALT"},
    {"", "MXU_OS_FLOAT WMEM[0], AMEM[0], k=4, group=2"},
    {"", "MXU_OS_FLOAT_ACCUMULATE WMEM[0], AMEM[0], k=3, group=0"},
    {"", "MXU_SEED v0"},
    {"", "LOAD_MXU_BANK v1"},
};
Instr instr_of(const OpCase& c) { return assemble(std::string(c.instr) + "\nEND\n").records.at(0).instr; }
// The reference, or for a float MXU's dispatch a core with one, for a pipelined MXU's bank read a core with
// one.
TensorCoreConfig core_for(const Instr& in) {
  TensorCoreConfig cfg;
  const std::optional<MxuStart> start = kSxuOps[in.op].mxu_start;
  if (start && float_dispatch(*start)) cfg.mxu_dtype = 2;
  if (SxuOpcode(in.op) == SxuOpcode::kLoadMxuBank) cfg.mxu_pipelined = true;
  return cfg;
}
}  // namespace

// The timing rows of sxu_ops.def, checked against the simulator: every opcode, run where its row's cost
// applies, costs instr_cycles(). The case above holds the same costs as the reference states them; this one
// holds the table to the model, so a row and the simulator cannot drift apart.
TEST_CASE("every SXU opcode costs what its sxu_ops.def row says (instr_cycles)") {
  std::set<int> seen;
  for (const OpCase& c : kOneOfEach) {
    INFO(c.instr);
    const Instr in = instr_of(c);
    seen.insert(in.op);
    const std::string before = with_data(std::string("LOAD v0, VMEM[0]\n") + c.setup);
    // sxu_cycles ends every program with HALT: HALT's own cost is that of a program of HALT alone
    const TensorCoreConfig cfg = core_for(in);
    const uint64_t cost = in.op == uint8_t(SxuOpcode::kHalt)
                              ? sxu_cycles("")
                              : sxu_cycles(before + "\n" + c.instr, cfg) - sxu_cycles(before, cfg);
    CHECK(cost == uint64_t(instr_cycles(in)));
  }
  CHECK(int(seen.size()) == kNumSxuOps);
}

// The waits_for_mxu column, held to the simulator: issued while a dispatch keeps the MXU busy, an instruction
// stalls exactly when its row says it waits for the MXU. Left out: HALT, which ends the program, and
// LOAD_EPILOGUE_STAT, whose reference deadlocks behind any dispatch but a reducing MXU_EPILOGUE.
TEST_CASE("an instruction waits for a busy MXU exactly when its sxu_ops.def row says so") {
  for (const OpCase& c : kOneOfEach) {
    const Instr in = instr_of(c);
    if (SxuOpcode(in.op) == SxuOpcode::kHalt || SxuOpcode(in.op) == SxuOpcode::kLoadEpilogueStat) continue;
    INFO(c.instr);
    const std::string busy = with_data(std::string("LOAD v0, VMEM[0]\n") + c.setup +
                                       "\nMXU_ACCUMULATE WMEM[0], AMEM[0], tiles=16");
    const uint64_t cost = sxu_cycles(busy + "\n" + c.instr, core_for(in)) - sxu_cycles(busy, core_for(in));
    CHECK((cost > uint64_t(instr_cycles(in))) == kSxuOps[in.op].waits_for_mxu);
  }
}

TEST_CASE("sxu_ops.def's vpu_wb_wait column is the model's: who waits for a pending VPU write-back") {
  // A VPU_BG of many cycles (FSUM_REDUCE_TILE, kTileElems + 1) leaves its write-back pending; the opcode
  // right after it stalls in EXEC until the cycle after the collect when its row says kGuarded, one cycle
  // less when kGuardedStep2 (its first EXEC cycle goes on), not at all when kUnguarded. Left out: the rows
  // that need the MXU set up (they wait for a dispatch, the epilogues among them), and HALT, which has no
  // EXEC. The second HALT is SKIP_IF_NOT_PRED's target.
  std::set<uint64_t> guarded_stalls, step2_stalls;
  for (const SxuOpInfo& row : kSxuOps) {
    const SxuOpcode op = SxuOpcode(row.opcode);
    if ((row.waits_for_mxu && op != SxuOpcode::kMxuClear) || op == SxuOpcode::kHalt) continue;
    INFO(row.name);
    Instr in{row.opcode};
    in.mxuTLen = 1;  // LOOP_BEGIN's count
    const RunResult r =
        test::run(with_data("VPU_BG v1 = FSUM_REDUCE_TILE(v2)\n" + format_instr(in) + "\nHALT\nHALT\nEND\n"),
                  core_for(in));
    CHECK((r.busy.sxu_stall > 0) == (row.vpu_wb_wait != VpuWbWait::kUnguarded));
    if (row.vpu_wb_wait == VpuWbWait::kGuarded) guarded_stalls.insert(r.busy.sxu_stall);
    if (row.vpu_wb_wait == VpuWbWait::kGuardedStep2) step2_stalls.insert(r.busy.sxu_stall);
  }
  REQUIRE(guarded_stalls.size() == 1);
  REQUIRE(step2_stalls.size() == 1);
  CHECK(*step2_stalls.begin() + 1 == *guarded_stalls.begin());
}
