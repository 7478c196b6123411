// The float32 arithmetic the VPU has no instruction for, as sequences of its ops: int32 to float32 rounded to
// nearest, division and square root rounded as IEEE's (but for results within ~2^-21 ulp of a midpoint), a
// reciprocal within an ulp or two, truncation, and exp2 and log2 operation for operation as tinygrad's own
// decompositions. Each writes its result into d from its operands' vregs and takes and releases the scratch
// vregs and constants it needs; the op table's lowerings (lower.cc) call them.
#include "compiler/emitter.h"
#include "isa/instr_builders.h"

namespace tinytpu::compiler {

// int32/uint32 -> float32 with round-to-nearest-even: I2F truncates above 2^24, so convert the
// 16-bit halves exactly and let one FADD round.
void Emitter::int_to_float(int d, int x, bool is_signed) {
  int mag = alloc_vreg(), lo = alloc_vreg(), sign = alloc_vreg();
  if (is_signed) {
    int zero = constant(0);
    vpu(VpuOpcode::kCmplt, sign, x, zero);
    release(zero);
    emit(instr::vabs(mag, x));  // INT_MIN stays 0x80000000 = 2^31 unsigned
  } else {
    emit(instr::vzero(sign));
    vpu(VpuOpcode::kAnd, mag, x, x);
  }
  int k16 = constant(16), m16 = constant(0xFFFF);
  vpu(VpuOpcode::kAnd, lo, mag, m16);
  vpu(VpuOpcode::kShr, mag, mag, k16);
  vpu(VpuOpcode::kI2f, mag, mag);
  vpu(VpuOpcode::kI2f, lo, lo);
  int scale = constant(0x47800000, DType::kF32);  // 65536.0f
  vpu(VpuOpcode::kFmul, mag, mag, scale);
  vpu(VpuOpcode::kFadd, d, mag, lo);
  int k31 = constant(31);
  vpu(VpuOpcode::kShl, sign, sign, k31);
  vpu(VpuOpcode::kXor, d, d, sign);
  for (int r : {mag, lo, sign, k16, m16, scale, k31}) release(r);
}

// 1/x from exact ops: FRECIP's estimate plus one more Newton step (within an ulp or two), with the
// operand scaled by a power of two where the estimate breaks down (|x| >= 2^125, |x| < 2^-125) and
// IEEE's answers for 0, inf and NaN selected in. `in_range`: x is known to be within [2^-72, 2^101) or
// 0, inf or NaN (a divisor after div_scale), so it is not scaled.
void Emitter::reciprocal(int d, int x, bool in_range) {
  int ax = alloc_vreg(), c = alloc_vreg(), t = alloc_vreg(), xs = in_range ? x : alloc_vreg();
  int post = in_range ? -1 : alloc_vreg();
  vpu(VpuOpcode::kFabs, ax, x);
  auto scale_if = [&](uint32_t limit, bool above, uint32_t in_scale, uint32_t out_scale) {
    int lim = constant(int32_t(limit));
    vpu(VpuOpcode::kCmplt, c, above ? lim : ax, above ? ax : lim);
    release(lim);
    int k = constant(int32_t(in_scale));
    vpu(VpuOpcode::kFmul, t, x, k);
    release(k);
    emit(instr::select(xs, c, t, xs));
    int o = constant(int32_t(out_scale));
    emit(instr::select(post, c, o, post));
    release(o);
  };
  if (!in_range) {
    vpu(VpuOpcode::kAnd, xs, x, x);
    int one = constant(int32_t(0x3F800000), DType::kF32);
    vpu(VpuOpcode::kAnd, post, one, one);
    release(one);
    scale_if(0x7E000000u, true, 0x3E800000u, 0x3E800000u);   // |x| > 2^125: 1/(x/4) / 4
    scale_if(0x01000000u, false, 0x4B800000u, 0x4B800000u);  // |x| < 2^-125: 1/(x*2^24) * 2^24
  }
  vpu(VpuOpcode::kFrecip, d, xs);
  vpu(VpuOpcode::kFmul, t, xs, d);
  int two = constant(int32_t(0x40000000), DType::kF32);
  vpu(VpuOpcode::kFsub, t, two, t);
  release(two);
  vpu(VpuOpcode::kFmul, d, d, t);
  if (!in_range) {
    vpu(VpuOpcode::kFmul, d, d, post);
    release(xs);
    release(post);
  }
  // Specials: 1/±0 = ±inf, 1/±inf = ±0, NaN stays NaN.
  int inf = constant(0x7F800000);
  vpu(VpuOpcode::kXor, t, x, ax);      // x's sign bit
  vpu(VpuOpcode::kCmpeq, c, ax, inf);  // |x| == inf -> ±0
  emit(instr::select(d, c, t, d));
  vpu(VpuOpcode::kOr, t, t, inf);
  int zero = constant(0);
  vpu(VpuOpcode::kCmpeq, c, ax, zero);  // x == ±0 -> ±inf
  emit(instr::select(d, c, t, d));
  vpu(VpuOpcode::kCmplt, c, inf, ax);  // NaN
  emit(instr::select(d, c, x, d));
  for (int r : {ax, c, t, inf, zero}) release(r);
}

// Exact division a0 / b0 in two halves (compiler/divide.h): a0/b0 = (a0*s)/(b0*s) with s a power of two
// bringing a tiny |b0| (below 2^-50: exponent field E < 77, subnormals and zeros as E = 0) to exponent
// 2^-50 and a huge one (2^101 and above, E > 227, infinities and NaNs too) to 2^100, so that b0*s is within
// [2^-72, 2^101) for every finite non-zero b0 (1/(b0*s) is normal, and div_exact's remainder exact), and
// a0*s can only overflow or underflow where a0/b0 itself does. In exponent-field terms s is
// 2^(clamp(E, 77, 227) - E); 1.0 in between. `e`: a scratch vreg.
void Emitter::div_scale(int d, int b0, int e) {
  int field = constant(0x7F800000), tiny = constant(77 << 23), huge = constant(227 << 23);
  vpu(VpuOpcode::kAnd, e, b0, field);
  vpu(VpuOpcode::kMax, d, e, tiny);
  vpu(VpuOpcode::kMin, d, d, huge);
  vpu(VpuOpcode::kSub, d, d, e);
  for (int c : {field, tiny, huge}) release(c);
  int one = constant(0x3F800000);
  vpu(VpuOpcode::kAdd, d, d, one);
  release(one);
}

// a / b for a = a0*s, b = b0*s (|b| within [2^-72, 2^101), or zero, infinite or NaN) and r =
// reciprocal(b): q0 = a * r is within an ulp or two; one correction by the exact remainder then rounds
// like IEEE division but for quotients within ~2^-21 ulp of a midpoint (the error of c below: r's ulp or
// two, and c's own rounding), which can round the wrong way by one ulp. The remainder a' - q*b comes
// from Dekker's product (of halves of 12 significant bits) and Sterbenz's exact subtraction, which are
// exact while q*b and its halves' products are normal, so for q near 1; so the correction runs on q0 and a
// scaled by t = 2^(127-E), E the exponent field of q0 clamped to [1, 253], which puts q near 1, and its
// result is scaled back by 1/t:
//  - normal quotients (|q0| > 1.5*2^-126): q = (a*t)*r, the result (q + c)/t with c = remainder*r: one
//    rounding where q + c is, then an exact scaling (or IEEE's overflow). q is recomputed from a*t, not
//    q0*t, so a q0 that overflowed still has a finite q.
//  - quotients at the bottom (|q0| <= 1.5*2^-126): the result's grid is 2^-149 on both sides of 2^-126,
//    which no float addition rounds to, so q = q0*t (on that grid, 2^-23 after scaling) and c is
//    rounded to the grid on its own, by adding and subtracting 1.5 (c is a few grid steps at most):
//    q + c is then exact, and so is the scaling back.
// A non-finite correction means a zero, infinite or NaN operand: IEEE's answer is q0. `q`: a scratch
// vreg.
void Emitter::div_exact(int d, int a, int b, int r, int q) {
  vpu(VpuOpcode::kFmul, q, a, r);  // q0
  int e = alloc_vreg(), low = alloc_vreg();
  int bottom = constant(0x00C00000), top = constant(0x7EFFFFFF);  // 1.5*2^-126
  vpu(VpuOpcode::kFabs, e, q);
  vpu(VpuOpcode::kMax, e, e, bottom);      // |q0|'s bits with the exponent field clamped to [1, 253]
  vpu(VpuOpcode::kCmpeq, low, e, bottom);  // |q0| <= 1.5*2^-126
  vpu(VpuOpcode::kMin, e, e, top);
  release(top);
  int t = alloc_vreg(), field = constant(0x7F800000);
  vpu(VpuOpcode::kAnd, t, e, field);
  vpu(VpuOpcode::kFrecip, t, t);  // t = 2^(127-E): FRECIP's estimate is exact on a power of two
  for (int c : {bottom, field}) release(c);
  int as = alloc_vreg();
  vpu(VpuOpcode::kFmul, as, a, t);  // exact: a*t is q*b, with q near 1
  vpu(VpuOpcode::kFmul, t, q, t);
  vpu(VpuOpcode::kFmul, q, as, r);
  emit(instr::select(q, low, t, q));
  release(t);
  sub_exact_product(as, q, b);       // the remainder a*t - q*b
  vpu(VpuOpcode::kFmul, as, as, r);  // c
  int ok = alloc_vreg(), u = alloc_vreg();
  field = constant(0x7F800000);
  vpu(VpuOpcode::kFabs, u, as);
  vpu(VpuOpcode::kCmplt, ok, u, field);  // c finite
  vpu(VpuOpcode::kAnd, e, e, field);     // 1/t
  release(field);
  int to_grid = constant(0x3FC00000, DType::kF32);  // 1.5: c + 1.5 rounds c to a multiple of 2^-23
  vpu(VpuOpcode::kFadd, u, as, to_grid);
  vpu(VpuOpcode::kFsub, u, u, to_grid);
  release(to_grid);
  emit(instr::select(as, low, u, as));
  vpu(VpuOpcode::kFadd, q, q, as);
  vpu(VpuOpcode::kFmul, q, q, e);
  vpu(VpuOpcode::kFmul, e, a, r);  // q0 again
  int sign = constant(int32_t(0x80000000u));
  vpu(VpuOpcode::kAnd, u, e, sign);  // the quotient's sign: q + c above rounds a zero to +0
  release(sign);
  vpu(VpuOpcode::kOr, q, q, u);
  emit(instr::select(d, ok, q, e));
  for (int x : {e, low, as, ok, u}) release(x);
}

// The two halves in one (a division split_divisions left whole).
void Emitter::divide(int d, int a0, int b0) {
  int a = alloc_vreg(), b = alloc_vreg(), r = alloc_vreg(), s = alloc_vreg();
  div_scale(s, b0, r);
  vpu(VpuOpcode::kFmul, a, a0, s);
  vpu(VpuOpcode::kFmul, b, b0, s);
  reciprocal(r, b, /*in_range*/ true);
  div_exact(d, a, b, r, /*q*/ s);
  for (int x : {a, b, r, s}) release(x);
}

// x -= u*v, exactly but for the one rounding of the result: Dekker's product from halves of 12
// significant bits (a square when u == v) and Sterbenz's exact subtraction. Exact while u*v and its halves'
// products are normal and x is within a few ulps of u*v.
void Emitter::sub_exact_product(int x, int u, int v) {
  const bool square = u == v;
  int h1 = alloc_vreg(), l1 = alloc_vreg();
  int h2 = square ? h1 : alloc_vreg(), l2 = square ? l1 : alloc_vreg();
  int high = constant(int32_t(0xFFFFF000u));  // sign, exponent and the leading 12 significant bits
  auto split = [&](int w, int h, int l) {     // w = h + l, each of 12 significant bits at most
    vpu(VpuOpcode::kAnd, h, w, high);
    vpu(VpuOpcode::kFsub, l, w, h);
  };
  split(u, h1, l1);
  if (!square) split(v, h2, l2);
  release(high);
  int p = alloc_vreg(), err = alloc_vreg();
  vpu(VpuOpcode::kFmul, p, u, v);
  vpu(VpuOpcode::kFmul, err, h1, h2);  // err = u*v - p exactly: ((h1*h2 - p) + h1*l2 + l1*h2) + l1*l2
  vpu(VpuOpcode::kFsub, err, err, p);
  vpu(VpuOpcode::kFsub, x, x, p);  // exact: p is within a few ulps of x
  release(p);
  if (square) {  // h*l + l*h = 2*h*l, exactly
    vpu(VpuOpcode::kFmul, h1, h1, l1);
    vpu(VpuOpcode::kFadd, h1, h1, h1);
    vpu(VpuOpcode::kFadd, err, err, h1);
  } else {
    vpu(VpuOpcode::kFmul, h1, h1, l2);
    vpu(VpuOpcode::kFadd, err, err, h1);
    vpu(VpuOpcode::kFmul, h2, l1, h2);
    vpu(VpuOpcode::kFadd, err, err, h2);
  }
  vpu(VpuOpcode::kFmul, l1, l1, l2);
  vpu(VpuOpcode::kFadd, err, err, l1);
  vpu(VpuOpcode::kFsub, x, x, err);
  for (int r : {h1, l1, err}) release(r);
  if (!square) {
    release(h2);
    release(l2);
  }
}

// sqrt(x), rounded like IEEE's but for results within ~2^-21 ulp of a midpoint (as division). x is scaled
// by an even power of two 2^-2k into [1, 4) in its bits (a subnormal x first by 2^24); there y ~ 1/sqrt
// from the bit-pattern estimate (3.4% off) and three Newton steps y(1.5 - (x/2)y^2) (an ulp or two), s =
// x*y, then one correction by the exact residual (sub_exact_product). The result is s*2^k, scaled in its
// bits too: sqrt never leaves the normal range. IEEE's answers: +-0, +inf and NaN are x; below zero, NaN.
// Fast math: two Newton steps and no correction (~4e-6 relative error).
void Emitter::square_root(int d, int x) {
  int xs = alloc_vreg(), back = alloc_vreg(), sub = alloc_vreg(), k = alloc_vreg();
  int low = constant(0x01000000), up = constant(0x4B800000, DType::kF32);  // 2^-125; 2^24
  vpu(VpuOpcode::kCmplt, sub, x, low);
  vpu(VpuOpcode::kFmul, xs, x, up);
  emit(instr::select(xs, sub, xs, x));
  for (int c : {low, up}) release(c);
  int one_bits = constant(0x3F800000), even = constant(int32_t(0xFF000000u));
  vpu(VpuOpcode::kSub, k, xs, one_bits);
  vpu(VpuOpcode::kAnd, k, k, even);  // 2k << 23: the exponent, rounded down to even
  vpu(VpuOpcode::kSub, xs, xs, k);   // x * 2^-2k, in [1, 4)
  for (int c : {one_bits, even}) release(c);
  int pre = constant(24 << 23), two = constant(2);
  vpu(VpuOpcode::kSub, back, k, pre);
  emit(instr::select(back, sub, back, k));
  vpu(VpuOpcode::kDiv, back, back, two);  // k << 23 (exact: a multiple of 2^24)
  for (int c : {pre, two}) release(c);
  release(sub);
  int y = alloc_vreg(), half = constant(0x3F000000, DType::kF32);
  int one = constant(1), magic = constant(0x5F3759DF);
  vpu(VpuOpcode::kShr, y, xs, one);
  vpu(VpuOpcode::kSub, y, magic, y);
  for (int c : {one, magic}) release(c);
  int xh = alloc_vreg(), t = k, three_halves = constant(0x3FC00000, DType::kF32);
  vpu(VpuOpcode::kFmul, xh, xs, half);
  for (int step = 0; step < (fast_math_ ? 2 : 3); ++step) {
    vpu(VpuOpcode::kFmul, t, y, y);
    vpu(VpuOpcode::kFmul, t, t, xh);
    vpu(VpuOpcode::kFsub, t, three_halves, t);
    vpu(VpuOpcode::kFmul, y, y, t);
  }
  release(three_halves);
  release(xh);
  int s = alloc_vreg();
  vpu(VpuOpcode::kFmul, s, xs, y);
  if (!fast_math_) {  // s + (x - s^2)*y/2, the residual exact
    sub_exact_product(xs, s, s);
    vpu(VpuOpcode::kFmul, xs, xs, y);
    vpu(VpuOpcode::kFmul, xs, xs, half);
    vpu(VpuOpcode::kFadd, s, s, xs);
  }
  release(half);
  int h = alloc_vreg(), l = alloc_vreg();
  vpu(VpuOpcode::kAdd, s, s, back);
  int zero = constant(0), inf = constant(0x7F800000);
  vpu(VpuOpcode::kCmplt, h, zero, x);  // finite and above zero: in its bits, 0 < x < inf
  vpu(VpuOpcode::kCmplt, l, x, inf);
  vpu(VpuOpcode::kAnd, h, h, l);
  vpu(VpuOpcode::kFcmplt, l, x, zero);
  emit(instr::select(s, h, s, x));
  vpu(VpuOpcode::kFmul, h, inf, zero);  // NaN
  emit(instr::select(d, l, h, s));
  for (int r : {inf, zero, xs, back, y, t, s, h, l}) release(r);
}

// t = the polynomial in s with these float32 coefficients, highest degree first, by Horner's rule as
// tinygrad's polyN evaluates it (its 0*s + c0 folds to c0, so the first step is c0*s).
void Emitter::horner(int t, int s, std::initializer_list<uint32_t> coefficients) {
  const uint32_t* c = coefficients.begin();
  int k = constant(int32_t(*c), DType::kF32);
  vpu(VpuOpcode::kFmul, t, k, s);
  release(k);
  while (++c != coefficients.end()) {
    k = constant(int32_t(*c), DType::kF32);
    vpu(VpuOpcode::kFadd, t, t, k);
    release(k);
    if (c + 1 != coefficients.end()) vpu(VpuOpcode::kFmul, t, t, s);
  }
}

// 2^x as tinygrad's xexp2 computes it (codegen/decomp/transcendental.py), operation for operation where
// one rounds, so the result is the bits its decomposition gives lowered node by node, in fewer
// instructions: x to an integer q = trunc(x +- 0.5), s = x - q, its degree-6 polynomial in s by Horner's
// rule, times 2^(q/2) and 2^(q - q/2) (q/2 truncated: each a normal power of two, the second product
// rounding where the result is subnormal); NaN for NaN. xexp2 takes infinities as 0 and selects inf from
// 128 up and 0 below -150; here x is clamped to [-151, 129] instead, where the same products give those:
// from 128 up u*2^q is at least 2^128 (u = 2^s to within an ulp) and overflows, below -150 it is under
// 2^-150 and rounds to 0, and in between nothing changes.
void Emitter::exp2_decomposed(int d, int x) {
  int ax = alloc_vreg(), t = alloc_vreg(), xm = alloc_vreg(), q = alloc_vreg();
  vpu(VpuOpcode::kFabs, ax, x);
  int low = constant(int32_t(0xC3170000u), DType::kF32),
      high = constant(0x43010000, DType::kF32);  // -151, 129
  vpu(VpuOpcode::kFmax, xm, x, low);             // a NaN gives -151: its result is replaced below
  vpu(VpuOpcode::kFmin, xm, xm, high);
  for (int c : {low, high}) release(c);
  int sign = constant(int32_t(0x80000000u)), half = constant(0x3F000000, DType::kF32);
  vpu(VpuOpcode::kAnd, t, xm, sign);  // +-0.5 with x's sign (a -0 gives -0.5: q is 0 either way)
  vpu(VpuOpcode::kOr, t, t, half);
  for (int c : {sign, half}) release(c);
  vpu(VpuOpcode::kFadd, t, xm, t);
  vpu(VpuOpcode::kF2i, q, t);  // rounded away from zero
  vpu(VpuOpcode::kI2f, t, q);
  vpu(VpuOpcode::kFsub, xm, xm, t);  // s
  // xexp2's float32 coefficients: 0.1535920892e-3, ... 0.6931471825, 1.0
  horner(t, xm, {0x39210D90, 0x3AAF8A33, 0x3C1D966E, 0x3D63579C, 0x3E75FDEC, 0x3F317218, 0x3F800000});
  int two = constant(2), bias = constant(127), k23 = constant(23);
  vpu(VpuOpcode::kDiv, xm, q, two);  // q/2, truncated as tinygrad's integer division
  vpu(VpuOpcode::kSub, q, q, xm);
  for (int e : {xm, q}) {  // u * 2^e: e + 127 into the exponent field
    vpu(VpuOpcode::kAdd, e, e, bias);
    vpu(VpuOpcode::kShl, e, e, k23);
    vpu(VpuOpcode::kFmul, t, t, e);
  }
  for (int k : {two, bias, k23}) release(k);
  int inf = constant(0x7F800000);
  vpu(VpuOpcode::kCmplt, q, inf, ax);  // NaN
  int nan = constant(0x7FC00000);
  emit(instr::select(d, q, nan, t));
  for (int r : {nan, inf, ax, t, xm, q}) release(r);
}

// log2(x) as tinygrad's xlog2 computes it, operation for operation where one rounds (as exp2_decomposed):
// a = x (below 1e-4, x*2^64), e = the exponent of a*4/3, m = a*2^-e in [0.75, 1.5), y = (m - 1)/(m + 1)
// (the exact division; m + 1 needs no scaling), its polynomial in y^2, r = ((t*(y*y^2) + e) + y*c1) +
// y*c2 with e less 64 for a scaled x. Then its specials: inf for inf, -inf for +-0, NaN below zero and
// for NaN, and -inf where its 1/x test gives -inf (x in [-2^-128, -0]). The exponent is read by a logical
// shift without its mask: the two differ only for x < 0, whose result is replaced. a and e are computed
// twice, before and after the division, which needs every other register.
void Emitter::log2_decomposed(int d, int x) {
  auto exponent = [&](int e, int a) {  // e = the exponent field of a*4/3 less 127; a = x, scaled
    int tiny = constant(0x38D1B717, DType::kF32), up = constant(0x5F800000, DType::kF32);  // 1e-4, 2^64
    vpu(VpuOpcode::kFcmplt, e, x, tiny);
    vpu(VpuOpcode::kFmul, a, x, up);
    emit(instr::select(a, e, a, x));
    for (int c : {tiny, up}) release(c);
    int four_thirds = constant(0x3FAAAAAB, DType::kF32), k23 = constant(23), bias = constant(127);
    vpu(VpuOpcode::kFmul, e, a, four_thirds);
    vpu(VpuOpcode::kShr, e, e, k23);
    vpu(VpuOpcode::kSub, e, e, bias);
    for (int c : {four_thirds, k23, bias}) release(c);
  };
  int a = alloc_vreg(), m = alloc_vreg();
  exponent(m, a);
  int k23 = constant(23);
  vpu(VpuOpcode::kShl, m, m, k23);
  release(k23);
  vpu(VpuOpcode::kSub, m, a, m);  // a * 2^-e
  int one = constant(0x3F800000, DType::kF32), minus_one = constant(int32_t(0xBF800000u), DType::kF32);
  vpu(VpuOpcode::kFadd, a, m, minus_one);
  vpu(VpuOpcode::kFadd, m, m, one);
  for (int c : {one, minus_one}) release(c);
  int r = alloc_vreg(), q = alloc_vreg();
  reciprocal(r, m, /*in_range*/ true);
  div_exact(d, a, m, r, q);  // y
  for (int v : {r, q}) release(v);
  int e = alloc_vreg(), y = d;
  exponent(e, a);
  vpu(VpuOpcode::kI2f, e, e);
  int tiny = constant(0x38D1B717, DType::kF32), minus64 = constant(int32_t(0xC2800000u), DType::kF32);
  vpu(VpuOpcode::kFcmplt, m, x, tiny);  // scaled
  vpu(VpuOpcode::kFadd, a, e, minus64);
  emit(instr::select(e, m, a, e));
  for (int c : {tiny, minus64}) release(c);
  int y2 = a, t = m;
  vpu(VpuOpcode::kFmul, y2, y, y);
  // xlog2's float32 coefficients: 0.4374550283, 0.5764790177, 0.9618012905120 in y^2; 2.8853900432586669922
  // and 3.2734474483568488616e-08 in y
  horner(t, y2, {0x3EDFFA1B, 0x3F139421, 0x3F76389C});
  vpu(VpuOpcode::kFmul, y2, y, y2);
  vpu(VpuOpcode::kFmul, t, t, y2);
  vpu(VpuOpcode::kFadd, t, t, e);
  for (uint32_t k : {0x4038AA3Bu, 0x330C97EFu}) {
    int c = constant(int32_t(k), DType::kF32);
    vpu(VpuOpcode::kFmul, y2, y, c);
    release(c);
    vpu(VpuOpcode::kFadd, t, t, y2);
  }
  int inf = constant(0x7F800000), minus_inf = constant(int32_t(0xFF800000u)), zero = constant(0);
  vpu(VpuOpcode::kCmpeq, y2, x, inf);
  emit(instr::select(t, y2, inf, t));
  vpu(VpuOpcode::kFabs, e, x);
  vpu(VpuOpcode::kCmpeq, y2, e, zero);
  emit(instr::select(t, y2, minus_inf, t));
  vpu(VpuOpcode::kCmplt, y2, inf, e);  // NaN
  vpu(VpuOpcode::kFcmplt, e, x, zero);
  vpu(VpuOpcode::kOr, y2, y2, e);
  int nan = constant(0x7FC00000);
  emit(instr::select(t, y2, nan, t));
  release(nan);
  int tiny_negative = constant(int32_t(0x80200001u));  // x's bits at most -2^-128's, as signed integers
  vpu(VpuOpcode::kCmplt, y2, x, tiny_negative);
  emit(instr::select(d, y2, minus_inf, t));
  for (int v : {tiny_negative, inf, minus_inf, zero, a, e, m}) release(v);
}

// Round toward zero: below 2^23 in magnitude through F2I/I2F (keeping the sign of -0.x), else x.
void Emitter::trunc(int d, int x) {
  int ax = alloc_vreg(), c = alloc_vreg();
  int m = constant(0x7FFFFFFF);
  vpu(VpuOpcode::kAnd, ax, x, m);
  release(m);
  int lim = constant(0x4B000000);  // 2^23
  vpu(VpuOpcode::kCmplt, c, ax, lim);
  release(lim);
  vpu(VpuOpcode::kF2i, d, x);
  vpu(VpuOpcode::kI2f, d, d);
  int sign = constant(int32_t(0x80000000u));
  vpu(VpuOpcode::kAnd, ax, x, sign);
  vpu(VpuOpcode::kOr, d, d, ax);
  release(sign);
  emit(instr::select(d, c, d, x));
  release(ax);
  release(c);
}

}  // namespace tinytpu::compiler
