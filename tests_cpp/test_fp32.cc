// fp32: bsc FloatingPoint semantics (hardware.md §3.4). Every expected bit pattern below is derived by
// hand from the IEEE encoding (sign | exp+127 << 23 | fraction) and the rule cited next to it.
#include <catch2/catch.hpp>
#include <cstdint>

#include "base/fp32.h"

using namespace tinytpu;
using fp32::Order;

namespace {
constexpr uint32_t kPosZero = 0x00000000, kNegZero = 0x80000000;
constexpr uint32_t kOne = 0x3F800000, kNegOne = 0xBF800000, kTwo = 0x40000000, kThree = 0x40400000;
constexpr uint32_t kHalf = 0x3F000000;
constexpr uint32_t kInf = 0x7F800000, kNegInf = 0xFF800000;
constexpr uint32_t kMaxFloat = 0x7F7FFFFF;  // (2 - 2^-23) * 2^127
constexpr uint32_t kQNaN = 0x7FC00000;
constexpr uint32_t kMinSub = 0x00000001;  // 2^-149
}  // namespace

TEST_CASE("fp32 add/mul: ordinary RNE results", "[fp32]") {
  CHECK(fp32::add(kOne, kTwo) == kThree);
  CHECK(fp32::mul(0x3FC00000, 0xC0000000) == 0xC0400000);  // 1.5 * -2 = -3
  CHECK(fp32::sub(kThree, kOne) == kTwo);
  // 1 + 2^-24 is exactly halfway between 1 and 1+2^-23: ties to even -> 1.0.
  CHECK(fp32::add(kOne, 0x33800000) == kOne);
  // (1+2^-23) + 2^-24 is halfway between 1+2^-23 (odd) and 1+2^-22 (even) -> 1+2^-22.
  CHECK(fp32::add(0x3F800001, 0x33800000) == 0x3F800002);
}

TEST_CASE("fp32 NaN operand precedence (bsc: sNaN a, sNaN b, qNaN a, qNaN b)", "[fp32]") {
  // §3.4: an sNaN comes back quieted (bit 22 set) with sign and payload kept.
  CHECK(fp32::add(0x7F800001, 0x7FC00002) == 0x7FC00001);  // sNaN a beats qNaN b
  CHECK(fp32::add(0x7FC00003, 0xFF800005) == 0xFFC00005);  // sNaN b beats qNaN a
  CHECK(fp32::add(0x7FC00003, 0x7FC00004) == 0x7FC00003);  // both quiet: a
  CHECK(fp32::add(kOne, 0xFFC00007) == 0xFFC00007);        // qNaN b passes through unchanged
  CHECK(fp32::mul(0xFF800009, kTwo) == 0xFFC00009);
  CHECK(fp32::mul(0x7FC00003, 0x7F800001) == 0x7FC00001);
  CHECK(fp32::mul(kInf, 0x7FC00004) == 0x7FC00004);
  // FSUB flips b's sign before the add, so a NaN b comes back with its sign flipped (§3.4 op 20).
  CHECK(fp32::sub(kOne, 0x7FC00001) == 0xFFC00001);
  CHECK(fp32::sub(kOne, 0x7F800001) == 0xFFC00001);  // flipped, then quieted
  CHECK(fp32::sub(0x7FC00001, kOne) == 0x7FC00001);  // a NaN a keeps its sign
}

TEST_CASE("fp32 invalid operations give +qNaN 0x7FC00000", "[fp32]") {
  // §3.4: inf-inf and 0*inf return bsc's qnan() = 0x7FC00000, not x86's 0xFFC00000.
  CHECK(fp32::add(kInf, kNegInf) == kQNaN);
  CHECK(fp32::sub(kInf, kInf) == kQNaN);
  CHECK(fp32::sub(kNegInf, kNegInf) == kQNaN);
  CHECK(fp32::mul(kPosZero, kInf) == kQNaN);
  CHECK(fp32::mul(kNegInf, kNegZero) == kQNaN);
  // Non-invalid infinity arithmetic keeps IEEE signs.
  CHECK(fp32::add(kInf, kInf) == kInf);
  CHECK(fp32::add(kNegInf, kMaxFloat) == kNegInf);
  CHECK(fp32::mul(kNegInf, kTwo) == kNegInf);
  CHECK(fp32::mul(kNegInf, kNegOne) == kInf);
}

