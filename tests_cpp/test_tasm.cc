// TASM assembler/disassembler and the numeric bundle format (hardware.md §4, §5).
#include <catch2/catch.hpp>
#include <random>

#include "base/errors.h"
#include "helpers.h"
#include "isa/sxu_ops.h"

using namespace tinytpu;

TEST_CASE("the reference's example assembles to its documented wire lines (hardware.md §5)") {
  const char* tasm =
      "VMEM[0] = 1 2 3 4  5 6 7 8  9 10 11 12  13 14 15 16\n"
      "VMEM[1] = 1 1 1 1  1 1 1 1  1 1 1 1  1 1 1 1\n"
      "LOAD  v0, VMEM[0]\nLOAD  v1, VMEM[1]\nVPU   v2 = ADD(v0, v1)\nSTORE VMEM[2], v2\nHALT\n"
      "OUTPUT_VMEM VMEM[2]\nEND\n";
  std::string wire = to_wire(assemble(tasm));
  CHECK(wire ==
        "5 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n5 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n"
        "2 0 0 0 0 0 0 0 0 0\n2 0 1 1 0 0 0 0 0 0\n2 2 0 2 0 0 1 0 0 0\n2 1 2 0 2 0 0 0 0 0\n"
        "2 7 0 0 0 0 0 0 0 0\n6 2\n4\n");
  CHECK(test::run(tasm).cycles == 33);
}

TEST_CASE("reference mnemonics encode their fields as the reference assembler does (hardware.md §5)") {
  struct Case {
    const char* tasm;
    Instr expect;
  } cases[] = {
      {"BROADCAST v3, lane=2", {3, 0, 3, 3, 0, 2, 0, 0, 0}},
      {"SELECT v4 = SELECT(v1, v2, v3)", {8, 0, 4, 1, 0, 2, 3, 0, 0}},
      {"BROADCAST_SCALAR v1 = v2[3,1]", {9, 0, 1, 2, 0, 13, 0, 0, 0}},
      {"MXU WMEM[2], AMEM[5], tiles=3, psum_acc=PSUM[6], psum_row=2", {4, 0, 6, 2, 0, 2, 2, 5, 3}},
      {"VFILL v7, imm=-1", {31, 0, 7, 0, 0, 0, 255, 0, 0}},
      {"LOOP_BEGIN count=200", {28, 0, 0, 0, 0, 0, 0, 0, 200}},
      {"MXU_EPILOGUE v2 = GEMM(WMEM[1], AMEM[2], tiles=4) BIAS=v5 RELU REDUCE_SUMSQ DST_VMEM[9]",
       {42, 9, 2, 5, 31, 0, 1, 2, 4}},
      {"SET_REQUANT_CONFIG scale_mul=-2 scale_shift=7", {44, 255, 0, 0, 7, 0, 254, 255, 255}},
      {"DISPATCH_MXU_REQUANT WMEM[1] AMEM[2] tiles=3 ASRAM[4]", {45, 4, 0, 0, 0, 0, 1, 2, 3}},
      {"MXU_VPU_EPILOGUE v1 = GEMM(WMEM[0], AMEM[0], tiles=1) SRC2=v3 OP=IPAIR_ROTATE DST_VMEM[6]",
       {46, 6, 1, 3, 85, 1, 0, 0, 1}},
      {"vpu_bg V1 = fadd(v2, V3)", {41, 0, 1, 2, 18, 3, 0, 0, 0}},
  };
  for (const auto& c : cases) {
    INFO(c.tasm);
    Bundle b = assemble(std::string(c.tasm) + "\nEND");
    REQUIRE(b.records.size() == 1);
    CHECK(b.records[0].instr == c.expect);
  }
}

TEST_CASE("disassembly round-trips every valid encoding exactly") {
  std::mt19937 rng(7);
  int raw_forms = 0;
  for (int op = 0; op < kNumSxuOps; ++op) {
    for (int trial = 0; trial < 300; ++trial) {
      Instr in;
      in.op = uint8_t(op);
      // Mostly in-range operands, sometimes junk in every field.
      bool junk = trial % 3 == 0;
      in.vmemAddr = uint8_t(rng() % (junk ? 256 : 32));
      in.vregDst = uint8_t(rng() % 16);
      in.vregSrc = uint8_t(rng() % 16);
      in.vpuOp = uint8_t(rng() % (junk ? 128 : 86));
      in.vregSrc2 = uint8_t(rng() % 16);
      in.mxuWBase = uint8_t(rng() % (junk ? 256 : 32));
      in.mxuABase = uint8_t(rng() % (junk ? 256 : 32));
      in.mxuTLen = uint8_t(rng() % (junk ? 256 : 5));
      if (trial % 2)
        in.vpuOp = uint8_t(in.vpuOp % (TensorCoreConfig::kRows + 1));  // a float dispatch's group
      try {
        validate_instr(in);  // used fields in range; junk in unused fields is legal and must survive
      } catch (const AsmError&) {
        continue;
      }
      std::string text = format_instr(in);
      raw_forms += text.rfind("INSTR", 0) == 0;
      INFO(text);
      Bundle b = assemble(text + "\nEND");
      REQUIRE(b.records.size() == 1);
      CHECK(b.records[0].instr == in);
    }
  }
  CHECK(raw_forms > 0);  // some encodings only the raw INSTR form can express
}

