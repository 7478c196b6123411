#include "compiler/ir.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

namespace tinytpu::compiler {

namespace {

struct DTypeRow {
  DType d;
  const char* code;
  int bytes;
  bool is_float, is_signed;
};
constexpr DTypeRow kDTypes[] = {
    {DType::kVoid, "void", 0, false, false},  {DType::kBool, "bool", 1, false, false},
    {DType::kI8, "i8", 1, false, true},       {DType::kU8, "u8", 1, false, false},
    {DType::kI16, "i16", 2, false, true},     {DType::kU16, "u16", 2, false, false},
    {DType::kI32, "i32", 4, false, true},     {DType::kU32, "u32", 4, false, false},
    {DType::kF32, "f32", 4, true, true},      {DType::kIndex, "idx", 8, false, true},
    {DType::kWeakFloat, "wf", 4, true, true},
};
const DTypeRow& row(DType d) {
  for (const auto& r : kDTypes)
    if (r.d == d) return r;
  static const DTypeRow other{DType::kOther, "other", 0, false, false};
  return other;
}

constexpr const char* kOpNames[] = {"SINK",  "PARAM", "BUFFER",  "CONST", "CAST",  "BITCAST", "RANGE",
                                    "END",   "INDEX", "LOAD",    "STORE", "AFTER", "GROUP",   "IF",
                                    "ENDIF", "NOOP",  "BARRIER", "STACK", "ADD",   "SUB",     "MUL",
                                    "NEG",   "MAX",   "CMPLT",   "CMPNE", "CMPEQ", "WHERE",   "AND",
                                    "OR",    "XOR",   "SHL",     "SHR",   "CDIV",  "CMOD",    "RECIPROCAL",
                                    "TRUNC", "EXP2",  "LOG2",    "SIN",   "FDIV",  "MXU_DOT", "LANE_REDUCE"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == size_t(Op::kCount));

bool is_int(DType d) { return is_lane_int(d) || d == DType::kIndex; }

// Which (op, result dtype) pairs the lowering implements. Index arithmetic (kIndex) is folded at compile
// time and never reaches the TensorCore.
bool lowerable(const Node& n, bool fast_math) {
  DType d = n.dtype;
  bool value = is_int(d) || d == DType::kBool || d == DType::kF32;
  switch (n.op) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::NEG:
    case Op::MAX:
      return is_int(d) || d == DType::kF32;
    case Op::WHERE:
      return value;
    case Op::CMPLT:
    case Op::CMPNE:
    case Op::CMPEQ:
      return d == DType::kBool;
    case Op::AND:
    case Op::OR:
    case Op::XOR:
      return is_int(d) || d == DType::kBool;
    case Op::SHL:
    case Op::SHR:
      return is_int(d);
    case Op::CDIV:
    case Op::CMOD:
      return is_int(d);
    case Op::RECIPROCAL:
    case Op::TRUNC:
    case Op::FDIV:
      return d == DType::kF32;
    case Op::EXP2:
    case Op::LOG2:
    case Op::SIN:
      return d == DType::kF32 && fast_math;  // the TranscUnit: by default tinygrad decomposes EXP2/LOG2 and
                                             // the renderer rewrites SIN (sin32) before the IR
    case Op::MXU_DOT:
    case Op::LANE_REDUCE:
      return false;  // made by the compiler, never read from IR
    case Op::STACK:
      return n.src.empty();  // the empty shape of a scalar PARAM; vector STACKs never reach us
    case Op::CAST:
    case Op::BITCAST:
      return value || d == DType::kWeakFloat;
    default:
      return true;
  }
}

int min_sources(Op op) {
  switch (op) {
    case Op::WHERE:
      return 3;
    case Op::END:
    case Op::INDEX:
    case Op::STORE:
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::MAX:
    case Op::CMPLT:
    case Op::CMPNE:
    case Op::CMPEQ:
    case Op::AND:
    case Op::OR:
    case Op::XOR:
    case Op::SHL:
    case Op::SHR:
    case Op::CDIV:
    case Op::CMOD:
    case Op::FDIV:
      return 2;
    case Op::CAST:
    case Op::BITCAST:
    case Op::RANGE:
    case Op::LOAD:
    case Op::AFTER:
    case Op::IF:
    case Op::NEG:
    case Op::RECIPROCAL:
    case Op::TRUNC:
    case Op::EXP2:
    case Op::LOG2:
    case Op::SIN:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

int dtype_bytes(DType d) { return row(d).bytes; }
bool is_float(DType d) { return row(d).is_float; }
bool is_signed(DType d) { return row(d).is_signed; }
bool is_lane_int(DType d) {
  return d == DType::kI8 || d == DType::kU8 || d == DType::kI16 || d == DType::kU16 || d == DType::kI32 ||
         d == DType::kU32;
}
const char* dtype_name(DType d) { return row(d).code; }
const char* op_name(Op op) { return kOpNames[int(op)]; }

Kernel parse_kernel(std::string_view text) {
  Kernel k;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string op, dt;
    ls >> op;
    if (op == "KERNEL") {
      std::string flag;
      ls >> k.name >> flag;
      k.fast_math = flag == "fastmath";
      continue;
    }
    ls >> dt;
    Node n;
    auto it = std::find_if(std::begin(kOpNames), std::end(kOpNames), [&](const char* s) { return op == s; });
    if (it == std::end(kOpNames))
      throw Unsupported("TINYTPU cannot lower op " + op + " (dtype " + dt + ") in kernel " + k.name);
    n.op = Op(it - std::begin(kOpNames));
    n.dtype_text = dt;
    n.dtype = DType::kOther;
    for (const auto& r : kDTypes)
      if (dt == r.code) n.dtype = r.d;
    if (n.dtype == DType::kOther)
      throw Unsupported("TINYTPU has no lanes for dtype " + dt + " (op " + op + ") in kernel " + k.name);
    int nsrc = 0;
    ls >> nsrc;
    n.src.resize(nsrc);
    for (int& s : n.src) ls >> s;
    std::string a0, a1;
    if (n.op == Op::CONST) {
      ls >> a0;
      if (is_float(n.dtype)) {
        double v = std::strtod(a0.c_str(), nullptr);
        float f = float(v);
        std::memcpy(&n.fbits, &f, 4);
      } else {
        n.ivalue = std::stoll(a0);
      }
    } else if (n.op == Op::PARAM) {
      ls >> n.ivalue >> a1;
      n.global = a1 == "GLOBAL";
    } else if (n.op == Op::RANGE) {
      ls >> n.ivalue >> a1;
      n.reduce = a1 == "REDUCE";
    } else if (n.op == Op::BUFFER) {
      ls >> a0;
      if (a0 != "REG") throw Unsupported("TINYTPU has no " + a0 + " memory (kernel " + k.name + ")");
    }
    for (int src : n.src)
      if (src < 0 || src >= int(k.nodes.size()))
        throw std::invalid_argument("malformed kernel IR line " + std::to_string(lineno) + ": bad source " +
                                    std::to_string(src));
    if (int(n.src.size()) < min_sources(n.op))
      throw std::invalid_argument("malformed kernel IR line " + std::to_string(lineno) + ": " + op +
                                  " needs " + std::to_string(min_sources(n.op)) + " sources");
    if (!lowerable(n, k.fast_math))
      throw Unsupported(std::string("TINYTPU cannot lower ") + op + " on " + dt + " in kernel " + k.name);
    k.nodes.push_back(std::move(n));
  }
  return k;
}

}  // namespace tinytpu::compiler
