// Bad input is an AsmError naming the line; a run the reference would hang on is a SimError naming
// pc and instruction, raised at once (hardware.md §8 item 14).
#include <catch2/catch.hpp>

#include "base/errors.h"
#include "helpers.h"

using namespace tinytpu;
using Catch::Matchers::Contains;

TEST_CASE("malformed TASM names the line and the problem") {
  CHECK_THROWS_WITH(assemble("HALT\nFROB v1\nEND"), Contains("line 2") && Contains("unknown mnemonic"));
  CHECK_THROWS_WITH(assemble("LOAD v16, VMEM[0]\nEND"),
                    Contains("line 1") && Contains("vreg v16 out of range"));
  CHECK_THROWS_WITH(assemble("LOAD v1, VMEM[256]\nEND"), Contains("address 256 out of range (0..255)"));
  CHECK_THROWS_WITH(assemble("VPU v1 = FROB(v2)\nEND"), Contains("unknown VPU op"));
  CHECK_THROWS_WITH(assemble("VFILL v1, imm=128\nEND"), Contains("out of range (-128..127)"));
  CHECK_THROWS_WITH(assemble("MXU WMEM[0], AMEM[0], tiles=32\nEND"), Contains("tile count 32"));
  CHECK_THROWS_WITH(assemble("LOOP_BEGIN count=0\nEND"), Contains("loop count 0"));
  CHECK_THROWS_WITH(assemble("LOAD v1 VMEM[0]\nEND"), Contains("malformed LOAD"));
  CHECK_THROWS_WITH(assemble("HALT\n"), Contains("no END"));
  CHECK_THROWS_WITH(assemble("END\nHALT\n"), Contains("after END"));
  CHECK_THROWS_WITH(assemble("WMEM[0] = 1 2 3 200 0 0 0 0 0 0 0 0 0 0 0 0\nEND"), Contains("int8 range"));
  CHECK_THROWS_WITH(assemble("AMEM[0] = 1 2 3\nEND"), Contains("needs 4 values"));
  CHECK_THROWS_WITH(assemble("LOAD v1, VMEM[0] $\nEND"), Contains("unexpected character"));
  std::string many;
  for (int i = 0; i < 257; ++i) many += "VZERO v1\n";
  CHECK_THROWS_WITH(assemble(many + "END"), Contains("line 257") && Contains("more than 256 instructions"));
  std::string outs;
  for (int i = 0; i < 32; ++i) outs += "OUTPUT_VMEM VMEM[0]\n";
  CHECK_THROWS_WITH(assemble(outs + "END"), Contains("more than 31 OUTPUT_VMEM"));
}

TEST_CASE("malformed numeric bundles name the line") {
  CHECK_THROWS_WITH(parse_wire("2 7 0 0 0 0 0 0 0 0\n10\n4"),
                    Contains("line 2") && Contains("unknown bundle record type 10"));
  CHECK_THROWS_WITH(parse_wire("2 0 256 1 0 0 0 0 0 0\n4"), Contains("vmemAddr = 256 does not fit 8 bits"));
  CHECK_THROWS_WITH(parse_wire("2 64 0 0 0 0 0 0 0 0\n4"), Contains("does not fit 6 bits"));
  CHECK_THROWS_WITH(parse_wire("2 2 0 1 0 99 0 0 0 0\n4"), Contains("VPU op 99 out of range"));
  CHECK_THROWS_WITH(parse_wire("5 0 1 2\n"), Contains("ends inside a record"));
  CHECK_THROWS_WITH(parse_wire("2 7 0 0 0 0 0 0 0 0\n"), Contains("no END"));
  CHECK_THROWS_WITH(parse_wire("5 0 1 x\n4"), Contains("not a 32-bit integer"));
}

TEST_CASE("programs that hang the reference raise SimError at once") {
  CHECK_THROWS_AS(test::run("WAIT_MXU\nHALT\nEND"), SimError);
  CHECK_THROWS_WITH(test::run("WAIT_MXU\nHALT\nEND"), Contains("pc 0 (WAIT_MXU)") && Contains("deadlocks"));
  CHECK_THROWS_WITH(test::run("VZERO v1\nLOAD_MXU_RESULT v2\nHALT\nEND"),
                    Contains("pc 1 (LOAD_MXU_RESULT v2)"));
  CHECK_THROWS_WITH(test::run("LOAD_MXU_MATRIX_ROW v2, row=1\nHALT\nEND"), Contains("deadlocks"));
  CHECK_THROWS_WITH(test::run("INSTR 60 0 0 0 0 0 0 0 0\nHALT\nEND"),
                    Contains("pc 0 (INSTR 60") && Contains("undefined SXU opcode"));
  CHECK_THROWS_WITH(test::run("VZERO v1\nEND"), Contains("pc 1") && Contains("never wrote"));
  CHECK_THROWS_WITH(test::run("HALT\nOUTPUT_MXU\nEND"), Contains("OUTPUT_MXU"));
  CHECK_THROWS_WITH(test::run("WMEM[0] = 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nAMEM[0] = 0 0 0 0\nMXU WMEM[0], "
                              "AMEM[0], tiles=1\nWAIT_MXU\n"
                              "LOAD_EPILOGUE_STAT v1\nHALT\nEND"),
                    Contains("LOAD_EPILOGUE_STAT"));
}

TEST_CASE("a run past the cycle limit is a SimError, not a hang") {
  std::string p = "LOOP_BEGIN count=255\nLOOP_BEGIN count=255\nVZERO v1\nLOOP_END\nLOOP_END\nHALT\nEND";
  CHECK_THROWS_WITH(test::run(p), Contains("50000 cycles"));
  TensorCoreConfig big;
  big.max_cycles = 1000000;
  CHECK(test::run(p, big).sxu_cycles == 2 + 255 * (2 + 255 * 4 + 2) + 1);  // taken branches are free
}
