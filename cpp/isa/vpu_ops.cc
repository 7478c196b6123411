#include "isa/vpu_ops.h"

#include <cstdint>

#include "base/fp32.h"
#include "base/fp_reducer.h"
#include "base/transc.h"

// The VPU opcode table, built from vpu_ops.def (hardware.md §3, src/VPU.bsv). Each op is a per-lane (or
// per-row / per-column / per-tile) function lifted onto the tile by one of the shape helpers below.

namespace tinytpu {
namespace {

using Lane1 = int32_t (*)(int32_t);
using Lane2 = int32_t (*)(int32_t, int32_t);
using RowReduce = int32_t (*)(const Row&);  // one row or one column -> scalar

// ---- Shapes: lift a lane function or a row's reduction onto the tile ----

template <Lane1 F>
void unary(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = F(a[i]);
}

template <Lane2 F>
void binary(const Tile& a, const Tile& b, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = F(a[i], b[i]);
}

Row row_of(const Tile& t, int r) {
  Row out;
  for (int c = 0; c < kRows; ++c) out[c] = t[kRows * r + c];
  return out;
}
Row col_of(const Tile& t, int c) {
  Row out;
  for (int r = 0; r < kRows; ++r) out[r] = t[kRows * r + c];
  return out;
}

// "row": per sublane r, broadcast across its lanes.
template <RowReduce R>
void per_row(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int r = 0; r < kRows; ++r) {
    const int32_t v = R(row_of(a, r));
    for (int c = 0; c < kRows; ++c) out[kRows * r + c] = v;
  }
}

// "col": per lane c over the sublanes, copied into every row.
template <RowReduce R>
void per_col(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int c = 0; c < kRows; ++c) {
    const int32_t v = R(col_of(a, c));
    for (int r = 0; r < kRows; ++r) out[kRows * r + c] = v;
  }
}

// Integer "tile": reduce each column, then the four column results (VPU.bsv tile_sum etc.).
template <RowReduce R>
void per_tile(const Tile& a, const Tile&, const Tile&, Tile& out) {
  Row cols;
  for (int c = 0; c < kRows; ++c) cols[c] = R(col_of(a, c));
  out.fill(R(cols));
}

template <FpReduceOp Op>
void fp_tile(const Tile& a, const Tile&, const Tile&, Tile& out) {
  out.fill(int32_t(fp_reduce(Op, a)));
}

template <TranscOp Op>
void transc(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = int32_t(transc_lane(Op, uint32_t(a[i])));
}

// Lane pairs (2p, 2p+1) of the row-major tile are the pairs within each row (an even number of lanes).
using PairFn = void (*)(int32_t de, int32_t dd, int32_t c, int32_t s, int32_t& even, int32_t& odd);
template <PairFn F>
void pairwise(const Tile& a, const Tile& b, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; i += 2) F(a[i], a[i + 1], b[i], b[i + 1], out[i], out[i + 1]);
}

// SELECT: a != 0 ? b : the previous VPU result.
void select_prev(const Tile& a, const Tile& b, const Tile& prev, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = a[i] != 0 ? b[i] : prev[i];
}

// ---- Folds over four values ----

template <Lane2 F, int32_t Init>
int32_t fold_from(const Row& v) {
  int32_t acc = Init;
  for (int32_t x : v) acc = F(acc, x);
  return acc;
}

template <Lane2 F>
int32_t fold_first(const Row& v) {
  int32_t acc = v[0];
  for (int i = 1; i < kRows; ++i) acc = F(acc, v[i]);
  return acc;
}

// The row float reducers' addFP/compareFP tree: neighbours first, ((v0 . v1) . (v2 . v3)) on four lanes.
// A wider row is taken as the same balanced tree (a choice: the reference has four lanes).
template <Lane2 F>
int32_t tree(const Row& v) {
  Row level = v;
  for (int width = kRows; width > 1; width /= 2)
    for (int i = 0; i < width / 2; ++i) level[i] = F(level[2 * i], level[2 * i + 1]);
  return level[0];
}