TEST_CASE("fp32 signed zeros", "[fp32]") {
  // §3.4: an exact-zero sum of opposite-signed operands is +0 (RNE); like-signed zeros keep the sign.
  CHECK(fp32::add(kOne, kNegOne) == kPosZero);
  CHECK(fp32::add(kNegOne, kOne) == kPosZero);
  CHECK(fp32::sub(0x40200000, 0x40200000) == kPosZero);  // 2.5 - 2.5
  CHECK(fp32::add(kNegZero, kNegZero) == kNegZero);
  CHECK(fp32::add(kPosZero, kNegZero) == kPosZero);
  CHECK(fp32::sub(kNegZero, kPosZero) == kNegZero);  // -0 + -0
  CHECK(fp32::sub(kNegZero, kNegZero) == kPosZero);  // -0 + +0
  // multFP: zero(sign_a != sign_b).
  CHECK(fp32::mul(kNegZero, 0x40A00000) == kNegZero);
  CHECK(fp32::mul(0xC0000000, kNegZero) == kPosZero);
  // Underflow to zero keeps the product's sign: 2^-149 * -0.25 = -2^-151 -> -0.
  CHECK(fp32::mul(kMinSub, 0xBE800000) == kNegZero);
}

TEST_CASE("fp32 gradual underflow (subnormals, no FTZ)", "[fp32]") {
  // §3.4: subnormals supported. 2^-140 = 2^9 * 2^-149 = 0x200; 2^-140 * 2^-5 = 2^-145 = 0x10.
  CHECK(fp32::mul(0x00000200, 0x3D000000) == 0x00000010);
  CHECK(fp32::mul(0x00800000, kHalf) == 0x00400000);  // min normal / 2
  CHECK(fp32::mul(kMinSub, kHalf) == kPosZero);       // 2^-150: tie, to even (0)
  CHECK(fp32::mul(0x00000003, kHalf) == 0x00000002);  // 1.5 * 2^-149: tie, to even (2)
  CHECK(fp32::add(kMinSub, kMinSub) == 0x00000002);
  CHECK(fp32::add(0x007FFFFF, kMinSub) == 0x00800000);  // largest subnormal + ulp = min normal
  CHECK(fp32::sub(0x00800000, kMinSub) == 0x007FFFFF);
  CHECK(fp32::mul(0x00400000, 0x40800000) == 0x01000000);  // subnormal 2^-127 * 4 = 2^-125
}

TEST_CASE("fp32 overflow to infinity", "[fp32]") {
  CHECK(fp32::mul(kMaxFloat, kTwo) == kInf);
  CHECK(fp32::mul(kMaxFloat, 0xC0000000) == kNegInf);
  CHECK(fp32::add(kMaxFloat, kMaxFloat) == kInf);
  // max has an odd significand and an ulp of 2^104: + 2^103 is a tie that rounds up to inf,
  // + (2^103 - 1 ulp of 2^103) stays at max.
  CHECK(fp32::add(kMaxFloat, 0x73000000) == kInf);
  CHECK(fp32::add(kMaxFloat, 0x72FFFFFF) == kMaxFloat);
}

TEST_CASE("fp32 compare", "[fp32]") {
  // §3.4 compareFP: any NaN -> UO; +0 == -0; otherwise the numeric order.
  CHECK(fp32::compare(kQNaN, kOne) == Order::kUO);
  CHECK(fp32::compare(kOne, 0x7F800001) == Order::kUO);
  CHECK(fp32::compare(kQNaN, kQNaN) == Order::kUO);
  CHECK(fp32::compare(kPosZero, kNegZero) == Order::kEQ);
  CHECK(fp32::compare(kNegZero, kPosZero) == Order::kEQ);
  CHECK(fp32::compare(kNegOne, kOne) == Order::kLT);
  CHECK(fp32::compare(0xC0000000, kNegOne) == Order::kLT);  // -2 < -1
  CHECK(fp32::compare(kMinSub, kPosZero) == Order::kGT);
  CHECK(fp32::compare(kInf, kMaxFloat) == Order::kGT);
  CHECK(fp32::compare(kNegInf, 0xFF7FFFFF) == Order::kLT);
  CHECK(fp32::compare(kThree, kThree) == Order::kEQ);
}

