// VPU opcode table and semantics (hardware.md §2.4, §3). Every expected value is derived by hand from
// the section cited in the test; float operands are written as IEEE-754 bit patterns.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <set>
#include <string>

#include "base/fp32.h"
#include "isa/vpu_ops.h"

using namespace tinytpu;

namespace {

constexpr int32_t kMin = INT32_MIN, kMax = INT32_MAX;

int32_t u(uint32_t bits) { return int32_t(bits); }  // a raw 32-bit pattern as the Int32 lane value

// Four signed bytes packed little-endian into one lane (§1 "Data types": byte 0 = bits 7:0).
int32_t p8(int b0, int b1, int b2, int b3) {
  return int32_t((uint32_t(b0) & 0xFF) | (uint32_t(b1) & 0xFF) << 8 | (uint32_t(b2) & 0xFF) << 16 |
                 (uint32_t(b3) & 0xFF) << 24);
}

// Float32 bit patterns used below.
constexpr uint32_t F0 = 0x00000000, FN0 = 0x80000000, F1 = 0x3F800000, FN1 = 0xBF800000;
constexpr uint32_t F2 = 0x40000000, F3 = 0x40400000, FHALF = 0x3F000000, FQUARTER = 0x3E800000;
constexpr uint32_t FINF = 0x7F800000, FNINF = 0xFF800000, FNAN = 0x7FC00000;
constexpr uint32_t F2P24 = 0x4B800000;  // 2^24

const Tile kJunk = {u(0xDEADBEEF), 7, -3, 0x12345, 99, u(0xCAFEBABE), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
const Tile kJunk2 = {-1, -2, -3, -4, -5, -6, -7, -8, 17, 18, 19, 20, 21, 22, u(0x80000000), 0x7FFFFFFF};

const VpuOpInfo& op(const char* name) {
  const VpuOpInfo* info = find_vpu_op(name);
  REQUIRE(info != nullptr);
  return *info;
}

Tile run(const char* name, const Tile& a, const Tile& b = kJunk, const Tile& prev = kJunk2) {
  Tile out{};
  op(name).fn(a, b, prev, out);
  return out;
}

Tile splat(int32_t v) {
  Tile t;
  t.fill(v);
  return t;
}

Tile same_rows(const Row& r) {
  Tile t;
  for (int i = 0; i < kTileElems; ++i) t[i] = r[i % 4];
  return t;
}

// One lane case: a, b -> want.
struct Lane {
  int32_t a, b, want;
};

// Lane-wise op check: case k goes to lane (c) of row r where k = (c + r) % 4, so every case visits
// every column and every row. A unary op is run with two different b tiles (src2 must be ignored),
// and `prev` is junk (only SELECT reads it).
void check_lanes(const char* name, const std::array<Lane, 4>& cases) {
  Tile a, b, want;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kRows; ++c) {
      const Lane& l = cases[(c + r) % 4];
      a[4 * r + c] = l.a;
      b[4 * r + c] = l.b;
      want[4 * r + c] = l.want;
    }
  INFO("op " << name);
  CHECK(run(name, a, b) == want);
  if (op(name).arity == 1) {
    CHECK(run(name, a, kJunk) == want);
    CHECK(run(name, a, kJunk2) == want);
  }
}

// A reduction result broadcast per row: element (r, c) = v[r].
Tile row_bcast(const Row& v) {
  Tile t;
  for (int i = 0; i < kTileElems; ++i) t[i] = v[i / 4];
  return t;
}

// The integer reduction tile used by the row/col/tile tests.
const Tile kM = {1,  -2,  3,  4,    //
                 5,  6,   -7, 8,    //
                 -9, 10,  11, -12,  //
                 13, -14, 15, 16};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Table

TEST_CASE("VPU op table: 86 ops, index == opcode, reference mnemonics", "[vpu]") {
  const char* names[kNumVpuOps] = {"ADD",
                                   "MUL",
                                   "RELU",
                                   "MAX",
                                   "SUM_REDUCE",
                                   "CMPLT",
                                   "CMPNE",
                                   "SUB",
                                   "CMPEQ",
                                   "MAX_REDUCE",
                                   "SHL",
                                   "SHR",
                                   "MIN",
                                   "MIN_REDUCE",
                                   "DIV",
                                   "AND",
                                   "OR",
                                   "XOR",
                                   "FADD",
                                   "FMUL",
                                   "FSUB",
                                   "FMAX",
                                   "FCMPLT",
                                   "FRECIP",
                                   "I2F",
                                   "F2I",
                                   "NOT",
                                   "SELECT",
                                   "COPY",
                                   "SUM_REDUCE_COL",
                                   "MAX_REDUCE_COL",
                                   "MIN_REDUCE_COL",
                                   "SUM_REDUCE_TILE",
                                   "MAX_REDUCE_TILE",
                                   "MIN_REDUCE_TILE",
                                   "MUL_REDUCE",
                                   "MUL_REDUCE_COL",
                                   "MUL_REDUCE_TILE",
                                   "FSUM_REDUCE_TILE",
                                   "FMAX_REDUCE_TILE",
                                   "FMIN_REDUCE_TILE",
                                   "FMIN",
                                   "FSUM_REDUCE",
                                   "FMAX_REDUCE",
                                   "FMIN_REDUCE",
                                   "FSUM_REDUCE_COL",
                                   "FMAX_REDUCE_COL",
                                   "FMIN_REDUCE_COL",
                                   "FPROD_REDUCE_TILE",
                                   "FPROD_REDUCE",
                                   "FPROD_REDUCE_COL",
                                   "EXP2",
                                   "LOG2",
                                   "SIN",
                                   "COS",
                                   "PACKED_I8_ADD",
                                   "PACKED_I8_SUB",
                                   "PACKED_I8_MAX",
                                   "PACKED_I8_MIN",
                                   "PACKED_I8_NEG",
                                   "PACKED_I8_RELU",
                                   "PACKED_I8_CMPLT",
                                   "PACKED_I8_CMPEQ",
                                   "PACKED_I8_MUL_LOW",
                                   "PACKED_I8_MUL_HIGH",
                                   "PACKED_I8_ABS",
                                   "SIGN",
                                   "PACKED_I8_SIGN",
                                   "FSIGN",
                                   "ARGMIN",
                                   "ARGMAX",
                                   "CLZ",
                                   "POPCOUNT",
                                   "CTZ",
                                   "BYTE_REVERSE",
                                   "SAT_ADD_I32",
                                   "SAT_SUB_I32",
                                   "ABS_DIFF_I32",
                                   "PACKED_I8_ABS_DIFF",
                                   "FABS",
                                   "ROTL",
                                   "ROTR",
                                   "MIN_U32",
                                   "MAX_U32",
                                   "PAIR_ROTATE",
                                   "IPAIR_ROTATE"};
  for (int i = 0; i < kNumVpuOps; ++i) {
    INFO("opcode " << i);
    CHECK(kVpuOps[i].opcode == i);
    CHECK(std::string(kVpuOps[i].name) == names[i]);
    CHECK(kVpuOps[i].fn != nullptr);
    CHECK(find_vpu_op(names[i]) == &kVpuOps[i]);
  }
}

TEST_CASE("find_vpu_op is case-insensitive", "[vpu]") {
  CHECK(find_vpu_op("fsum_reduce_tile") == &kVpuOps[38]);
  CHECK(find_vpu_op("Packed_I8_Abs_Diff") == &kVpuOps[78]);
  CHECK(find_vpu_op("add") == &kVpuOps[0]);
  CHECK(find_vpu_op("ADDX") == nullptr);
  CHECK(find_vpu_op("AD") == nullptr);
  CHECK(find_vpu_op("") == nullptr);
}

TEST_CASE("VPU op arity (unary = the reference TASM list + I2F, F2I, FRECIP)", "[vpu]") {
  const std::set<std::string> unary = {"RELU",
                                       "SUM_REDUCE",
                                       "MAX_REDUCE",
                                       "MIN_REDUCE",
                                       "NOT",
                                       "COPY",
                                       "SUM_REDUCE_COL",
                                       "MAX_REDUCE_COL",
                                       "MIN_REDUCE_COL",
                                       "SUM_REDUCE_TILE",
                                       "MAX_REDUCE_TILE",
                                       "MIN_REDUCE_TILE",
                                       "MUL_REDUCE",
                                       "MUL_REDUCE_COL",
                                       "MUL_REDUCE_TILE",
                                       "FSUM_REDUCE_TILE",
                                       "FMAX_REDUCE_TILE",
                                       "FMIN_REDUCE_TILE",
                                       "FSUM_REDUCE",
                                       "FMAX_REDUCE",
                                       "FMIN_REDUCE",
                                       "FSUM_REDUCE_COL",
                                       "FMAX_REDUCE_COL",
                                       "FMIN_REDUCE_COL",
                                       "FPROD_REDUCE_TILE",
                                       "FPROD_REDUCE",
                                       "FPROD_REDUCE_COL",
                                       "EXP2",
                                       "LOG2",
                                       "SIN",
                                       "COS",
                                       "PACKED_I8_NEG",
                                       "PACKED_I8_RELU",
                                       "PACKED_I8_ABS",
                                       "SIGN",
                                       "PACKED_I8_SIGN",
                                       "FSIGN",
                                       "ARGMIN",
                                       "ARGMAX",
                                       "CLZ",
                                       "POPCOUNT",
                                       "CTZ",
                                       "BYTE_REVERSE",
                                       "FABS",
                                       "I2F",
                                       "F2I",
                                       "FRECIP"};
  REQUIRE(unary.size() == 47);
  for (const VpuOpInfo& o : kVpuOps) {
    INFO(o.name);
    CHECK(o.arity == (unary.count(o.name) ? 1 : 2));
  }
}

TEST_CASE("VPU op kinds and done latency (§2.4)", "[vpu]") {
  for (const VpuOpInfo& o : kVpuOps) {
    INFO(o.name);
    const int i = o.opcode;
    const bool fp_reduce = i == 38 || i == 39 || i == 40 || i == 48;
    const bool transc = i >= 51 && i <= 54;
    CHECK(o.kind == (fp_reduce ? VpuKind::kFpReduce : transc ? VpuKind::kTransc : VpuKind::kComb));
    if (!transc) CHECK(o.transc_steps == 0);
  }
  CHECK(op("EXP2").transc_steps == 7);
  CHECK(op("LOG2").transc_steps == 6);
  CHECK(op("SIN").transc_steps == 11);
  CHECK(op("COS").transc_steps == 5);
  // §2.4: combinational 1; FpReducer 17; TranscUnit 16*S + 2.
  CHECK(vpu_done_latency(op("ADD")) == 1);
  CHECK(vpu_done_latency(op("FSUM_REDUCE")) == 1);
  CHECK(vpu_done_latency(op("FSUM_REDUCE_TILE")) == 17);
  CHECK(vpu_done_latency(op("FPROD_REDUCE_TILE")) == 17);
  CHECK(vpu_done_latency(op("EXP2")) == 114);
  CHECK(vpu_done_latency(op("LOG2")) == 98);
  CHECK(vpu_done_latency(op("SIN")) == 178);
  CHECK(vpu_done_latency(op("COS")) == 82);
}

// ---------------------------------------------------------------------------------------------------
// §3.2 integer lane-wise ops (Int32, wrap)

TEST_CASE("VPU integer arithmetic and compare (§3.2)", "[vpu]") {
  check_lanes("ADD", {{{1, 2, 3}, {kMax, 1, kMin}, {-5, 3, -2}, {kMin, -1, kMax}}});
  // MUL keeps the low 32 bits: 65536^2 = 2^32 -> 0; 65537^2 = 2^32 + 131073 -> 0x20001.
  check_lanes("MUL", {{{6, -7, -42}, {65536, 65536, 0}, {kMin, -1, kMin}, {0x10001, 0x10001, 0x20001}}});
  check_lanes("SUB", {{{5, 7, -2}, {kMin, 1, kMax}, {0, kMin, kMin}, {-3, -3, 0}}});
  check_lanes("RELU", {{{5, 0, 5}, {-5, 0, 0}, {0, 0, 0}, {kMin, 0, 0}}});
  check_lanes("MAX", {{{3, -4, 3}, {-1, -2, -1}, {kMin, kMax, kMax}, {7, 7, 7}}});
  check_lanes("MIN", {{{3, -4, -4}, {kMin, kMax, kMin}, {0, 0, 0}, {10, 9, 9}}});
  check_lanes("CMPLT", {{{-1, 0, 1}, {0, -1, 0}, {5, 5, 0}, {kMin, kMax, 1}}});
  check_lanes("CMPNE", {{{1, 1, 0}, {1, 2, 1}, {-1, u(0xFFFFFFFF), 0}, {0, kMin, 1}}});
  check_lanes("CMPEQ", {{{1, 1, 1}, {1, 2, 0}, {kMin, kMin, 1}, {0, 1, 0}}});
  check_lanes("SIGN", {{{5, 0, 1}, {-5, 0, -1}, {0, 0, 0}, {kMin, 0, -1}}});
}

TEST_CASE("VPU DIV (§3.2 op 14, §8 item 15)", "[vpu]") {
  // Truncation toward zero (TbVPU cases), b == 0 -> 0, INT_MIN / -1 -> INT_MIN (our wrap choice).
  check_lanes("DIV", {{{-9, 3, -3}, {-10, -3, 3}, {7, 0, 0}, {kMin, -1, kMin}}});
  check_lanes("DIV", {{{-8, 2, -4}, {10, -5, -2}, {7, 2, 3}, {-7, 2, -3}}});
  check_lanes("DIV", {{{0, 0, 0}, {kMin, 1, kMin}, {kMax, -1, -kMax}, {kMin, 0, 0}}});
}

TEST_CASE("VPU bitwise, shifts and rotates (§3.2)", "[vpu]") {
  check_lanes("AND", {{{0xF0F0, 0xFF00, 0xF000}, {-1, 0x1234, 0x1234}, {kMin, -1, kMin}, {5, 2, 0}}});
  check_lanes("OR", {{{0xF0, 0x0F, 0xFF}, {kMin, 1, kMin + 1}, {0, 0, 0}, {-2, 1, -1}}});
  check_lanes("XOR", {{{0xFF, 0x0F, 0xF0}, {-1, 0, -1}, {-1, -1, 0}, {kMin, kMax, -1}}});
  check_lanes("NOT", {{{0, 0, -1}, {-1, 0, 0}, {0x0F0F0F0F, 0, u(0xF0F0F0F0)}, {kMax, 0, kMin}}});
  check_lanes("COPY", {{{5, 0, 5}, {-5, 0, -5}, {kMin, 0, kMin}, {u(0x7FC00001), 0, u(0x7FC00001)}}});
  // SHL/SHR use b & 31; SHR is logical (zero fill).
  check_lanes("SHL", {{{1, 4, 16}, {1, 33, 2}, {-1, 31, kMin}, {0x12345678, 32, 0x12345678}}});
  check_lanes("SHR", {{{-1, 28, 15}, {kMin, 31, 1}, {256, 4, 16}, {-16, 32, -16}}});
  check_lanes(
      "ROTL",
      {{{u(0x80000001), 1, 3}, {0x12345678, 0, 0x12345678}, {0x12345678, 36, 0x23456781}, {1, 31, kMin}}});
  check_lanes("ROTR", {{{u(0x80000001), 1, u(0xC0000000)},
                        {0x12345678, 4, u(0x81234567)},
                        {0x12345678, 32, 0x12345678},
                        {1, -1, 2}}});
  check_lanes("CLZ", {{{0, 0, 32}, {1, 0, 31}, {-1, 0, 0}, {0x00010000, 0, 15}}});
  check_lanes("POPCOUNT", {{{0, 0, 0}, {-1, 0, 32}, {0x0F0F0F0F, 0, 16}, {kMin, 0, 1}}});
  check_lanes("CTZ", {{{0, 0, 32}, {1, 0, 0}, {kMin, 0, 31}, {0x00010000, 0, 16}}});
  check_lanes(
      "BYTE_REVERSE",
      {{{0x12345678, 0, 0x78563412}, {0, 0, 0}, {0xFF, 0, u(0xFF000000)}, {u(0x80000001), 0, 0x01000080}}});
  check_lanes("MIN_U32", {{{-1, 1, 1}, {kMin, kMax, kMax}, {0, -1, 0}, {7, 9, 7}}});
  check_lanes("MAX_U32", {{{-1, 1, -1}, {kMin, kMax, kMin}, {0, 0, 0}, {7, 9, 9}}});
}

TEST_CASE("VPU saturating Int32 ops (§3.2 ops 75-77)", "[vpu]") {
  check_lanes("SAT_ADD_I32", {{{kMax, 1, kMax}, {kMin, -1, kMin}, {5, -7, -2}, {kMax, kMin, -1}}});
  check_lanes("SAT_SUB_I32", {{{kMin, 1, kMin}, {kMax, -1, kMax}, {0, kMin, kMax}, {5, 7, -2}}});
  // |a - b| in 33 bits clamped to INT_MAX: |INT_MIN - 0| = 2^31 and |INT_MAX - INT_MIN| = 2^32 - 1 clamp.
  check_lanes("ABS_DIFF_I32", {{{kMin, 0, kMax}, {3, 10, 7}, {kMax, kMin, kMax}, {-5, -5, 0}}});
}

TEST_CASE("VPU SELECT reads the previous result (§3.2 op 27)", "[vpu]") {
  const Tile cond = same_rows({0, 1, -5, 0});
  const Tile t = same_rows({10, 20, 30, 40});
  const Tile prev = same_rows({-1, -2, -3, -4});
  CHECK(run("SELECT", cond, t, prev) == same_rows({-1, 20, 30, -4}));
  CHECK(run("SELECT", splat(0), t, kJunk) == kJunk);
}

TEST_CASE("VPU IPAIR_ROTATE (§3.2 op 85)", "[vpu]") {
  // Pair (3,4) by (c,s) = (2,5): 3*2 - 4*5 = -14, 3*5 + 4*2 = 23.
  // Pair (1e5,1e5) by (1e5,1): 1e10 mod 2^32 = 1410065408; minus 1e5 = 1409965408, plus 1e5 = 1410165408.
  const Tile a = same_rows({3, 4, 100000, 100000});
  const Tile b = same_rows({2, 5, 100000, 1});
  CHECK(run("IPAIR_ROTATE", a, b) == same_rows({-14, 23, 1409965408, 1410165408}));
}

// ---------------------------------------------------------------------------------------------------
// §3.2 integer reductions on kM

TEST_CASE("VPU integer row reductions (§3.2 ops 4, 9, 13, 35, 69, 70)", "[vpu]") {
  // kM rows: {1,-2,3,4} {5,6,-7,8} {-9,10,11,-12} {13,-14,15,16}.
  CHECK(run("SUM_REDUCE", kM) == row_bcast({6, 12, 0, 30}));
  CHECK(run("MAX_REDUCE", kM) == row_bcast({4, 8, 11, 16}));
  CHECK(run("MIN_REDUCE", kM) == row_bcast({-2, -7, -12, -14}));
  CHECK(run("MUL_REDUCE", kM) == row_bcast({-24, -1680, 11880, -43680}));
  CHECK(run("ARGMIN", kM) == row_bcast({1, 2, 3, 1}));
  CHECK(run("ARGMAX", kM) == row_bcast({3, 3, 2, 3}));
  // Ties go to the first lane (strict < / >).
  const Tile ties = {5, 1, 1, 5, 0, 0, 0, 0, -3, 7, -3, 7, 2, 9, 9, 2};
  CHECK(run("ARGMIN", ties) == row_bcast({1, 0, 0, 0}));
  CHECK(run("ARGMAX", ties) == row_bcast({0, 0, 1, 1}));
  // Wrap: INT_MAX + 1 = INT_MIN; 65536 * 65536 = 2^32 -> 0.
  const Tile wrap = {kMax, 1, 0, 0, 65536, 65536, 1, 1, kMin, kMin, 0, 0, -1, -1, -1, -1};
  CHECK(run("SUM_REDUCE", wrap) == row_bcast({kMin, 131074, 0, -4}));
  CHECK(run("MUL_REDUCE", wrap) == row_bcast({0, 0, 0, 1}));
}

TEST_CASE("VPU integer column reductions (§3.2 ops 29-31, 36)", "[vpu]") {
  // kM columns: {1,5,-9,13} {-2,6,10,-14} {3,-7,11,15} {4,8,-12,16}.
  CHECK(run("SUM_REDUCE_COL", kM) == same_rows({10, 0, 22, 16}));
  CHECK(run("MAX_REDUCE_COL", kM) == same_rows({13, 10, 15, 16}));
  CHECK(run("MIN_REDUCE_COL", kM) == same_rows({-9, -14, -7, -12}));
  CHECK(run("MUL_REDUCE_COL", kM) == same_rows({-585, 1680, -3465, -6144}));
}

TEST_CASE("VPU integer tile reductions (§3.2 ops 32-34, 37)", "[vpu]") {
  CHECK(run("SUM_REDUCE_TILE", kM) == splat(48));
  CHECK(run("MAX_REDUCE_TILE", kM) == splat(16));
  CHECK(run("MIN_REDUCE_TILE", kM) == splat(-14));
  // Column products {-1, 2, 3, -2} -> 12.
  const Tile p = {1, 2, 1, 1, -1, 1, 3, 1, 1, 1, 1, -2, 1, 1, 1, 1};
  CHECK(run("MUL_REDUCE_TILE", p) == splat(12));
  CHECK(run("MUL_REDUCE_TILE", splat(4)) == splat(0));       // 4^16 = 2^32 wraps to 0
  CHECK(run("MUL_REDUCE_TILE", splat(-2)) == splat(65536));  // (-2)^16
  CHECK(run("SUM_REDUCE_TILE", splat(kMax)) == splat(-16));  // 16 * (2^31 - 1) mod 2^32 = -16
}

// ---------------------------------------------------------------------------------------------------
// §3.3 packed int8

TEST_CASE("VPU packed int8 binary ops (§3.3)", "[vpu]") {
  check_lanes("PACKED_I8_ADD", {{{p8(100, -100, 1, -1), p8(100, -100, 2, 127), p8(127, -128, 3, 126)},
                                 {0, 0, 0},
                                 {p8(-128, 127, 0, 5), p8(-1, 1, 0, -5), p8(-128, 127, 0, 0)},
                                 {p8(50, 60, -70, -80), p8(77, 67, -58, -48), p8(127, 127, -128, -128)}}});
  check_lanes("PACKED_I8_SUB", {{{p8(100, -100, 0, -128), p8(-100, 100, -128, 1), p8(127, -128, 127, -128)},
                                 {p8(5, -5, 0, 1), p8(3, -3, 0, 1), p8(2, -2, 0, 0)},
                                 {0, 0, 0},
                                 {-1, p8(1, 1, 1, 1), p8(-2, -2, -2, -2)}}});
  check_lanes("PACKED_I8_MAX", {{{p8(-1, 5, -128, 127), p8(1, -5, 127, -128), p8(1, 5, 127, 127)},
                                 {0, 0, 0},
                                 {p8(-3, -4, 0, 0), p8(-4, -3, 0, -1), p8(-3, -3, 0, 0)},
                                 {-1, 0, 0}}});
  check_lanes("PACKED_I8_MIN", {{{p8(-1, 5, -128, 127), p8(1, -5, 127, -128), p8(-1, -5, -128, -128)},
                                 {0, 0, 0},
                                 {-1, 0, -1},
                                 {p8(10, 20, 30, 40), p8(40, 30, 20, 10), p8(10, 20, 20, 10)}}});
  // 0xFF per true byte, 0x00 per false byte.
  check_lanes("PACKED_I8_CMPLT", {{{p8(-1, 5, -128, 127), p8(1, -5, 127, -128), p8(-1, 0, -1, 0)},
                                   {0, 0, 0},
                                   {p8(3, 3, 3, 3), p8(4, 3, 2, -4), p8(-1, 0, 0, 0)},
                                   {u(0x80808080), 0x7F7F7F7F, -1}}});
  check_lanes("PACKED_I8_CMPEQ", {{{p8(1, 2, 3, 4), p8(1, 0, 3, 0), p8(-1, 0, -1, 0)},
                                   {0, 0, -1},
                                   {-1, -1, -1},
                                   {0x80, 0x7F, u(0xFFFFFF00)}}});
  // 127*2 = 254 -> low byte 0xFE (-2); -128*-1 = 128 -> 0x80 (-128); 16*16 = 256 -> 0.
  check_lanes("PACKED_I8_MUL_LOW", {{{p8(10, -10, 127, -128), p8(10, 10, 2, -1), p8(100, -100, -2, -128)},
                                     {p8(16, 16, 0, 1), p8(16, -16, 5, 1), p8(0, 0, 0, 1)},
                                     {0, 0, 0},
                                     {p8(-1, -1, 3, 7), p8(-1, 1, -3, 7), p8(1, -1, -9, 49)}}});
  // Bits 15:8 of the 16-bit product: -100 = 0xFF9C -> -1; 256 = 0x0100 -> 1; -256 -> -1;
  // 16384 = 0x4000 -> 64; 16129 = 0x3F01 -> 63; -16256 = 0xC080 -> -64.
  check_lanes("PACKED_I8_MUL_HIGH", {{{p8(10, -10, 127, -128), p8(10, 10, 2, -1), p8(0, -1, 0, 0)},
                                      {p8(16, 16, -128, 127), p8(16, -16, -128, 127), p8(1, -1, 64, 63)},
                                      {p8(-128, 0, 0, 0), p8(127, 0, 0, 0), p8(-64, 0, 0, 0)},
                                      {0, 0, 0}}});
  // sat_abs(sat_sub(a, b)): -128-127 -> -128 -> 127; 127-(-128) -> 127; -128-0 = -128 -> 127.
  check_lanes("PACKED_I8_ABS_DIFF", {{{p8(-128, 127, 10, 0), p8(127, -128, 3, 0), p8(127, 127, 7, 0)},
                                      {p8(0, -128, 5, -5), p8(1, 0, -5, 5), p8(1, 127, 10, 10)},
                                      {0, 0, 0},
                                      {-1, p8(1, 1, 1, 1), p8(2, 2, 2, 2)}}});
}

TEST_CASE("VPU packed int8 unary ops (§3.3)", "[vpu]") {
  check_lanes("PACKED_I8_NEG", {{{p8(-128, 127, 0, -1), 0, p8(127, -127, 0, 1)},
                                 {0, 0, 0},
                                 {p8(5, -5, 1, -100), 0, p8(-5, 5, -1, 100)},
                                 {u(0x80808080), 0, 0x7F7F7F7F}}});
  check_lanes(
      "PACKED_I8_RELU",
      {{{p8(-128, 127, 0, -1), 0, p8(0, 127, 0, 0)}, {0, 0, 0}, {-1, 0, 0}, {0x7F01FF80, 0, 0x7F010000}}});
  check_lanes("PACKED_I8_ABS", {{{p8(-128, 127, 0, -1), 0, p8(127, 127, 0, 1)},
                                 {0, 0, 0},
                                 {p8(-5, 5, -100, 100), 0, p8(5, 5, 100, 100)},
                                 {u(0x80808080), 0, 0x7F7F7F7F}}});
  check_lanes("PACKED_I8_SIGN", {{{p8(-128, 127, 0, -1), 0, p8(-1, 1, 0, -1)},
                                  {0, 0, 0},
                                  {p8(5, -5, 1, 0), 0, p8(1, -1, 1, 0)},
                                  {u(0x80808080), 0, -1}}});
}

// ---------------------------------------------------------------------------------------------------
// §3.4 float lane-wise ops

TEST_CASE("VPU FADD/FMUL/FSUB (§3.4 ops 18-20)", "[vpu]") {
  check_lanes("FADD", {{{u(F1), u(F2), u(F3)},
                        {u(FINF), u(FNINF), u(FNAN)},                   // inf - inf -> 0x7FC00000
                        {u(F1), u(FN1), u(F0)},                         // exact zero of opposite signs -> +0
                        {u(FN0), u(FN0), u(FN0)}}});                    // -0 + -0 = -0
  check_lanes("FMUL", {{{u(0x3FC00000), u(0xC0000000), u(0xC0400000)},  // 1.5 * -2 = -3
                        {u(F0), u(FINF), u(FNAN)},                      // 0 * inf
                        {0x00000200, u(0x3D000000), 0x00000010},        // 2^-140 * 2^-5 = 2^-145
                        {u(0x7F7FFFFF), u(F2), u(FINF)}}});             // overflow
  check_lanes("FSUB", {{{u(F3), u(F1), u(F2)},
                        {u(F1), u(0x7FC00001), u(0xFFC00001)},  // NaN b comes back sign-flipped
                        {u(0x40200000), u(0x40200000), u(F0)},  // 2.5 - 2.5 = +0
                        {u(FN0), u(F0), u(FN0)}}});             // -0 - +0 = -0
}

TEST_CASE("VPU FMAX/FMIN/FCMPLT (§3.4 ops 21, 41, 22)", "[vpu]") {
  check_lanes("FMAX", {{{u(FN0), u(F0), u(FN0)},  // EQ keeps a
                        {u(F0), u(FN0), u(F0)},
                        {u(FNAN), u(F1), u(F1)},                   // NaN -> b
                        {u(F1), u(0x7F800001), u(0x7F800001)}}});  // b's sNaN passes unquieted
  check_lanes("FMIN", {{{u(F0), u(FN0), u(F0)},
                        {u(FN1), u(F2), u(FN1)},
                        {u(0x7FC00001), u(F2), u(F2)},
                        {u(F2), u(0xFFC00000), u(0xFFC00000)}}});
  check_lanes("FCMPLT",
              {{{u(F1), u(F2), 1}, {u(FN0), u(F0), 0}, {u(FNAN), u(F1), 0}, {u(FNINF), u(0xFF7FFFFF), 1}}});
}

TEST_CASE("VPU FRECIP (§3.4 op 23)", "[vpu]") {
  // 2.0: estimate 0x7F000000 - 0x40000000 = 0x3F000000 = 0.5, and 2*0.5 = 1 keeps every Newton step
  // at 0.5. -4.0: estimate {1, 0x3E800000} = -0.25, likewise exact.
  // 3.0: estimate 0x3EC00000 = 0.375 = 3/8; every step below is exact in float32:
  //   ax = 9/8, 2 - 9/8 = 7/8, x = 21/64; ax = 63/64, 2 - ax = 65/64, x = 1365/4096;
  //   ax = 4095/4096, 2 - ax = 4097/4096, x = 5592405/2^24 = 0x555555 * 2^-24 = 0x3EAAAAAA.
  // 0: estimate 2^127; 0*2^127 = 0, 2 - 0 = 2, x = 2^128 -> +inf; then 0*inf = 0x7FC00000, negated
  //   0xFFC00000, 2 + that -> 0xFFC00000 (qNaN b), inf * that -> 0xFFC00000; step 3: 0 * 0xFFC00000
  //   -> 0xFFC00000, negated 0x7FC00000, 2 + -> 0x7FC00000, 0xFFC00000 * 0x7FC00000 -> 0xFFC00000 (a).
  check_lanes("FRECIP", {{{u(F0), 0, u(0xFFC00000)},
                          {u(F3), 0, u(0x3EAAAAAA)},
                          {u(F2), 0, u(FHALF)},
                          {u(0xC0800000), 0, u(0xBE800000)}}});
  check_lanes("FRECIP",
              {{{u(F1), 0, u(F1)}, {u(FN1), 0, u(FN1)}, {u(FQUARTER), 0, 0x40800000}, {u(FHALF), 0, u(F2)}}});
}

TEST_CASE("VPU float lane ops equal fp32's lane functions on every lane, with and without NaN lanes",
          "[vpu]") {
  // The VPU computes float lanes on the host FPU and redoes a tile exactly only when a result is a NaN
  // (vpu_ops.cc): tiles of ordinary values, and tiles where one lane meets a NaN, an invalid operation or
  // an infinity, must give fp32.h's per-lane results.
  std::mt19937 rng(7);
  const uint32_t special[] = {0,          fp32::kSignBit, FINF,       FNINF,      FNAN,      0xFFC00001,
                              0x7F800001, 0x00000001,     0x807FFFFF, 0x7F7FFFFF, 0x00800000};
  auto ordinary = [&] {  // a finite float of any magnitude and sign, subnormals included
    uint32_t bits = rng();
    return (bits & 0x7F800000) == 0x7F800000 ? bits & ~0x40000000u : bits;
  };
  auto recip = [](uint32_t a) {  // frecip by its definition in §3.4, through fp32's lane functions
    uint32_t x = (a & fp32::kSignBit) | ((0x7F000000u - (a & ~fp32::kSignBit)) & ~fp32::kSignBit);
    for (int i = 0; i < 3; ++i) x = fp32::mul(x, fp32::add(F2, fp32::mul(a, x) ^ fp32::kSignBit));
    return x;
  };
  int exact_redone = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    Tile a, b;
    for (int i = 0; i < kTileElems; ++i) a[i] = u(ordinary()), b[i] = u(ordinary());
    if (trial % 2) {  // one lane special in a or b
      const int lane = int(rng() % kTileElems);
      (rng() % 2 ? a : b)[lane] = u(special[rng() % std::size(special)]);
    }
    if (trial % 5 == 0) b = a;  // x - x, x * x
    Tile add, sub, mul, rcp, mx, mn, lt;
    for (int i = 0; i < kTileElems; ++i) {
      const uint32_t x = uint32_t(a[i]), y = uint32_t(b[i]);
      add[i] = u(fp32::add(x, y)), sub[i] = u(fp32::sub(x, y)), mul[i] = u(fp32::mul(x, y));
      rcp[i] = u(recip(x)), mx[i] = u(fp32::max_of(x, y)), mn[i] = u(fp32::min_of(x, y));
      lt[i] = fp32::compare(x, y) == fp32::Order::kLT;
      exact_redone += fp32::is_nan(uint32_t(add[i])) || fp32::is_nan(uint32_t(rcp[i]));
    }
    INFO("trial " << trial);
    CHECK(run("FADD", a, b) == add);
    CHECK(run("FSUB", a, b) == sub);
    CHECK(run("FMUL", a, b) == mul);
    CHECK(run("FRECIP", a, b) == rcp);
    CHECK(run("FMAX", a, b) == mx);
    CHECK(run("FMIN", a, b) == mn);
    CHECK(run("FCMPLT", a, b) == lt);
  }
  CHECK(exact_redone > 100);  // the NaN path was taken, not only the host one
}