template <bool kMax>
int32_t arg_extreme(const Row& v) {  // strict comparison: ties keep the first lane
  int32_t best = v[0], idx = 0;
  for (int i = 1; i < kRows; ++i)
    if (kMax ? v[i] > best : v[i] < best) best = v[i], idx = i;
  return idx;
}

// ---- Integer lanes (Int32, two's-complement wrap) ----

int32_t max_i(int32_t a, int32_t b) { return a > b ? a : b; }
int32_t min_i(int32_t a, int32_t b) { return a < b ? a : b; }
int32_t relu(int32_t a) { return a > 0 ? a : 0; }
int32_t cmplt(int32_t a, int32_t b) { return a < b; }
int32_t cmpne(int32_t a, int32_t b) { return a != b; }
int32_t cmpeq(int32_t a, int32_t b) { return a == b; }
int32_t shl(int32_t a, int32_t b) { return int32_t(uint32_t(a) << (b & 31)); }
int32_t shr(int32_t a, int32_t b) { return int32_t(uint32_t(a) >> (b & 31)); }  // logical
int32_t rotl(int32_t a, int32_t b) {
  const uint32_t x = uint32_t(a), amt = uint32_t(b) & 31;
  return int32_t(x << amt | x >> ((32 - amt) & 31));
}
int32_t rotr(int32_t a, int32_t b) {
  const uint32_t x = uint32_t(a), amt = uint32_t(b) & 31;
  return int32_t(x >> amt | x << ((32 - amt) & 31));
}
// Divisor 0 gives 0 (VPU.bsv muxes it out). INT_MIN / -1 is unspecified in the reference (hardware.md §8
// item 15); we choose the two's-complement wrap, INT_MIN.
int32_t idiv(int32_t a, int32_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  return a / b;  // C++ truncates toward zero like Int#(32) '/'
}
int32_t and_(int32_t a, int32_t b) { return a & b; }
int32_t or_(int32_t a, int32_t b) { return a | b; }
int32_t xor_(int32_t a, int32_t b) { return a ^ b; }
int32_t not_(int32_t a) { return ~a; }
int32_t copy(int32_t a) { return a; }
int32_t sign(int32_t a) { return (a > 0) - (a < 0); }
int32_t clz(int32_t a) { return a == 0 ? 32 : __builtin_clz(uint32_t(a)); }
int32_t ctz(int32_t a) { return a == 0 ? 32 : __builtin_ctz(uint32_t(a)); }
int32_t popcount(int32_t a) { return __builtin_popcount(uint32_t(a)); }
int32_t byte_reverse(int32_t a) { return int32_t(__builtin_bswap32(uint32_t(a))); }
int32_t clamp_i32(int64_t v) { return int32_t(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v); }
int32_t sat_add(int32_t a, int32_t b) { return clamp_i32(int64_t(a) + b); }
int32_t sat_sub(int32_t a, int32_t b) { return clamp_i32(int64_t(a) - b); }
int32_t abs_diff(int32_t a, int32_t b) {  // |a - b| in 33 bits, clamped to INT_MAX
  const int64_t d = int64_t(a) - b;
  return clamp_i32(d < 0 ? -d : d);
}
int32_t min_u(int32_t a, int32_t b) { return uint32_t(a) < uint32_t(b) ? a : b; }
int32_t max_u(int32_t a, int32_t b) { return uint32_t(a) > uint32_t(b) ? a : b; }
void ipair_rotate(int32_t de, int32_t dd, int32_t c, int32_t s, int32_t& even, int32_t& odd) {
  even = wrap_sub(wrap_mul(de, c), wrap_mul(dd, s));
  odd = wrap_add(wrap_mul(de, s), wrap_mul(dd, c));
}

// ---- Packed int8: four signed bytes per lane, byte 0 = bits 7:0 ----
// Byte functions work on int and may return any int; only the low 8 bits are packed.

using Byte1 = int (*)(int);
using Byte2 = int (*)(int, int);

int byte_at(int32_t x, int k) {
  const int v = int((uint32_t(x) >> (8 * k)) & 0xFF);
  return v >= 128 ? v - 256 : v;
}

