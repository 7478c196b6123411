// The instruction builders (isa/instr_builders.h, made from sxu_ops.def's rows) against the assembler, the
// other reading of the rows' templates: each builder puts every operand in the field its template reads it
// from.
#include <catch2/catch.hpp>

#include "isa/instr_builders.h"
#include "isa/tasm.h"

using namespace tinytpu;

TEST_CASE("instruction builders fill the fields their TASM templates name") {
  struct Case {
    Instr in;
    const char* tasm;
  } cases[] = {
      {instr::halt(), "HALT"},
      {instr::load(3, 17), "LOAD v3, VMEM[17]"},
      {instr::store(17, 3), "STORE VMEM[17], v3"},
      {instr::vpu(1, VpuOpcode::kSub, 2, 3), "VPU v1 = SUB(v2, v3)"},
      {instr::vpu(1, VpuOpcode::kNot, 2), "VPU v1 = NOT(v2)"},
      {instr::select(1, 2, 3, 4), "SELECT v1 = SELECT(v2, v3, v4)"},
      {instr::vzero(5), "VZERO v5"},
      {instr::vfill(5, -7), "VFILL v5, imm=-7"},
      {instr::vneg(5, 6), "VNEG v5, v6"},
      {instr::vabs(5, 6), "VABS v5, v6"},
      {instr::mxu(1, 2, 3), "MXU WMEM[1], AMEM[2], tiles=3"},
      {instr::mxu(1, 2, 1, PsumMode::kWrite, 4, 3),
       "MXU WMEM[1], AMEM[2], tiles=1, psum_write=PSUM[4], psum_row=3"},
      {instr::mxu(1, 2, 1, PsumMode::kAccumulate, 4, 3),
       "MXU WMEM[1], AMEM[2], tiles=1, psum_acc=PSUM[4], psum_row=3"},
      {instr::mxu_os(1, 2, 4), "MXU_OS WMEM[1], AMEM[2], k=4"},
      {instr::mxu_os_accumulate(1, 2, 4), "MXU_OS_ACCUMULATE WMEM[1], AMEM[2], k=4"},
      {instr::mxu_vpu_epilogue(6, 1, 2, 1, 7, VpuOpcode::kMax),
       "MXU_VPU_EPILOGUE v6 = GEMM(WMEM[1], AMEM[2], tiles=1) SRC2=v7 OP=MAX DST_VREG"},
      {instr::mxu_vpu_epilogue(0, 1, 2, 1, 0, VpuOpcode::kOr, 1, 9),
       "MXU_VPU_EPILOGUE v0 = GEMM(WMEM[1], AMEM[2], tiles=1) SRC2=v0 OP=OR DST_VMEM[9]"},
      {instr::broadcast_scalar(1, 2, 3, 1), "BROADCAST_SCALAR v1 = v2[3, 1]"},
      {instr::broadcast_row(1, 2, 3), "BROADCAST_ROW v1 = ROW(v2, row=3)"},
      {instr::broadcast_col(1, 2, 3), "BROADCAST_COL v1 = COL(v2, col=3)"},
      {instr::rotate(1, 2, 1), "ROTATE v1, v2, amount=1"},
      {instr::wait_mxu(), "WAIT_MXU"},
      {instr::load_mxu_result(6), "LOAD_MXU_RESULT v6"},
      {instr::load_mxu_matrix_row(6, 2), "LOAD_MXU_MATRIX_ROW v6, row=2"},
      {instr::psum_write(5, 6), "PSUM_WRITE PSUM[5], v6"},
      {instr::psum_accumulate_row(5, 2, 6), "PSUM_ACCUMULATE_ROW PSUM[5], row=2, v6"},
      {instr::psum_read(6, 5), "PSUM_READ v6, PSUM[5]"},
      {instr::psum_read_row(6, 5, 2), "PSUM_READ_ROW v6, PSUM[5], row=2"},
      {instr::psum_clear(5), "PSUM_CLEAR PSUM[5]"},
  };
  for (const Case& c : cases) {
    INFO(c.tasm);
    CHECK(format_instr(c.in) == c.tasm);
    CHECK(assemble(std::string(c.tasm) + "\nEND").records.front().instr == c.in);
  }
}

TEST_CASE("a builder takes no more operands than its template reads") {
  CHECK_THROWS_AS(instr::psum_clear(1, 2), std::logic_error);
  CHECK(instr::psum_clear() == instr::psum_clear(0));  // operands left out are 0
}