TEST_CASE("VPU I2F/F2I (§3.4 ops 24, 25)", "[vpu]") {
  check_lanes("I2F", {{{0, 0, 0}, {16777217, 0, u(F2P24)}, {kMax, 0, 0x4EFFFFFF}, {kMin, 0, u(0xCF000000)}}});
  check_lanes("I2F",
              {{{-1, 0, u(FN1)}, {16777219, 0, 0x4B800001}, {-3, 0, u(0xC0400000)}, {100, 0, 0x42C80000}}});
  check_lanes("F2I", {{{u(FNAN), 0, 0}, {u(FINF), 0, 0}, {u(FHALF), 0, 0}, {u(0xC06CCCCD), 0, -3}}});
  // 2^31 -> INT_MIN; 2^32 -> 0; 1.5*2^32 -> 0xC0000000; subnormal -> 0.
  check_lanes("F2I", {{{0x4F000000, 0, kMin}, {0x4F800000, 0, 0}, {0x4F400000, 0, -1073741824}, {1, 0, 0}}});
}

TEST_CASE("VPU FSIGN/FABS (§3.4 ops 68, 79)", "[vpu]") {
  check_lanes("FSIGN", {{{u(F0), 0, 0}, {u(FN0), 0, 0}, {u(0xC0200000), 0, u(FN1)}, {u(FNAN), 0, u(F1)}}});
  check_lanes("FSIGN",
              {{{u(0x80000001), 0, u(FN1)}, {u(0xFFC00000), 0, u(FN1)}, {1, 0, u(F1)}, {u(FINF), 0, u(F1)}}});
  check_lanes("FABS",
              {{{u(FN1), 0, u(F1)}, {u(FN0), 0, 0}, {u(0xFFC00001), 0, 0x7FC00001}, {u(F1), 0, u(F1)}}});
}

