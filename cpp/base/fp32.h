#pragma once
#include <cstdint>
#include <cstring>

namespace tinytpu::fp32 {

// float32 as bsc's FloatingPoint library computes it (hardware.md §3.4): IEEE-754 RNE with gradual
// underflow, NaN operands propagated by bsc's precedence (sNaN a, sNaN b, qNaN a, qNaN b; a signalling
// NaN comes back quieted), and every invalid operation (inf-inf, 0*inf) giving 0x7FC00000.
// Values are raw bit patterns as carried in the Int32 lanes.
// add, sub, mul and compare are inline: the VPU calls them per lane, in its hottest loops.
inline uint32_t add(uint32_t a, uint32_t b);
inline uint32_t sub(uint32_t a, uint32_t b);  // add(a, b with its sign bit flipped)
inline uint32_t mul(uint32_t a, uint32_t b);

enum class Order : uint8_t { kLT, kEQ, kGT, kUO };
inline Order compare(uint32_t a, uint32_t b);  // any NaN -> kUO; +0 == -0
// The VPU FMAX/FMIN select, also the reducers' MAX/MIN step: compare(a, b) in {GT, EQ} (max_of) or
// {LT, EQ} (min_of) ? a : b. Raw bits pass through; a NaN in either operand selects b.
inline uint32_t max_of(uint32_t a, uint32_t b);
inline uint32_t min_of(uint32_t a, uint32_t b);

uint32_t from_int(int32_t x);  // VPU_I2F: truncates toward zero above 2^24
int32_t to_int(uint32_t f);    // VPU_F2I: truncates; NaN/inf -> 0; overflow wraps (hardware.md §3.4)
// to_int's conversion without its NaN/inf -> 0 rule: TranscUnit's tr_fp_to_int (hardware.md §2.5).
int32_t to_int_keep_special(uint32_t f);

constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
constexpr uint32_t kOne = 0x3F800000u;
constexpr uint32_t kSignBit = 0x80000000u;

inline bool is_nan(uint32_t f) { return (f & 0x7F800000u) == 0x7F800000u && (f & 0x007FFFFFu) != 0; }

namespace detail {
constexpr uint32_t kQuietBit = 0x00400000u;
inline float to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
// bsc's NaN operand precedence (addFP/multFP stage 1): sNaN a, sNaN b, qNaN a, qNaN b. A signalling
// NaN comes back with its quiet bit set; sign and payload are kept. Call only when a or b is a NaN.
inline uint32_t propagate_nan(uint32_t a, uint32_t b) {
  auto is_snan = [](uint32_t f) { return is_nan(f) && !(f & kQuietBit); };
  if (is_snan(a)) return a | kQuietBit;
  if (is_snan(b)) return b | kQuietBit;
  return is_nan(a) ? a : b;
}
// Neither operand is a NaN, so a NaN from the host is an invalid operation (inf-inf, 0*inf): bsc
// returns its positive qnan() where x86 would give 0xFFC00000.
inline uint32_t host_result(float r) {
  const uint32_t bits = to_bits(r);
  return is_nan(bits) ? kCanonicalNaN : bits;
}
}  // namespace detail

// For non-NaN operands bsc's addFP/multFP round exactly like IEEE-754 RNE with gradual underflow, and
// both give the IEEE signs for zeros and infinities (an exact zero from an effective subtraction is +0
// under RNE, (-0)+(-0) = -0), so the host FPU computes them (built with -fno-fast-math).
inline uint32_t add(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return detail::propagate_nan(a, b);
  return detail::host_result(detail::to_float(a) + detail::to_float(b));
}
inline uint32_t sub(uint32_t a, uint32_t b) { return add(a, b ^ kSignBit); }
inline uint32_t mul(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return detail::propagate_nan(a, b);
  return detail::host_result(detail::to_float(a) * detail::to_float(b));
}
inline Order compare(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b)) return Order::kUO;
  const float x = detail::to_float(a), y = detail::to_float(b);  // the host orders +0 == -0 as compareFP does
  return x < y ? Order::kLT : x > y ? Order::kGT : Order::kEQ;
}
// compare(a, b) in {GT, EQ} is the host's a >= b: false for any NaN, true for +0 against -0. Without a
// branch, so the VPU's lane loops vectorise.
inline uint32_t max_of(uint32_t a, uint32_t b) { return detail::to_float(a) >= detail::to_float(b) ? a : b; }
inline uint32_t min_of(uint32_t a, uint32_t b) { return detail::to_float(a) <= detail::to_float(b) ? a : b; }

}  // namespace tinytpu::fp32
