// A launch's activity (sim/activity.h), counted from its program, against what the model does when it ticks
// the program with a trace: every instruction fetched once, a VPU op per VPU slice, an MXU dispatch per MXU
// slice (its MACs the PEs' products: hardware.md §2.3), an XLU op per XLU slice.
#include <catch2/catch.hpp>

#include "helpers.h"
#include "sim/activity.h"

using namespace tinytpu;

namespace {

size_t count(const TraceLog& log, Track t) {
  size_t n = 0;
  for (const TraceEvent& e : log.events()) n += e.track == uint8_t(t) && e.depth == 0;
  return n;
}

}  // namespace

TEST_CASE("activity: a straight program's counts are what the ticked model does") {
  const std::string tasm =
      "WMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nAMEM[0] = 1 2 3 4\nAMEM[1] = 5 6 7 8\nAMEM[2] = 1 1 "
      "1 1\n"
      "VMEM[0] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nVMEM[1] = 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3\n"
      "LOAD v0, VMEM[0]\nLOAD v1, VMEM[1]\nVPU v2 = MUL(v0, v1)\nVPU_BG v3 = FADD(v0, v1)\n"
      "SELECT v4 = SELECT(v0, v1, v2)\nBROADCAST_SCALAR v5 = v4[0, 1]\nTRANSPOSE v6, v5\n"
      "MXU_OS WMEM[0], AMEM[0], k=3\nLOAD_MXU_MATRIX_ROW v7, row=1\nMXU WMEM[0], AMEM[1], tiles=2\nWAIT_MXU\n"
      "LOAD_MXU_RESULT v8\nPSUM_WRITE PSUM[1], v8\nPSUM_READ v9, PSUM[1]\nSTORE VMEM[2], v9\nSTORE VMEM[3], "
      "v6\n"
      "HALT\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nEND\n";
  const Bundle bundle = assemble(tasm);
  const std::optional<Activity> a = straight_line_activity(bundle, TensorCoreConfig{});
  REQUIRE(a);
  TraceLog log;
  RunResult r = run_bundle(bundle, TensorCoreConfig{}, &log);
  const uint64_t lanes = uint64_t(kRows) * kRows;
  CHECK(a->instructions == count(log, Track::kSxu));
  CHECK(a->instructions == 17);
  const uint64_t lane_ops = a->vpu_int_ops + a->vpu_int_mul_ops + a->vpu_fp_add_ops + a->vpu_fp_mul_ops;
  CHECK(lane_ops == lanes * count(log, Track::kVpu));  // MUL, FADD, and SELECT's COPY and SELECT
  CHECK(a->vpu_int_mul_ops == lanes);
  CHECK(a->vpu_fp_add_ops == lanes);
  CHECK(a->vpu_int_ops == 2 * lanes);
  CHECK(a->xlu_ops == count(log, Track::kXlu));
  CHECK(count(log, Track::kMxu) == 2);
  CHECK(a->mxu_macs == lanes * (3 + 2));  // OS: k = 3 terms; WS: 2 activation rows, each PE multiplying both
  CHECK(a->wsram_reads == 2);
  CHECK(a->asram_reads == 3 + 2);
  CHECK(a->vmem_reads == 2 + 2);   // two LOADs, two output lines
  CHECK(a->vmem_writes == 2 + 2);  // two VMEM records, two STOREs
  CHECK(a->psum_accesses == 2);
  CHECK(r.vmem_results.size() == 2);
  // what moves into and out of the core: on a core fed from HBM, the DMA engine's bytes
  TensorCoreConfig hbm;
  hbm.hbm_channels = 1;
  CHECK(a->data_bytes + a->program_bytes + a->output_bytes == run_bundle(bundle, hbm).hbm_bytes);
  CHECK(a->output_bytes == 2 * 4 * uint64_t(TensorCoreConfig::kTileElems));
}

TEST_CASE("activity: a program with a loop or a skip is not counted from its text") {
  for (const char* program :
       {"LOOP_BEGIN count=2\nVZERO v0\nLOOP_END\nHALT\nEND\n",
        "SET_PRED_IF_ZERO v0\nSKIP_IF_PRED\nVZERO v0\nHALT\nEND\n", "VZERO v0\nEND\n"}) {
    INFO(program);
    CHECK_FALSE(straight_line_activity(assemble(program), TensorCoreConfig{}));
  }
}

TEST_CASE("activity: a float MXU's seed reads its vreg, no SRAM, and multiplies nothing") {
  TensorCoreConfig f32;
  f32.mxu_dtype = 2;
  const std::optional<Activity> a = straight_line_activity(
      assemble(test::vmem_decl(0, Tile{}) + "LOAD v0, VMEM[0]\nMXU_SEED v0\nHALT\nEND\n"), f32);
  REQUIRE(a);
  CHECK(a->vreg_reads == 1);
  CHECK(a->wsram_reads == 0);
  CHECK(a->asram_reads == 0);
  CHECK(a->mxu_float_macs + a->mxu_macs == 0);
}