TEST_CASE("VPU PAIR_ROTATE (§3.4 op 84)", "[vpu]") {
  // Pair (1, 2) by (c, s) = (0.5, 0.25): 1*0.5 + -(2*0.25) = +0 (exact zero), 1*0.25 + 2*0.5 = 1.25.
  // Pair (3, -1) by (2, -1): 3*2 + -((-1)*(-1)) = 5, 3*(-1) + (-1)*2 = -5.
  const Tile a = same_rows({u(F1), u(F2), u(F3), u(FN1)});
  const Tile b = same_rows({u(FHALF), u(FQUARTER), u(F2), u(FN1)});
  CHECK(run("PAIR_ROTATE", a, b) == same_rows({u(F0), u(0x3FA00000), u(0x40A00000), u(0xC0A00000)}));
}

// ---------------------------------------------------------------------------------------------------
// §3.4 float reductions

TEST_CASE("VPU float row reductions use the pairwise tree (§3.4 ops 42-44)", "[vpu]") {
  // Row {2^24, 1, 1, 2}: (2^24 + 1) ties to 2^24, 1 + 2 = 3, 2^24 + 3 ties to even 2^24 + 4.
  // (A sequential sum would give 2^24 + 2.) Row of -0: (-0 + -0) + (-0 + -0) = -0.
  const Tile a = {u(F2P24), u(F1),    u(F1),  u(F2),   //
                  u(FN0),   u(FN0),   u(FN0), u(FN0),  //
                  u(F1),    u(F2),    u(F3),  u(FN1),  //
                  u(FINF),  u(FNINF), u(F1),  u(F1)};
  CHECK(run("FSUM_REDUCE", a) == row_bcast({u(0x4B800002), u(FN0), 0x40A00000, u(FNAN)}));
  // Max tree: {NaN,1,2,3}: (NaN vs 1) UO -> 1, (2 vs 3) -> 3, -> 3. {1,NaN,2,3}: -> NaN, 3, (NaN vs 3)
  // -> 3. {1,2,3,sNaN}: 2, sNaN, (2 vs sNaN) UO -> sNaN unquieted. {-0,+0,-0,+0}: EQ keeps -0.
  const Tile m = {u(FNAN), u(F1),   u(F2),  u(F3),          //
                  u(F1),   u(FNAN), u(F2),  u(F3),          //
                  u(F1),   u(F2),   u(F3),  u(0x7F800001),  //
                  u(FN0),  u(F0),   u(FN0), u(F0)};
  CHECK(run("FMAX_REDUCE", m) == row_bcast({u(F3), u(F3), u(0x7F800001), u(FN0)}));
  // Min tree: {NaN,1,2,3}: 1, 2 -> 1. {1,NaN,2,3}: NaN, 2, -> 2. {1,2,3,sNaN}: 1, sNaN -> sNaN.
  // {-0,+0,-0,+0}: -0.
  CHECK(run("FMIN_REDUCE", m) == row_bcast({u(F1), u(F2), u(0x7F800001), u(FN0)}));
}

