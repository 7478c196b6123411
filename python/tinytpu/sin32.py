"""Exact-by-default SIN for 32-bit lanes.

tinygrad's float32 sine reduces large arguments (Payne-Hanek) with uint64 products, and it decomposes
transcendentals after it has split 64-bit integers, so that arithmetic would reach us unsplit. This
builds the same reduction from uint32 operations — 32x32->64 products from 16-bit halves — and reuses
tinygrad's polynomials and Cody-Waite reduction for the rest. The renderer rewrites SIN with it."""
from __future__ import annotations
import math
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp
from tinygrad.codegen.decomp.transcendental import (_lazy_map_numbers, cody_waite_reduction, frexp, sin_poly_large,
                                                    sin_poly_small)

# 2/pi in 32-bit words, the leading zero word first (bits 32*k .. 32*k+31 after the binary point).
TWO_OVER_PI = (0x00000000, 0x28BE60DB, 0x9391054A, 0x7F09D5F4, 0x7D4D3770, 0x36D8A566, 0x4F10E410)
SMALL = 30.0  # below this Cody-Waite is within an ulp; above it the bits of 2/pi are needed

def _u32(v: int) -> UOp: return UOp.const(v, dtypes.uint32)

def _mul_wide(x: UOp, y: UOp) -> tuple[UOp, UOp]:
  """(high, low) words of the 64-bit product of two uint32s."""
  m16 = _u32(0xFFFF)
  xh, xl, yh, yl = x >> 16, x & m16, y >> 16, y & m16
  ll, lh, hl = xl * yl, xl * yh, xh * yl
  mid = (ll >> 16) + (lh & m16) + (hl & m16)  # < 3 * 2^16, no wrap
  return xh * yh + (lh >> 16) + (hl >> 16) + (mid >> 16), x * y

def _word(i: UOp, n: int) -> UOp:
  """TWO_OVER_PI[i + n] for a per-lane word index i (0 past the table)."""
  out = _u32(0)
  for k in range(len(TWO_OVER_PI) - 1 - n):
    out = i.eq(k).where(_u32(TWO_OVER_PI[k + n]), out)
  return out

def payne_hanek32(x: UOp) -> tuple[UOp, UOp]:
  """x >= pi/4 (float32) -> (r, q): x = (q + r / (pi/2)) * pi/2 with r in [-pi/2, 0)."""
  f, e = frexp(x)  # x = f * 2^e, f in [0.5, 1)
  ia = (f * 4294967296.0).cast(dtypes.uint32)  # the 24-bit mantissa, scaled to a full word
  e = e.cast(dtypes.int32)
  i = (e >> 5).cast(dtypes.uint32)  # whole words of 2/pi that only make multiples of 4 quadrants
  sh = (e & 31).cast(dtypes.uint32)
  a = [_word(i, n) for n in range(4)]
  # the 96 bits of 2/pi starting sh bits into word i; the second shift is split so it never reaches 32
  hi, mi, lo = ((a[n] << sh) | ((a[n + 1] >> 1) >> (_u32(31) - sh)) for n in range(3))
  # 64 bits of the product ia * (hi:mi:lo) from bit 32 of the middle word: 2 quadrant bits, 62 fraction bits
  mid_hi, mid_lo = _mul_wide(ia, mi)
  lo_hi, _ = _mul_wide(ia, lo)
  p_lo = mid_lo + lo_hi
  p_hi = ia * hi + mid_hi + (p_lo < mid_lo).cast(dtypes.uint32)
  q = (p_hi >> 30).cast(dtypes.int32)
  frac = (p_hi & _u32(0x3FFFFFFF)).cast(dtypes.float32) * 4294967296.0 + p_lo.cast(dtypes.float32)
  r = frac * (math.pi / 2 / 2.0**62)
  return r - math.pi / 2, q + 1  # r - pi/2 keeps the polynomial's argument within [-pi/2, pi/2]

def sin32(d: UOp) -> UOp:
  """sin of a float32 within tinygrad's 1-ulp target; NaN for inf and NaN."""
  x = _lazy_map_numbers(d, d.const_like(0.0), d.const_like(0.0), d.const_like(0.0), d)
  sign = x.ne(0).where((x < 0).where(x.const_like(-1.0), x.const_like(1.0)), x.const_like(0.0))
  ax = x * sign
  small = sin_poly_small(*cody_waite_reduction(ax))
  large = sin_poly_large(*payne_hanek32(ax))
  result = (ax < SMALL).where(small, large) * sign
  return _lazy_map_numbers(d, d.const_like(math.nan), d.const_like(math.nan), d.const_like(math.nan), result)
