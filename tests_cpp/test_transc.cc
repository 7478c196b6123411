// TranscUnit per-lane sequences (hardware.md §2.5).
//
// "By hand" values step the §2.5 sequence on exactly representable numbers. "numpy" values were
// produced by an independent Python script that steps the same §2.5 sequence with numpy.float32
// (one IEEE RNE rounding per add/mul, the sign flips as bit operations, trunc/fp_to_int/pow2int
// written from the §2.5 definitions) and printed the result bits.
#include <catch2/catch.hpp>
#include <cstdint>

#include "base/transc.h"

using namespace tinytpu;

namespace {
uint32_t t_exp2(uint32_t x) { return transc_lane(TranscOp::kExp2, x); }
uint32_t t_log2(uint32_t x) { return transc_lane(TranscOp::kLog2, x); }
uint32_t t_sin(uint32_t x) { return transc_lane(TranscOp::kSin, x); }
uint32_t t_cos(uint32_t x) { return transc_lane(TranscOp::kCos, x); }
}  // namespace

TEST_CASE("transc step counts", "[transc]") {
  CHECK(transc_steps(TranscOp::kExp2) == 7);
  CHECK(transc_steps(TranscOp::kLog2) == 6);
  CHECK(transc_steps(TranscOp::kSin) == 11);
  CHECK(transc_steps(TranscOp::kCos) == 5);
}

TEST_CASE("EXP2", "[transc]") {
  // By hand: for an integer x, f = x + (-trunc(x)) = +0, so acc = ((0*0.25 + P)*0 + 1) = 1.0 and the
  // result is 1.0 * pow2int(x): EXP2(0) = 1, EXP2(1) = 2, EXP2(-1) = 0.5.
  CHECK(t_exp2(0x00000000) == 0x3F800000);
  CHECK(t_exp2(0x3F800000) == 0x40000000);
  CHECK(t_exp2(0xBF800000) == 0x3F000000);
  CHECK(t_exp2(0x42FE0000) == 0x7F000000);  // 127 -> 2^127
  // numpy: 3.5 -> 11.4378395 (the Remez quadratic, not 2^3.5 = 11.3137).
  CHECK(t_exp2(0x40600000) == 0x41370164);
  CHECK(t_exp2(0x3F000000) == 0x3FB70164);  // numpy: 0.5
  CHECK(t_exp2(0xC0100000) == 0x3E54FE9C);  // numpy: -2.25
  CHECK(t_exp2(0xC2FD0000) == 0x0058FE9C);  // numpy: -126.5, a subnormal result
  // By hand: pow2int(200) has biased exponent 327 > 255 -> +inf, times acc = 1 -> +inf;
  // pow2int(-200) has biased <= 0 -> +0.
  CHECK(t_exp2(0x43480000) == 0x7F800000);
  CHECK(t_exp2(0xC3480000) == 0x00000000);
  // By hand, the Int32 wraps: 2^31 -> fp_to_int = INT_MIN, INT_MIN + 127 < 0 -> 2^n = +0, result +0.
  // 2^32 -> fp_to_int = (1<<23 << 9) mod 2^32 = 0 -> 2^0 = 1.0, f = +0, result 1.0.
  CHECK(t_exp2(0x4F000000) == 0x00000000);
  CHECK(t_exp2(0x4F800000) == 0x3F800000);
  // By hand: inf -> tx = inf, f = inf + -inf = 0x7FC00000, which every later op propagates.
  CHECK(t_exp2(0x7F800000) == 0x7FC00000);
}

TEST_CASE("LOG2", "[transc]") {
  // By hand at powers of two: m = 1.0, u = 1 + -1 = +0, acc = (0*c + 1.5108)*0 = +0, result 0 + e.
  CHECK(t_log2(0x3F800000) == 0x00000000);  // 1 -> +0
  CHECK(t_log2(0x40000000) == 0x3F800000);  // 2 -> 1
  CHECK(t_log2(0x41000000) == 0x40400000);  // 8 -> 3
  CHECK(t_log2(0x3F000000) == 0xBF800000);  // 0.5 -> -1
  CHECK(t_log2(0xC0800000) == 0x40000000);  // -4 -> 2: the sign bit is ignored
  CHECK(t_log2(0x00000000) == 0xC2FE0000);  // 0: raw exponent 0 -> e = -127, m = 1.0 -> -127
  CHECK(t_log2(0x7F800000) == 0x43000000);  // inf: raw exponent 255 -> e = 128, m = 1.0 -> 128
  CHECK(t_log2(0x40400000) == 0x3FCF404E);  // numpy: 3 -> 1.6191499
  CHECK(t_log2(0x41200000) == 0x4055FE28);  // numpy: 10 -> 3.3436375
  CHECK(t_log2(0x3F7FFFFF) == 0xBD0C1560);  // numpy: 1 - 2^-24
}

TEST_CASE("SIN", "[transc]") {
  // By hand: x = +0 -> y = 0.5, trunc -> +0, y = +0, yr = +0, result (1.0)*(+0) = +0.
  CHECK(t_sin(0x00000000) == 0x00000000);
  // By hand: x = -0 -> y = -0 + -0.5 = -0.5, trunc -> +0, y = -0 + -0 = -0, no fold, yr = -0,
  // y^2 = +0, acc = (0*c4 + c2)*0 + 1 = 1.0 (c2 < 0 gives -0, -0 + 1 = 1), result 1.0 * -0 = -0.
  CHECK(t_sin(0x80000000) == 0x80000000);
  CHECK(t_sin(0x3F000000) == 0x3EF57E5D);  // numpy: 0.5
  CHECK(t_sin(0x3F800000) == 0x3F57707A);  // numpy: 1.0 -> 0.84156
  CHECK(t_sin(0xBF800000) == 0xBF57707A);  // numpy: -1.0 (odd symmetry)
  CHECK(t_sin(0x40000000) == 0x3F68C8CB);  // numpy: 2.0, folded about pi
  CHECK(t_sin(0x40800000) == 0xBF41C579);  // numpy: 4.0, reduced by 2pi then folded
  CHECK(t_sin(0xC0A00000) == 0x3F757723);  // numpy: -5.0
  CHECK(t_sin(0x41200000) == 0xBF0B49C3);  // numpy: 10.0
  CHECK(t_sin(0x40490FDB) == 0x00000000);  // numpy: float(pi) reduces to an exact 0
  CHECK(t_sin(0x3FC90FDB) == 0x3F8003A6);  // numpy: float(pi/2) -> 1.0001113 (not folded: |y| == pi/2)
}

TEST_CASE("COS", "[transc]") {
  // By hand: x = 0 -> y = 0, acc = (0*c4 + c2)*0 = -0, -0 + 1 = 1.0.
  CHECK(t_cos(0x00000000) == 0x3F800000);
  CHECK(t_cos(0x80000000) == 0x3F800000);
  CHECK(t_cos(0x3F000000) == 0x3F60CFBC);  // numpy: 0.5
  CHECK(t_cos(0x3F800000) == 0x3F0A600B);  // numpy: 1.0 -> 0.54053
  CHECK(t_cos(0xBF800000) == 0x3F0A600B);  // numpy: -1.0 (even)
  CHECK(t_cos(0x40000000) == 0xBEC8DC10);  // numpy: 2.0 (no range reduction)
  CHECK(t_cos(0x3FC90FDB) == 0x3A423800);  // numpy: float(pi/2)
}