TEST_CASE("VPU FPROD_REDUCE rows/cols are sequential from 1.0 (§3.4 ops 49, 50)", "[vpu]") {
  // {2^100, 2^100, 2^-100, 2^-100}: 2^200 overflows to inf before the small factors arrive.
  constexpr uint32_t kBig = 0x71800000, kSmall = 0x0D800000;  // 2^100, 2^-100
  const Tile a = {u(kBig), u(kBig), u(kSmall), u(kSmall),     //
                  u(F2),   u(F3),   u(FHALF),  u(FN1),        //
                  u(FN0),  u(F1),   u(F1),     u(F1),         //
                  u(F1),   u(FINF), u(F0),     u(F1)};
  CHECK(run("FPROD_REDUCE", a) == row_bcast({u(FINF), u(0xC0400000), u(FN0), u(FNAN)}));
  // Columns {2^100,2,-0,1} -> 2^101 * -0 = -0; {2^100,3,1,inf} -> inf;
  // {2^-100,0.5,1,0} -> +0; {2^-100,-1,1,1} -> -2^-100.
  CHECK(run("FPROD_REDUCE_COL", a) == same_rows({u(FN0), u(FINF), u(F0), u(0x8D800000)}));
}

TEST_CASE("VPU float column reductions are sequential (§3.4 ops 45-47)", "[vpu]") {
  // Columns (top to bottom): {2^24,1,1,2}, {-0,-0,-0,-0}, {NaN,1,2,3}, {1,2,3,sNaN}.
  const Tile a = {u(F2P24), u(FN0), u(FNAN), u(F1),  //
                  u(F1),    u(FN0), u(F1),   u(F2),  //
                  u(F1),    u(FN0), u(F2),   u(F3),  //
                  u(F2),    u(FN0), u(F3),   u(0x7F800001)};
  // FSUM_COL from +0.0: 2^24, +1 -> 2^24, +1 -> 2^24, +2 -> 2^24+2; all -0 -> +0; NaN column -> NaN;
  // sNaN last: 6 + sNaN -> quieted 0x7FC00001.
  CHECK(run("FSUM_REDUCE_COL", a) == same_rows({0x4B800001, u(F0), u(FNAN), 0x7FC00001}));
  // FMAX_COL from acc = r0: NaN vs 1 -> 1, then 2, 3; {1,2,3,sNaN} -> sNaN raw; -0 column stays -0.
  CHECK(run("FMAX_REDUCE_COL", a) == same_rows({u(F2P24), u(FN0), u(F3), 0x7F800001}));
  CHECK(run("FMIN_REDUCE_COL", a) == same_rows({u(F1), u(FN0), u(F1), 0x7F800001}));
}

