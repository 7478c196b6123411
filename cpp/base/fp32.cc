#include "base/fp32.h"

namespace tinytpu::fp32 {
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
