#include "sim/fp32.h"

#include <cstring>

namespace tinytpu::fp32 {
namespace {

constexpr uint32_t kQuietBit = 0x00400000u;

float to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

bool is_snan(uint32_t f) { return is_nan(f) && !(f & kQuietBit); }

// bsc's NaN operand precedence (addFP/multFP stage 1): sNaN a, sNaN b, qNaN a, qNaN b. A signalling
// NaN comes back with its quiet bit set; sign and payload are kept. Call only when a or b is a NaN.
uint32_t propagate_nan(uint32_t a, uint32_t b) {
  if (is_snan(a)) return a | kQuietBit;
  if (is_snan(b)) return b | kQuietBit;
  return is_nan(a) ? a : b;
}

// Neither operand is a NaN, so a NaN from the host is an invalid operation (inf-inf, 0*inf): bsc
// returns its positive qnan() where x86 would give 0xFFC00000.
uint32_t host_result(float r) {
  const uint32_t bits = to_bits(r);
  return is_nan(bits) ? kCanonicalNaN : bits;
}

}  // namespace

// For non-NaN operands bsc's addFP/multFP round exactly like IEEE-754 RNE with gradual underflow, and
// both give the IEEE signs for zeros and infinities (an exact zero from an effective subtraction is +0
// under RNE, (-0)+(-0) = -0), so the host FPU computes them (built with -fno-fast-math).
uint32_t add(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return propagate_nan(a, b);
  return host_result(to_float(a) + to_float(b));
}

uint32_t sub(uint32_t a, uint32_t b) { return add(a, b ^ kSignBit); }

uint32_t mul(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return propagate_nan(a, b);
  return host_result(to_float(a) * to_float(b));
}

Order compare(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return Order::kUO;
  const float x = to_float(a), y = to_float(b);  // the host orders +0 == -0 as compareFP does
  return x < y ? Order::kLT : x > y ? Order::kGT : Order::kEQ;
}

uint32_t max_of(uint32_t a, uint32_t b) {
  const Order o = compare(a, b);
  return o == Order::kGT || o == Order::kEQ ? a : b;
}

uint32_t min_of(uint32_t a, uint32_t b) {
  const Order o = compare(a, b);
  return o == Order::kLT || o == Order::kEQ ? a : b;
}

// VPU.bsv int32_to_float: the magnitude's leading one sets the exponent and the next 23 bits are kept,
// so values above 2^24 are truncated toward zero rather than rounded.
uint32_t from_int(int32_t x) {
  if (x == 0) return 0;
  const uint32_t sign = x < 0 ? kSignBit : 0;
  const uint32_t mag = x < 0 ? 0u - uint32_t(x) : uint32_t(x);  // INT_MIN -> 2^31
  const int msb = 31 - __builtin_clz(mag);
  const uint32_t mant = msb > 23 ? mag >> (msb - 23) : mag << (23 - msb);
  return sign | uint32_t(msb + 127) << 23 | (mant & 0x007FFFFFu);
}

int32_t to_int_keep_special(uint32_t f) {
  const int e = int((f >> 23) & 0xFF) - 127;
  if (e < 0) return 0;  // |x| < 1, zeros and subnormals
  const uint32_t mant = 0x00800000u | (f & 0x007FFFFFu);
  const uint32_t mag = e >= 23 ? mant << ((e - 23) & 31) : mant >> (23 - e);  // Bit#(5) shift, mod 2^32
  return int32_t(f & kSignBit ? 0u - mag : mag);
}

int32_t to_int(uint32_t f) { return (f & 0x7F800000u) == 0x7F800000u ? 0 : to_int_keep_special(f); }

}  // namespace tinytpu::fp32