TEST_CASE("VPU float tile reductions go through the FpReducer (§2.4, §3.4 ops 38-40, 48)", "[vpu]") {
  // Sequential from acc = x[0]: 2^24 then fifteen +1s, each a tie back to 2^24.
  Tile s = splat(u(F1));
  s[0] = u(F2P24);
  CHECK(run("FSUM_REDUCE_TILE", s) == splat(u(F2P24)));
  CHECK(run("FSUM_REDUCE_TILE", splat(u(FN0))) == splat(u(FN0)));      // acc = -0, -0 + -0 = -0
  CHECK(run("FPROD_REDUCE_TILE", splat(u(F2))) == splat(0x47800000));  // 2^16
  // {1, NaN, 0.5, 0.25 x13}: max: 1 -> (1 vs NaN) NaN -> (NaN vs 0.5) 0.5 -> stays 0.5.
  Tile m = splat(u(FQUARTER));
  m[0] = u(F1);
  m[1] = u(FNAN);
  m[2] = u(FHALF);
  CHECK(run("FMAX_REDUCE_TILE", m) == splat(u(FHALF)));
  // min: 1 -> NaN -> 0.5 -> 0.25 (then EQ keeps it).
  CHECK(run("FMIN_REDUCE_TILE", m) == splat(u(FQUARTER)));
  // {+0, -0, ...}: EQ keeps acc = +0 for both MAX and MIN.
  Tile z = splat(u(FN0));
  z[0] = u(F0);
  CHECK(run("FMIN_REDUCE_TILE", z) == splat(u(F0)));
  CHECK(run("FMAX_REDUCE_TILE", z) == splat(u(F0)));
}

// ---------------------------------------------------------------------------------------------------
// §2.5 transcendental ops through the table (values as in test_transc.cc)

TEST_CASE("VPU EXP2/LOG2/SIN/COS apply the TranscUnit lane function (§2.5)", "[vpu]") {
  check_lanes("EXP2",
              {{{u(F0), 0, u(F1)}, {u(F1), 0, u(F2)}, {u(FN1), 0, u(FHALF)}, {0x40600000, 0, 0x41370164}}});
  check_lanes("LOG2", {{{u(F1), 0, 0}, {u(F2), 0, u(F1)}, {0x41000000, 0, u(F3)}, {u(FHALF), 0, u(FN1)}}});
  check_lanes("SIN",
              {{{u(F0), 0, 0}, {u(F1), 0, 0x3F57707A}, {u(FN1), 0, u(0xBF57707A)}, {u(F2), 0, 0x3F68C8CB}}});
  check_lanes(
      "COS",
      {{{u(F0), 0, u(F1)}, {u(F1), 0, 0x3F0A600B}, {u(FN1), 0, 0x3F0A600B}, {u(F2), 0, u(0xBEC8DC10)}}});
}
