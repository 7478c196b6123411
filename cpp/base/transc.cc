#include "base/transc.h"

#include "base/fp32.h"
#include "base/tile.h"

namespace tinytpu {
namespace {

using fp32::add;
using fp32::kOne;
using fp32::kSignBit;
using fp32::mul;

// TranscUnit.bsv constants (raw float32 bits).
constexpr uint32_t kNegOne = 0xBF800000u;
constexpr uint32_t kHalf = 0x3F000000u;
constexpr uint32_t kExp2Q = 0x3E800000u;   // 0.25
constexpr uint32_t kExp2P = 0x3F3C0592u;   // 0.7344
constexpr uint32_t kLog2U2 = 0xBF0B851Fu;  // -0.545
constexpr uint32_t kLog2U = 0x3FC161E5u;   // 1.5108
constexpr uint32_t kSinC2 = 0xBE2A0E41u;
constexpr uint32_t kSinC4 = 0x3BFA0514u;
constexpr uint32_t kCosC2 = 0xBEFE42E1u;
constexpr uint32_t kCosC4 = 0x3D1817B9u;
constexpr uint32_t kInv2Pi = 0x3E22F983u;
constexpr uint32_t kTwoPi = 0x40C90FDBu;
constexpr uint32_t kPi = 0x40490FDBu;
constexpr uint32_t kPiOver2 = 0x3FC90FDBu;

uint32_t negate(uint32_t x) { return x ^ kSignBit; }  // the BSV flips .sign: a bit op, not an FP op

// tr_trunc: |x| < 1 -> +0; raw exponent >= 151 (|x| >= 2^24, inf, NaN) unchanged; otherwise clear the
// low 23 - (exp - 127) fraction bits.
uint32_t tr_trunc(uint32_t x) {
  const uint32_t raw_exp = (x >> 23) & 0xFF;
  if (raw_exp < 127) return 0;
  if (raw_exp >= 151) return x;
  const uint32_t frac_bits = 150 - raw_exp;
  return x & ~((1u << frac_bits) - 1);
}

// tr_pow2_int: 2^n as a float; the Int#(32) bias n + 127 wraps, > 255 gives +inf and <= 0 gives +0.
uint32_t tr_pow2_int(int32_t n) {
  const int32_t biased = wrap_add(n, 127);
  if (biased > 255) return 0x7F800000u;
  if (biased <= 0) return 0;
  return uint32_t(biased) << 23;
}

// tr_i9_to_float keeps only 8 magnitude bits, but LOG2 feeds it raw_exp - 127 in [-127, 128], which
// fits, so it is the exact conversion.
uint32_t tr_i9_to_float(int32_t e) { return fp32::from_int(e); }

uint32_t exp2_lane(uint32_t x) {
  const uint32_t tx = tr_trunc(x);                                // step 0
  const uint32_t e = tr_pow2_int(fp32::to_int_keep_special(tx));  // step 0
  const uint32_t f = add(x, negate(tx));                          // step 1
  uint32_t acc = mul(f, kExp2Q);                                  // step 2
  acc = add(acc, kExp2P);                                         // step 3
  acc = mul(acc, f);                                              // step 4
  acc = add(acc, kOne);                                           // step 5
  return mul(acc, e);                                             // step 6
}

// The sign bit is ignored: x = m * 2^e with m = {0, 127, frac(x)} and e = raw_exp - 127.
uint32_t log2_lane(uint32_t x) {
  const uint32_t m = (127u << 23) | (x & 0x007FFFFFu);                 // step 0
  const uint32_t e = tr_i9_to_float(int32_t((x >> 23) & 0xFF) - 127);  // step 0
  const uint32_t u = add(m, kNegOne);                                  // step 1
  uint32_t acc = mul(u, kLog2U2);                                      // step 2
  acc = add(acc, kLog2U);                                              // step 3
  acc = mul(acc, u);                                                   // step 4
  return add(acc, e);                                                  // step 5
}

uint32_t sin_lane(uint32_t x) {
  uint32_t y = mul(x, kInv2Pi);                            // step 0
  y = add(y, kHalf | (x & kSignBit));                      // step 1
  uint32_t acc = mul(tr_trunc(y), kTwoPi);                 // step 2
  y = add(x, negate(acc));                                 // step 3
  acc = add(y & kSignBit ? negate(kPi) : kPi, negate(y));  // step 4
  // step 5: fold when |y| > pi/2 (compareFP GT), keep the reduced y, square it
  const bool fold = fp32::compare(y & ~kSignBit, kPiOver2) == fp32::Order::kGT;
  const uint32_t yr = fold ? acc : y;  // step 5
  const uint32_t y2 = mul(yr, yr);     // step 5
  acc = mul(y2, kSinC4);               // step 6
  acc = add(acc, kSinC2);              // step 7
  acc = mul(acc, y2);                  // step 8
  acc = add(acc, kOne);                // step 9
  return mul(acc, yr);                 // step 10
}

uint32_t cos_lane(uint32_t x) {
  const uint32_t y = mul(x, x);   // step 0
  uint32_t acc = mul(y, kCosC4);  // step 1
  acc = add(acc, kCosC2);         // step 2
  acc = mul(acc, y);              // step 3
  return add(acc, kOne);          // step 4
}

}  // namespace

uint32_t transc_lane(TranscOp op, uint32_t x) {
  switch (op) {
    case TranscOp::kExp2:
      return exp2_lane(x);
    case TranscOp::kLog2:
      return log2_lane(x);
    case TranscOp::kSin:
      return sin_lane(x);
    case TranscOp::kCos:
      return cos_lane(x);
  }
  return 0;  // unreachable: every TranscOp is handled above
}

}  // namespace tinytpu