TEST_CASE("fp32 max_of/min_of select raw bits", "[fp32]") {
  // §3.4 FMAX/FMIN: cmp GT/EQ (LT/EQ) -> a else b; any NaN -> b, unquieted.
  CHECK(fp32::max_of(kNegZero, kPosZero) == kNegZero);
  CHECK(fp32::max_of(kPosZero, kNegZero) == kPosZero);
  CHECK(fp32::max_of(kQNaN, kOne) == kOne);
  CHECK(fp32::max_of(kOne, 0x7F800001) == 0x7F800001);
  CHECK(fp32::max_of(kNegOne, kTwo) == kTwo);
  CHECK(fp32::min_of(kPosZero, kNegZero) == kPosZero);
  CHECK(fp32::min_of(kNegOne, kTwo) == kNegOne);
  CHECK(fp32::min_of(0x7FC00001, kTwo) == kTwo);
  CHECK(fp32::min_of(kTwo, 0xFFC00000) == 0xFFC00000);
}

TEST_CASE("fp32 from_int truncates like VPU int32_to_float", "[fp32]") {
  // §3.4 I2F: the 23 bits below the leading one are kept (round toward zero), INT_MIN exact.
  CHECK(fp32::from_int(0) == kPosZero);
  CHECK(fp32::from_int(1) == kOne);
  CHECK(fp32::from_int(-1) == kNegOne);
  CHECK(fp32::from_int(100) == 0x42C80000);
  CHECK(fp32::from_int(16777216) == 0x4B800000);   // 2^24 exact
  CHECK(fp32::from_int(16777217) == 0x4B800000);   // 2^24+1 -> 2^24
  CHECK(fp32::from_int(16777219) == 0x4B800001);   // 2^24+3 -> 2^24+2 (RNE would give 2^24+4)
  CHECK(fp32::from_int(-16777217) == 0xCB800000);  // toward zero for negatives too
  CHECK(fp32::from_int(INT32_MAX) == 0x4EFFFFFF);  // 2^31-1 -> 2^31-128 (RNE would give 2^31)
  CHECK(fp32::from_int(INT32_MIN) == 0xCF000000);  // -2^31 exactly
}

TEST_CASE("fp32 to_int follows VPU float_to_int32", "[fp32]") {
  // §3.4 F2I: truncation; NaN/inf -> 0; |x| < 1 and subnormals -> 0; overflow wraps:
  // mag = ((1<<23 | frac) << ((e-23) & 31)) mod 2^32, negated if the sign is set.
  CHECK(fp32::to_int(kQNaN) == 0);
  CHECK(fp32::to_int(kInf) == 0);
  CHECK(fp32::to_int(kNegInf) == 0);
  CHECK(fp32::to_int(kHalf) == 0);
  CHECK(fp32::to_int(kMinSub) == 0);
  CHECK(fp32::to_int(kNegZero) == 0);
  CHECK(fp32::to_int(0xC06CCCCD) == -3);           // -3.7 -> -3
  CHECK(fp32::to_int(0x4E6E6B28) == 1000000000);   // 1e9 (exact in float32)
  CHECK(fp32::to_int(0x4F000000) == INT32_MIN);    // 2^31: mag 0x80000000 reinterpreted
  CHECK(fp32::to_int(0xCF000000) == INT32_MIN);    // -2^31: -(INT_MIN) wraps to INT_MIN
  CHECK(fp32::to_int(0x4F400000) == -1073741824);  // 1.5*2^32: 0xC00000 << 8 = 0xC0000000
  CHECK(fp32::to_int(0x4F800000) == 0);            // 2^32: 1<<23 << 9 wraps to 0
  CHECK(fp32::to_int(0x5B000000) == 8388608);      // 2^55: shift (55-23)&31 = 0 -> 1<<23
}

TEST_CASE("fp32 to_int_keep_special: F2I without zeroing inf/NaN (tr_fp_to_int)", "[fp32]") {
  // §2.5: raw exponent 255 gives e = 128, shift (128-23)&31 = 9 on (1<<23 | frac).
  CHECK(fp32::to_int_keep_special(kInf) == 0);          // 1<<32 wraps to 0
  CHECK(fp32::to_int_keep_special(0x7F800001) == 512);  // (0x800001 << 9) mod 2^32 = 0x200
  CHECK(fp32::to_int_keep_special(0xFF800001) == -512);
  CHECK(fp32::to_int_keep_special(kQNaN) == INT32_MIN);  // 0xC00000 << 9 mod 2^32 = 0x80000000
  CHECK(fp32::to_int_keep_special(0xC06CCCCD) == -3);    // finite inputs as to_int
}