template <Byte2 F>
int32_t bytes2(int32_t a, int32_t b) {
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= (uint32_t(F(byte_at(a, k), byte_at(b, k))) & 0xFF) << (8 * k);
  return int32_t(r);
}

template <Byte1 F>
int32_t bytes1(int32_t a) {
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= (uint32_t(F(byte_at(a, k))) & 0xFF) << (8 * k);
  return int32_t(r);
}

int sat8(int v) { return v > 127 ? 127 : v < -128 ? -128 : v; }
int add8(int a, int b) { return sat8(a + b); }
int sub8(int a, int b) { return sat8(a - b); }
int max8(int a, int b) { return a > b ? a : b; }
int min8(int a, int b) { return a < b ? a : b; }
int neg8(int a) { return sat8(-a); }  // -128 -> 127
int relu8(int a) { return a > 0 ? a : 0; }
int cmplt8(int a, int b) { return a < b ? -1 : 0; }
int cmpeq8(int a, int b) { return a == b ? -1 : 0; }
int mul_low8(int a, int b) { return a * b; }
int mul_high8(int a, int b) { return int(uint32_t(a * b) >> 8); }  // bits 15:8 of the 16-bit product
int abs8(int a) { return sat8(a < 0 ? -a : a); }                   // -128 -> 127
int sign8(int a) { return (a > 0) - (a < 0); }
int abs_diff8(int a, int b) { return abs8(sub8(a, b)); }

// ---- Float32 lanes (raw bits in Int32, bsc FloatingPoint semantics) ----

template <uint32_t (*F)(uint32_t, uint32_t)>
int32_t fbin(int32_t a, int32_t b) {
  return int32_t(F(uint32_t(a), uint32_t(b)));
}

// compare(a, b) == LT is the host's a < b, which is false for any NaN.
int32_t fcmplt(int32_t a, int32_t b) {
  return fp32::detail::to_float(uint32_t(a)) < fp32::detail::to_float(uint32_t(b));
}
int32_t i2f(int32_t a) { return int32_t(fp32::from_int(a)); }
int32_t f2i(int32_t a) { return fp32::to_int(uint32_t(a)); }
int32_t fabs_(int32_t a) { return int32_t(uint32_t(a) & ~fp32::kSignBit); }
int32_t fsign(int32_t a) {  // +-0 -> 0; otherwise +-1.0 by the sign bit (NaN, subnormals included)
  const uint32_t x = uint32_t(a);
  if ((x & ~fp32::kSignBit) == 0) return 0;
  return int32_t((x & fp32::kSignBit) | fp32::kOne);
}
// Estimate {sign, (0x7F000000 - |a|) mod 2^31}, then three Newton steps x = x * (2 - a*x). The
// negation is a sign-bit flip and every op rounds (VPU.bsv order: multFP(a, x), addFP(2, -ax),
// multFP(x, .)).
uint32_t recip_estimate(uint32_t a) {
  return (a & fp32::kSignBit) | ((0x7F000000u - (a & ~fp32::kSignBit)) & ~fp32::kSignBit);
}
int32_t frecip(int32_t a_bits) {
  const uint32_t a = uint32_t(a_bits), two = 0x40000000u;
  uint32_t x = recip_estimate(a);
  for (int i = 0; i < 3; ++i) x = fp32::mul(x, fp32::add(two, fp32::mul(a, x) ^ fp32::kSignBit));
  return int32_t(x);
}

// ---- Float lanes on the host FPU first ----
// fp32::add and mul are the host's IEEE result unless an operand or the result is a NaN, whose bits bsc's
// rules pick. A NaN operand always gives a NaN result, so: compute every lane on the host in a loop without
// branches (which the compiler vectorises) and, only if some result is a NaN, every lane again exactly.

