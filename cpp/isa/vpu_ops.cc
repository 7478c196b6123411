#include "isa/vpu_ops.h"

#include <cstdint>

#include "sim/fp32.h"
#include "sim/fp_reducer.h"
#include "sim/transc.h"

// The VPU opcode table (hardware.md §3, src/VPU.bsv). Each op is a per-lane (or per-row / per-column /
// per-tile) function lifted onto the 4x4 tile by one of the shape helpers below.

namespace tinytpu {
namespace {

using Lane1 = int32_t (*)(int32_t);
using Lane2 = int32_t (*)(int32_t, int32_t);
using Reduce4 = int32_t (*)(const Row&);  // one row or one column -> scalar

// ---- Shapes: lift a lane function or a 4-element reduction onto the tile ----

template <Lane1 F>
void unary(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = F(a[i]);
}

template <Lane2 F>
void binary(const Tile& a, const Tile& b, const Tile&, Tile& out) {
  for (int i = 0; i < kTileElems; ++i) out[i] = F(a[i], b[i]);
}

Row row_of(const Tile& t, int r) { return {t[4 * r], t[4 * r + 1], t[4 * r + 2], t[4 * r + 3]}; }
Row col_of(const Tile& t, int c) { return {t[c], t[4 + c], t[8 + c], t[12 + c]}; }

// "row": per sublane r, broadcast across its 4 lanes.
template <Reduce4 R>
void per_row(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int r = 0; r < kRows; ++r) {
    const int32_t v = R(row_of(a, r));
    for (int c = 0; c < kRows; ++c) out[4 * r + c] = v;
  }
}

// "col": per lane c over the 4 sublanes, copied into every row.
template <Reduce4 R>
void per_col(const Tile& a, const Tile&, const Tile&, Tile& out) {
  for (int c = 0; c < kRows; ++c) {
    const int32_t v = R(col_of(a, c));
    for (int r = 0; r < kRows; ++r) out[4 * r + c] = v;
  }
}

// Integer "tile": reduce each column, then the four column results (VPU.bsv tile_sum etc.).
template <Reduce4 R>
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

// Lane pairs (2p, 2p+1) of the row-major tile are the pairs within each row (4 lanes per row).
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

template <Lane2 F>
int32_t tree(const Row& v) {  // ((v0 . v1) . (v2 . v3)), the row float reducers' addFP/compareFP tree
  return F(F(v[0], v[1]), F(v[2], v[3]));
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

int32_t fcmplt(int32_t a, int32_t b) { return fp32::compare(uint32_t(a), uint32_t(b)) == fp32::Order::kLT; }
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
int32_t frecip(int32_t a_bits) {
  const uint32_t a = uint32_t(a_bits), two = 0x40000000u;
  uint32_t x = (a & fp32::kSignBit) | ((0x7F000000u - (a & ~fp32::kSignBit)) & ~fp32::kSignBit);
  for (int i = 0; i < 3; ++i) x = fp32::mul(x, fp32::add(two, fp32::mul(a, x) ^ fp32::kSignBit));
  return int32_t(x);
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
constexpr uint8_t steps(TranscOp op) { return uint8_t(transc_steps(op)); }

}  // namespace

const std::array<VpuOpInfo, kNumVpuOps> kVpuOps = {{
    {0, "ADD", 2, C, 0, binary<wrap_add>},
    {1, "MUL", 2, C, 0, binary<wrap_mul>},
    {2, "RELU", 1, C, 0, unary<relu>},
    {3, "MAX", 2, C, 0, binary<max_i>},
    {4, "SUM_REDUCE", 1, C, 0, per_row<fold_from<wrap_add, 0>>},
    {5, "CMPLT", 2, C, 0, binary<cmplt>},
    {6, "CMPNE", 2, C, 0, binary<cmpne>},
    {7, "SUB", 2, C, 0, binary<wrap_sub>},
    {8, "CMPEQ", 2, C, 0, binary<cmpeq>},
    {9, "MAX_REDUCE", 1, C, 0, per_row<fold_first<max_i>>},
    {10, "SHL", 2, C, 0, binary<shl>},
    {11, "SHR", 2, C, 0, binary<shr>},
    {12, "MIN", 2, C, 0, binary<min_i>},
    {13, "MIN_REDUCE", 1, C, 0, per_row<fold_first<min_i>>},
    {14, "DIV", 2, C, 0, binary<idiv>},
    {15, "AND", 2, C, 0, binary<and_>},
    {16, "OR", 2, C, 0, binary<or_>},
    {17, "XOR", 2, C, 0, binary<xor_>},
    {18, "FADD", 2, C, 0, binary<fadd>},
    {19, "FMUL", 2, C, 0, binary<fmul>},
    {20, "FSUB", 2, C, 0, binary<fbin<fp32::sub>>},
    {21, "FMAX", 2, C, 0, binary<fmax>},
    {22, "FCMPLT", 2, C, 0, binary<fcmplt>},
    {23, "FRECIP", 1, C, 0, unary<frecip>},
    {24, "I2F", 1, C, 0, unary<i2f>},
    {25, "F2I", 1, C, 0, unary<f2i>},
    {26, "NOT", 1, C, 0, unary<not_>},
    {27, "SELECT", 2, C, 0, select_prev},
    {28, "COPY", 1, C, 0, unary<copy>},
    {29, "SUM_REDUCE_COL", 1, C, 0, per_col<fold_from<wrap_add, 0>>},
    {30, "MAX_REDUCE_COL", 1, C, 0, per_col<fold_first<max_i>>},
    {31, "MIN_REDUCE_COL", 1, C, 0, per_col<fold_first<min_i>>},
    {32, "SUM_REDUCE_TILE", 1, C, 0, per_tile<fold_from<wrap_add, 0>>},
    {33, "MAX_REDUCE_TILE", 1, C, 0, per_tile<fold_first<max_i>>},
    {34, "MIN_REDUCE_TILE", 1, C, 0, per_tile<fold_first<min_i>>},
    {35, "MUL_REDUCE", 1, C, 0, per_row<fold_from<wrap_mul, 1>>},
    {36, "MUL_REDUCE_COL", 1, C, 0, per_col<fold_from<wrap_mul, 1>>},
    {37, "MUL_REDUCE_TILE", 1, C, 0, per_tile<fold_from<wrap_mul, 1>>},
    {38, "FSUM_REDUCE_TILE", 1, FR, 0, fp_tile<FpReduceOp::kSum>},
    {39, "FMAX_REDUCE_TILE", 1, FR, 0, fp_tile<FpReduceOp::kMax>},
    {40, "FMIN_REDUCE_TILE", 1, FR, 0, fp_tile<FpReduceOp::kMin>},
    {41, "FMIN", 2, C, 0, binary<fmin>},
    {42, "FSUM_REDUCE", 1, C, 0, per_row<tree<fadd>>},
    {43, "FMAX_REDUCE", 1, C, 0, per_row<tree<fmax>>},
    {44, "FMIN_REDUCE", 1, C, 0, per_row<tree<fmin>>},
    {45, "FSUM_REDUCE_COL", 1, C, 0, per_col<fold_from<fadd, 0>>},  // from +0.0
    {46, "FMAX_REDUCE_COL", 1, C, 0, per_col<fold_first<fmax>>},
    {47, "FMIN_REDUCE_COL", 1, C, 0, per_col<fold_first<fmin>>},
    {48, "FPROD_REDUCE_TILE", 1, FR, 0, fp_tile<FpReduceOp::kProd>},
    {49, "FPROD_REDUCE", 1, C, 0, per_row<fold_from<fmul, kFOne>>},
    {50, "FPROD_REDUCE_COL", 1, C, 0, per_col<fold_from<fmul, kFOne>>},
    {51, "EXP2", 1, TR, steps(TranscOp::kExp2), transc<TranscOp::kExp2>},
    {52, "LOG2", 1, TR, steps(TranscOp::kLog2), transc<TranscOp::kLog2>},
    {53, "SIN", 1, TR, steps(TranscOp::kSin), transc<TranscOp::kSin>},
    {54, "COS", 1, TR, steps(TranscOp::kCos), transc<TranscOp::kCos>},
    {55, "PACKED_I8_ADD", 2, C, 0, binary<bytes2<add8>>},
    {56, "PACKED_I8_SUB", 2, C, 0, binary<bytes2<sub8>>},
    {57, "PACKED_I8_MAX", 2, C, 0, binary<bytes2<max8>>},
    {58, "PACKED_I8_MIN", 2, C, 0, binary<bytes2<min8>>},
    {59, "PACKED_I8_NEG", 1, C, 0, unary<bytes1<neg8>>},
    {60, "PACKED_I8_RELU", 1, C, 0, unary<bytes1<relu8>>},
    {61, "PACKED_I8_CMPLT", 2, C, 0, binary<bytes2<cmplt8>>},
    {62, "PACKED_I8_CMPEQ", 2, C, 0, binary<bytes2<cmpeq8>>},
    {63, "PACKED_I8_MUL_LOW", 2, C, 0, binary<bytes2<mul_low8>>},
    {64, "PACKED_I8_MUL_HIGH", 2, C, 0, binary<bytes2<mul_high8>>},
    {65, "PACKED_I8_ABS", 1, C, 0, unary<bytes1<abs8>>},
    {66, "SIGN", 1, C, 0, unary<sign>},
    {67, "PACKED_I8_SIGN", 1, C, 0, unary<bytes1<sign8>>},
    {68, "FSIGN", 1, C, 0, unary<fsign>},
    {69, "ARGMIN", 1, C, 0, per_row<arg_extreme<false>>},
    {70, "ARGMAX", 1, C, 0, per_row<arg_extreme<true>>},
    {71, "CLZ", 1, C, 0, unary<clz>},
    {72, "POPCOUNT", 1, C, 0, unary<popcount>},
    {73, "CTZ", 1, C, 0, unary<ctz>},
    {74, "BYTE_REVERSE", 1, C, 0, unary<byte_reverse>},
    {75, "SAT_ADD_I32", 2, C, 0, binary<sat_add>},
    {76, "SAT_SUB_I32", 2, C, 0, binary<sat_sub>},
    {77, "ABS_DIFF_I32", 2, C, 0, binary<abs_diff>},
    {78, "PACKED_I8_ABS_DIFF", 2, C, 0, binary<bytes2<abs_diff8>>},
    {79, "FABS", 1, C, 0, unary<fabs_>},
    {80, "ROTL", 2, C, 0, binary<rotl>},
    {81, "ROTR", 2, C, 0, binary<rotr>},
    {82, "MIN_U32", 2, C, 0, binary<min_u>},
    {83, "MAX_U32", 2, C, 0, binary<max_u>},
    {84, "PAIR_ROTATE", 2, C, 0, pairwise<pair_rotate>},
    {85, "IPAIR_ROTATE", 2, C, 0, pairwise<ipair_rotate>},
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
    case VpuKind::kFpReduce:
      return 17;
    case VpuKind::kTransc:
      return 16 * op.transc_steps + 2;
  }
  return 1;  // unreachable: every VpuKind is handled above
}

}  // namespace tinytpu