TEST_CASE("canonical forms of the opcodes the reference TASM lacks") {
  CHECK(format_instr({12, 0, 1, 2, 0, 0, 0, 0, 0}) == "TRANSPOSE v1, v2");
  CHECK(format_instr({15, 3, 0, 4, 0, 0, 0, 0, 0}) == "PSUM_WRITE PSUM[3], v4");
  CHECK(format_instr({22, 7, 2, 5, 0, 0, 0, 0, 0}) == "PSUM_ACCUMULATE_ROW PSUM[7], row=2, v5");
  CHECK(format_instr({38, 0, 0, 0, 0, 0, 0, 0, 0}) == "PSUM_CLEAR_ALL");
  CHECK(format_instr({21, 0, 0, 0, 0, 0, 0, 0, 0}) == "SKIP_IF_PRED");
  CHECK(format_instr({3, 0, 2, 5, 0, 1, 0, 0, 0}) == "BROADCAST v2 = LANE(v5, lane=1)");
  CHECK(format_instr({2, 0, 2, 5, 2, 0, 0, 0, 0}) == "VPU v2 = RELU(v5)");
  CHECK(format_instr({2, 0, 2, 5, 0, 0, 0, 0, 0}) == "VPU v2 = ADD(v5, v0)");
  CHECK(format_instr({4, 0, 0, 0, 0, 3, 1, 2, 1}).rfind("INSTR 4", 0) == 0);  // PSUM mode 3 has no mnemonic
}

TEST_CASE("bundle text round-trips through both formats") {
  std::string src = test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/seed/gemm_4x8x4.tasm");
  Bundle b = assemble(src);
  std::string wire = to_wire(b);
  CHECK(to_wire(parse_wire(wire)) == wire);
  CHECK(to_wire(assemble(disassemble(b))) == wire);
  CHECK(to_wire(parse_bundle(wire)) == wire);
  CHECK(to_wire(parse_bundle(src)) == wire);
  std::string with_asram = "OUTPUT_ASRAM ASRAM[3]\nOUTPUT_MXU 0\nHALT\nEND\n";
  CHECK(to_wire(assemble(with_asram)) == "7 3\n3 0\n2 7 0 0 0 0 0 0 0 0\n4\n");
  CHECK(disassemble(assemble(with_asram)) == with_asram);
  // Both formats take what the deepest float and pipelined core can hold (format_limits): a wire bundle
  // printed from TASM with address 116 and a float operand record once failed to parse back.
  std::string deep = "VMEM[116] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nWMEM32[200] = " +
                     std::string("0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1065353216") +
                     "\nHALT\nOUTPUT_VMEM VMEM[255]\nEND\n";
  std::string deep_wire = to_wire(assemble(deep));
  CHECK(to_wire(parse_wire(deep_wire)) == deep_wire);
  CHECK(disassemble(parse_wire(deep_wire)) == deep);
}

TEST_CASE("wire comments and free layout (hardware.md §4.1)") {
  Bundle b = parse_wire(
      "# header\n5 0 1 2 3 4\n5 6 7 8 # mid-record comment\n9 10 11 12 13 14 15 16 6 0\n2 7 0 0 0 0 0 0 0 0 "
      "4");
  REQUIRE(b.records.size() == 3);
  CHECK(b.records[0].data[15] == 16);
}