using HostLane1 = float (*)(float);
using HostLane2 = float (*)(float, float);
float host_add(float a, float b) { return a + b; }
float host_sub(float a, float b) { return a - b; }
float host_mul(float a, float b) { return a * b; }
float host_recip(float a) {  // frecip's steps; -(a*x) flips the sign bit as the reference's negation does
  float x = fp32::detail::to_float(recip_estimate(fp32::detail::to_bits(a)));
  for (int i = 0; i < 3; ++i) x = x * (2.0f + -(a * x));
  return x;
}

bool any_nan(const Tile& t) {  // in one comparison per lane: |bits| above infinity's
  int nan = 0;
  for (int32_t x : t) nan |= int((uint32_t(x) & ~fp32::kSignBit) > 0x7F800000u);
  return nan != 0;
}

template <HostLane2 Host, Lane2 Exact>
void fbinary(const Tile& a, const Tile& b, const Tile& prev, Tile& out) {
  for (int i = 0; i < kTileElems; ++i)
    out[i] = int32_t(fp32::detail::to_bits(
        Host(fp32::detail::to_float(uint32_t(a[i])), fp32::detail::to_float(uint32_t(b[i])))));
  if (any_nan(out)) binary<Exact>(a, b, prev, out);
}

template <HostLane1 Host, Lane1 Exact>
void funary(const Tile& a, const Tile& b, const Tile& prev, Tile& out) {
  for (int i = 0; i < kTileElems; ++i)
    out[i] = int32_t(fp32::detail::to_bits(Host(fp32::detail::to_float(uint32_t(a[i])))));
  if (any_nan(out)) unary<Exact>(a, b, prev, out);
}
void pair_rotate(int32_t de, int32_t dd, int32_t c, int32_t s, int32_t& even, int32_t& odd) {
  using fp32::add;
  using fp32::mul;
  const uint32_t e = uint32_t(de), o = uint32_t(dd), cs = uint32_t(c), sn = uint32_t(s);
  even = int32_t(add(mul(e, cs), mul(o, sn) ^ fp32::kSignBit));
  odd = int32_t(add(mul(e, sn), mul(o, cs)));
}

constexpr Lane2 fadd = fbin<fp32::add>;
constexpr Lane2 fmul = fbin<fp32::mul>;
constexpr Lane2 fmax = fbin<fp32::max_of>;
constexpr Lane2 fmin = fbin<fp32::min_of>;
constexpr int32_t kFOne = int32_t(fp32::kOne);

constexpr VpuKind C = VpuKind::kComb, FR = VpuKind::kFpReduce, TR = VpuKind::kTransc;
constexpr VpuEnergy I = VpuEnergy::kInt, IM = VpuEnergy::kIntMul, FA = VpuEnergy::kFpAdd,
                    FM = VpuEnergy::kFpMul;
constexpr uint8_t steps(TranscOp op) { return uint8_t(transc_steps(op)); }

}  // namespace

const std::array<VpuOpInfo, kNumVpuOps> kVpuOps = {{
#define X(opcode, name, mnemonic, arity, kind, energy, transc_steps, ...) \
  {uint8_t(VpuOpcode::name), mnemonic, arity, kind, energy, transc_steps, __VA_ARGS__},
#include "isa/vpu_ops.def"
#undef X
}};

const VpuOpInfo* find_vpu_op(std::string_view name) {
  auto upper = [](char ch) { return ch >= 'a' && ch <= 'z' ? char(ch - 'a' + 'A') : ch; };
  for (const VpuOpInfo& op : kVpuOps) {
    const std::string_view n = op.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) same = n[i] == upper(name[i]);
    if (same) return &op;
  }
  return nullptr;
}

int vpu_done_latency(const VpuOpInfo& op) {
  switch (op.kind) {
    case VpuKind::kComb:
      return 1;
    case VpuKind::kFpReduce:  // FpReducer#(lanes): one element per cycle, then its collect
      return TensorCoreConfig::kTileElems + 1;
    case VpuKind::kTransc:  // TranscUnit#(lanes): S steps per lane, then collect and done
      return TensorCoreConfig::kTileElems * op.transc_steps + 2;
  }
  return 1;  // unreachable: every VpuKind is handled above
}

}  // namespace tinytpu
