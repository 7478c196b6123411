#include "compiler/op_table.h"

#include <algorithm>
#include <array>

namespace tinytpu::compiler {

int64_t wrap(DType d, int64_t v) {
  switch (d) {
    case DType::kBool:
      return v != 0;
    case DType::kI8:
      return int8_t(v);
    case DType::kU8:
      return uint8_t(v);
    case DType::kI16:
      return int16_t(v);
    case DType::kU16:
      return uint16_t(v);
    case DType::kI32:
      return int32_t(v);
    case DType::kU32:
      return uint32_t(v);
    default:
      return v;
  }
}

namespace {

using V = VpuOpcode;
constexpr std::nullopt_t none = std::nullopt;

// Folds of index arithmetic (a, b, c are the sources' lane values).
int64_t fold_add(DType d, int64_t a, int64_t b, int64_t) { return wrap(d, a + b); }
int64_t fold_sub(DType d, int64_t a, int64_t b, int64_t) { return wrap(d, a - b); }
int64_t fold_mul(DType d, int64_t a, int64_t b, int64_t) {
  return wrap(d, int64_t(uint64_t(a) * uint64_t(b)));
}
int64_t fold_neg(DType d, int64_t a, int64_t, int64_t) { return wrap(d, -a); }
int64_t fold_max(DType, int64_t a, int64_t b, int64_t) { return std::max(a, b); }
int64_t fold_cmplt(DType, int64_t a, int64_t b, int64_t) { return a < b; }
int64_t fold_cmpne(DType, int64_t a, int64_t b, int64_t) { return a != b; }
int64_t fold_cmpeq(DType, int64_t a, int64_t b, int64_t) { return a == b; }
int64_t fold_where(DType, int64_t a, int64_t b, int64_t c) { return a ? b : c; }
int64_t fold_and(DType, int64_t a, int64_t b, int64_t) { return a & b; }
int64_t fold_or(DType, int64_t a, int64_t b, int64_t) { return a | b; }
int64_t fold_xor(DType d, int64_t a, int64_t b, int64_t) { return wrap(d, a ^ b); }
int64_t fold_shl(DType d, int64_t a, int64_t b, int64_t) { return wrap(d, int64_t(uint64_t(a) << (b & 63))); }
int64_t fold_shr(DType, int64_t a, int64_t b, int64_t) { return a >> (b & 63); }
// Index arithmetic mostly divides small numbers: a 32-bit division then (the same truncated result) is
// several times faster than a 64-bit one.
bool both_fit_32(int64_t a, int64_t b) { return a == int32_t(a) && b > 0 && b == int32_t(b); }
int64_t fold_cdiv(DType, int64_t a, int64_t b, int64_t) {
  return b == 0 ? 0 : both_fit_32(a, b) ? int32_t(a) / int32_t(b) : a / b;
}
int64_t fold_cmod(DType, int64_t a, int64_t b, int64_t) {
  return b == 0 ? 0 : both_fit_32(a, b) ? int32_t(a) % int32_t(b) : a % b;
}

// A reduction's padding lanes hold its identity, as lane bits (narrow integers live sign- or
// zero-extended).
uint32_t sum_identity(DType d) {
  return d == DType::kF32 ? 0x80000000u : 0;
}  // -0.0: x + -0.0 is x, even -0.0
uint32_t product_identity(DType) { return 1; }
uint32_t max_identity(DType d) {  // the dtype's least value
  switch (d) {
    case DType::kI8:
      return uint32_t(-128);
    case DType::kI16:
      return uint32_t(-32768);
    case DType::kI32:
      return 0x80000000u;
    case DType::kF32:
      return 0xFF800000u;  // -inf: max(acc, -inf) is acc, and max(-inf, x) is x but for a NaN x
    default:
      return 0;
  }
}

constexpr ReduceOps kSumInt{V::kSumReduceTile, V::kSumReduce, V::kSumReduceCol};
constexpr ReduceOps kSumF32{V::kFsumReduceTile, V::kFsumReduce, V::kFsumReduceCol};
constexpr ReduceOps kProductInt{V::kMulReduceTile, V::kMulReduce, V::kMulReduceCol};
constexpr ReduceOps kMaxInt{V::kMaxReduceTile, V::kMaxReduce, V::kMaxReduceCol};
constexpr ReduceOps kMaxF32{V::kFmaxReduceTile, V::kFmaxReduce, V::kFmaxReduceCol};

// Control and memory ops: no value lowering of their own.
constexpr OpInfo plain(Op op, const char* name, int sources, Accepts accepts = Accepts::kAny) {
  return {op,    name,    sources, accepts, Fold{}, none,  none,   false,
          false, nullptr, true,    none,    none,   false, nullptr};
}
// An op computed per lane: its fold and its one instruction, if any.
using LaneFold = int64_t (*)(DType, int64_t, int64_t, int64_t);
template <LaneFold F, DType D>
void lanes_of(const int64_t* a, const int64_t* b, const int64_t* c, int64_t* out) {
  for (int l = 0; l < kTileElems; ++l) out[l] = F(D, a[l], b[l], c[l]);
}
// The dtype fixed per loop for the common index and 32-bit ones, so that wrap() is one cast, not a switch per
// lane.
template <LaneFold F>
void over_lanes(DType d, const int64_t* a, const int64_t* b, const int64_t* c, int64_t* out) {
  switch (d) {
    case DType::kIndex:
      return lanes_of<F, DType::kIndex>(a, b, c, out);
    case DType::kI32:
      return lanes_of<F, DType::kI32>(a, b, c, out);
    case DType::kU32:
      return lanes_of<F, DType::kU32>(a, b, c, out);
    case DType::kBool:
      return lanes_of<F, DType::kBool>(a, b, c, out);
    default:
      for (int l = 0; l < kTileElems; ++l) out[l] = F(d, a[l], b[l], c[l]);
  }
}
template <LaneFold F>
constexpr Fold folds{F, over_lanes<F>};

constexpr OpInfo alu(Op op, const char* name, int sources, Accepts accepts, Fold fold,
                     std::optional<VpuOpcode> int_op = none, std::optional<VpuOpcode> f32_op = none,
                     bool mxu_epilogue = false) {
  return {op,      name, sources, accepts, fold,  int_op, f32_op, mxu_epilogue, accepts != Accepts::kNever,
          nullptr, true, none,    none,    false, nullptr};
}
// An op whose lowering is a function of lowerings.h; `wraps`: whether a narrow integer result is wrapped
// after it.
constexpr OpInfo lowered(OpInfo row, Lowering lower, bool wraps = true) {
  row.lower = lower;
  row.wraps = wraps;
  return row;
}
// A per-lane op that reductions use too.
constexpr OpInfo reducing(OpInfo row, std::optional<ReduceOps> int_reduce,
                          std::optional<ReduceOps> f32_reduce, bool signed_reduce,
                          uint32_t (*identity)(DType)) {
  row.int_reduce = int_reduce;
  row.f32_reduce = f32_reduce;
  row.signed_reduce = signed_reduce;
  row.identity = identity;
  return row;
}

using A = Accepts;
constexpr std::array<OpInfo, size_t(Op::kCount)> kOps = {{
    plain(Op::SINK, "SINK", 0),
    plain(Op::PARAM, "PARAM", 0, A::kParam),
    plain(Op::BUFFER, "BUFFER", 0),
    plain(Op::CONST, "CONST", 0),
    // a narrowing cast wraps as it copies (lowering::cast)
    lowered(plain(Op::CAST, "CAST", 1, A::kCast), lowering::cast, false),
    lowered(plain(Op::BITCAST, "BITCAST", 1, A::kCast), lowering::bitcast),
    plain(Op::RANGE, "RANGE", 1),
    plain(Op::END, "END", 2),
    plain(Op::INDEX, "INDEX", 2),
    plain(Op::LOAD, "LOAD", 1),
    plain(Op::STORE, "STORE", 2),
    plain(Op::AFTER, "AFTER", 1),
    plain(Op::GROUP, "GROUP", 0),
    plain(Op::IF, "IF", 1),
    plain(Op::ENDIF, "ENDIF", 1),
    plain(Op::NOOP, "NOOP", 0),
    plain(Op::BARRIER, "BARRIER", 0),
    plain(Op::STACK, "STACK", 0, A::kStack),
    reducing(alu(Op::ADD, "ADD", 2, A::kIntOrF32, folds<fold_add>, V::kAdd, V::kFadd, true), kSumInt, kSumF32,
             false, sum_identity),
    alu(Op::SUB, "SUB", 2, A::kIntOrF32, folds<fold_sub>, V::kSub, V::kFsub, true),
    reducing(alu(Op::MUL, "MUL", 2, A::kIntOrF32, folds<fold_mul>, V::kMul, V::kFmul, true), kProductInt,
             none, false, product_identity),
    lowered(alu(Op::NEG, "NEG", 1, A::kIntOrF32, folds<fold_neg>), lowering::neg),
    // int: MAX compares signed lanes (uint32 takes MAX_U32, and is not reduced); float: tinygrad's NaN rule
    reducing(
        lowered(alu(Op::MAX, "MAX", 2, A::kIntOrF32, folds<fold_max>, V::kMax, none, true), lowering::max),
        kMaxInt, kMaxF32, true, max_identity),
    lowered(alu(Op::CMPLT, "CMPLT", 2, A::kBool, folds<fold_cmplt>, V::kCmplt, V::kFcmplt), lowering::cmplt,
            false),
    lowered(alu(Op::CMPNE, "CMPNE", 2, A::kBool, folds<fold_cmpne>, V::kCmpne), lowering::equality, false),
    lowered(alu(Op::CMPEQ, "CMPEQ", 2, A::kBool, folds<fold_cmpeq>, V::kCmpeq), lowering::equality, false),
    lowered(alu(Op::WHERE, "WHERE", 3, A::kValue, folds<fold_where>), lowering::where),
    alu(Op::AND, "AND", 2, A::kIntOrBool, folds<fold_and>, V::kAnd),
    alu(Op::OR, "OR", 2, A::kIntOrBool, folds<fold_or>, V::kOr),
    alu(Op::XOR, "XOR", 2, A::kIntOrBool, folds<fold_xor>, V::kXor),
    alu(Op::SHL, "SHL", 2, A::kInt, folds<fold_shl>, V::kShl),
    // logical; signed lanes: an arithmetic shift (lowering::shr)
    lowered(alu(Op::SHR, "SHR", 2, A::kInt, folds<fold_shr>, V::kShr), lowering::shr),
    lowered(alu(Op::CDIV, "CDIV", 2, A::kInt, folds<fold_cdiv>, V::kDiv), lowering::cdiv),
    lowered(alu(Op::CMOD, "CMOD", 2, A::kInt, folds<fold_cmod>), lowering::cmod),
    lowered(alu(Op::RECIPROCAL, "RECIPROCAL", 1, A::kF32, Fold{}), lowering::reciprocal),
    lowered(alu(Op::SQRT, "SQRT", 1, A::kF32, Fold{}), lowering::sqrt),
    lowered(alu(Op::TRUNC, "TRUNC", 1, A::kF32, Fold{}), lowering::trunc),
    // the TranscUnit's instruction in fast math only; else tinygrad's decomposition
    lowered(alu(Op::EXP2, "EXP2", 1, A::kF32, Fold{}, none, V::kExp2), lowering::exp2),
    lowered(alu(Op::LOG2, "LOG2", 1, A::kF32, Fold{}, none, V::kLog2), lowering::log2),
    alu(Op::SIN, "SIN", 1, A::kF32FastMath, Fold{}, none, V::kSin),
    lowered(alu(Op::FDIV, "FDIV", 2, A::kF32, Fold{}), lowering::fdiv),
    lowered(alu(Op::DIV_SCALE, "DIV_SCALE", 1, A::kNever, Fold{}), lowering::div_scale),
    lowered(alu(Op::DIV_EXACT, "DIV_EXACT", 3, A::kNever, Fold{}), lowering::div_exact),
    lowered(plain(Op::MXU_DOT, "MXU_DOT", 0, A::kNever), lowering::mxu_dot),
    lowered(plain(Op::LANE_REDUCE, "LANE_REDUCE", 0, A::kNever), lowering::lane_reduce),
    // a broadcast copies lanes already wrapped
    lowered(plain(Op::LANE_BROADCAST, "LANE_BROADCAST", 0, A::kNever), lowering::lane_broadcast, false),
    // signed lanes only: a clamp's upper bound (compiler/clamps.h)
    alu(Op::MIN, "MIN", 2, A::kNever, Fold{}, V::kMin, none, true),
}};
static_assert(
    [] {
      for (size_t i = 0; i < kOps.size(); ++i)
        if (kOps[i].op != Op(i)) return false;
      return true;
    }(),
    "kOps lists every Op in enum order");

bool is_int(DType d) { return is_lane_int(d) || d == DType::kIndex; }

}  // namespace

const OpInfo& op_info(Op op) { return kOps.at(size_t(op)); }

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

std::vector<std::string> lowered_ops() {
  std::vector<std::string> names;
  for (const OpInfo& o : kOps)
    if (o.alu) names.push_back(o.name);
  return names;
}

bool accepts(const OpInfo& info, const Node& n, bool fast_math) {
  DType d = n.dtype;
  bool value = is_int(d) || d == DType::kBool || d == DType::kF32;
  switch (info.accepts) {
    case Accepts::kAny:
      return true;
    case Accepts::kNever:
      return false;
    case Accepts::kInt:
      return is_int(d);
    case Accepts::kIntOrBool:
      return is_int(d) || d == DType::kBool;
    case Accepts::kIntOrF32:
      return is_int(d) || d == DType::kF32;
    case Accepts::kF32:
      return d == DType::kF32;
    case Accepts::kF32FastMath:
      return d == DType::kF32 && fast_math;
    case Accepts::kBool:
      return d == DType::kBool;
    case Accepts::kValue:
      return value;
    case Accepts::kCast:
      return value || d == DType::kWeakFloat;
    case Accepts::kParam:  // a buffer's elements fill 32-bit lanes; scalar variables are index values
      return !n.global || (value && d != DType::kIndex);
    case Accepts::kStack:  // vector STACKs never reach the compiler
      return n.src.empty();
  }
  return false;
}

}  // namespace tinytpu::compiler