TEST_CASE("directive addresses are range-checked like instruction operands, never wrapped") {
  using Catch::Matchers::Contains;
  // 2^32 once loaded VMEM[0] and -(2^32 - 2) output VMEM[2]: the int64 value was truncated to int.
  CHECK_THROWS_WITH(assemble("VMEM[4294967296] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\nEND"),
                    Contains("line 1") && Contains("VMEM address 4294967296 out of range (0..255)"));
  CHECK_THROWS_WITH(assemble("HALT\nOUTPUT_VMEM VMEM[-4294967294]\nEND"),
                    Contains("line 2") && Contains("VMEM address -4294967294 out of range (0..255)"));
  CHECK_THROWS_WITH(assemble("HALT\nOUTPUT_ASRAM ASRAM[256]\nEND"),
                    Contains("ASRAM address 256 out of range"));
  CHECK_THROWS_WITH(assemble("WMEM[-1] = 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nEND"),
                    Contains("WMEM address -1 out of range"));
  CHECK_THROWS_WITH(assemble("AMEM[99999999999999999999] = 0 0 0 0\nEND"),
                    Contains("AMEM address 99999999999999999999 out of range"));
  // The same in the numeric format, where the address is the record's second integer.
  CHECK_THROWS_WITH(parse_wire("5 4294967296 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n4"),
                    Contains("line 1") && Contains("VMEM address 4294967296 out of range (0..255)"));
  CHECK_THROWS_WITH(parse_wire("2 7 0 0 0 0 0 0 0 0\n6 -4294967294\n4"),
                    Contains("line 2") && Contains("VMEM address -4294967294 out of range (0..255)"));
  CHECK_THROWS_WITH(parse_wire("7 256\n4"), Contains("ASRAM address 256 out of range"));
  CHECK_THROWS_WITH(parse_wire("1 -1 0 0 0 0\n4"), Contains("AMEM address -1 out of range"));
  CHECK_THROWS_WITH(parse_wire("0 99999999999999999999 0\n4"), Contains("is not a 32-bit integer"));
  CHECK(assemble("HALT\nOUTPUT_VMEM VMEM[31]\nEND").records[1].addr == 31);
  CHECK(parse_wire("6 31\n4").records[0].addr == 31);
}

TEST_CASE("every other parsed integer is range-checked, never wrapped") {
  using Catch::Matchers::Contains;
  const std::string zeros15 = " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
  // Tile data: 2^32 + 5 would wrap to 5.
  CHECK_THROWS_WITH(assemble("VMEM[0] = 4294967301" + zeros15 + "\nEND"),
                    Contains("VMEM value 4294967301 out of range (-2147483648..2147483647)"));
  CHECK_THROWS_WITH(assemble("VMEM[0] = -2147483649" + zeros15 + "\nEND"), Contains("out of range"));
  CHECK(assemble("VMEM[0] = -2147483648" + zeros15 + "\nEND").records[0].data[0] == INT32_MIN);
  CHECK_THROWS_WITH(parse_wire("5 0 4294967301" + zeros15 + "\n4"),
                    Contains("tile value 4294967301 out of range"));
  CHECK_THROWS_WITH(parse_wire("5 0 -9223372036854775809" + zeros15 + "\n4"),
                    Contains("not a 32-bit integer"));
  // WMEM data: 256 + 1 would be int8 1.
  CHECK_THROWS_WITH(assemble("WMEM[0] = 257" + zeros15 + "\nEND"), Contains("int8 range"));
  CHECK_THROWS_WITH(parse_wire("0 0 257" + zeros15 + "\n4"), Contains("int8 range"));
  // Record types: 2^32 + 2 would be an instruction record.
  CHECK_THROWS_WITH(parse_wire("4294967298 7 0 0 0 0 0 0 0 0\n4"),
                    Contains("unknown bundle record type 4294967298"));
  // Instruction fields and operands: 2^32 + 7 would be HALT, 2^32 + 3 vreg 3, 2^40 + 1 a loop count of 1.
  CHECK_THROWS_WITH(parse_wire("2 4294967303 0 0 0 0 0 0 0 0\n4"), Contains("out of range"));
  CHECK_THROWS_WITH(assemble("INSTR 4294967303 0 0 0 0 0 0 0 0\nEND"), Contains("does not fit 6 bits"));
  CHECK_THROWS_WITH(assemble("LOAD v4294967299, VMEM[0]\nEND"), Contains("vreg v4294967299 out of range"));
  CHECK_THROWS_WITH(assemble("LOOP_BEGIN count=1099511627777\nEND"),
                    Contains("loop count 1099511627777 out"));
  CHECK_THROWS_WITH(assemble("VFILL v1, imm=4294967041\nEND"),
                    Contains("int8 immediate 4294967041 out of range"));
  CHECK_THROWS_WITH(assemble("SET_REQUANT_CONFIG scale_mul=4294967298 scale_shift=0\nEND"),
                    Contains("int32 immediate 4294967298 out of range"));
  // The OUTPUT_MXU flag is a 32-bit integer in both formats.
  CHECK_THROWS_WITH(assemble("OUTPUT_MXU 4294967296\nEND"), Contains("32-bit integer"));
  CHECK_THROWS_WITH(parse_wire("3 4294967296\n4"), Contains("flag 4294967296 out of range"));
}
