#include "compiler/ir.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "compiler/op_table.h"

namespace tinytpu::compiler {

namespace {

struct DTypeRow {
  DType d;
  const char* code;
  int bytes;
  bool is_signed;
};
// Indexed by DType: the LANES rows, which make the enum in the same order.
constexpr DTypeRow kDTypes[] = {
#define LANES(name, code, tinygrad, bytes, is_float, is_signed, storage) \
  {DType::name, code, bytes, is_signed},
#include "compiler/dtypes.def"
};
const DTypeRow& row(DType d) {
  static const DTypeRow other{DType::kOther, "other", 0, false};
  return d < DType::kOther ? kDTypes[int(d)] : other;
}

// One IR line's whitespace-separated words; a missing or malformed one is std::invalid_argument naming
// the line. Words after the ones an op reads are ignored.
struct Line {
  std::string_view rest;
  int number;

  std::string_view word() {
    size_t b = rest.find_first_not_of(" \t\r\f\v");
    if (b == std::string_view::npos) return rest = {};
    size_t e = std::min(rest.find_first_of(" \t\r\f\v", b), rest.size());
    std::string_view w = rest.substr(b, e - b);
    rest.remove_prefix(e);
    return w;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("malformed kernel IR line " + std::to_string(number) + ": " + what);
  }
  // A decimal integer in [lo, hi]; no silent wrap of values outside it.
  int64_t integer(const char* what, int64_t lo, int64_t hi) {
    std::string_view w = word();
    int64_t v = 0;
    auto [end, err] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (w.empty() || err != std::errc() || end != w.data() + w.size() || v < lo || v > hi)
      fail(std::string(what) + " '" + std::string(w) + "' is not an integer in " + std::to_string(lo) + ".." +
           std::to_string(hi));
    return v;
  }
  // Python's float.hex() (or any strtod spelling), rounded to float32 as the renderer's values are.
  float float32(const char* what) {
    std::string w(word());
    char* end = nullptr;
    double v = std::strtod(w.c_str(), &end);
    if (w.empty() || *end) fail(std::string(what) + " '" + w + "' is not a number");
    return float(v);
  }
};

}  // namespace

int dtype_bytes(DType d) { return row(d).bytes; }
bool is_signed(DType d) { return row(d).is_signed; }
bool is_lane_int(DType d) {
  return d == DType::kI8 || d == DType::kU8 || d == DType::kI16 || d == DType::kU16 || d == DType::kI32 ||
         d == DType::kU32;
}
const char* dtype_name(DType d) { return row(d).code; }
const char* op_name(Op op) { return op_info(op).name; }

namespace {

// One node's line after its op: its dtype, sources and the op's words, checked against what the lowering
// handles. An int64 CAST is taken as int32 and recorded in `index_casts`, for check_index_casts.
Node parse_node(Line& ln, std::string_view op, const Kernel& k, std::vector<int>& index_casts) {
  std::string_view dt = ln.word();
  if (dt.empty()) ln.fail("no dtype");
  Node n;
  const OpInfo* info = find_op(op);
  if (!info)
    throw Unsupported("TINYTPU cannot lower op " + std::string(op) + " (dtype " + std::string(dt) +
                      ") in kernel " + k.name);
  n.op = info->op;
  n.dtype_text = std::string(dt);
  n.dtype = DType::kOther;
  for (const auto& r : kDTypes)
    if (dt == r.code) n.dtype = r.d;
  if (n.dtype == DType::kOther && dt == "i64" && op == "CAST") {
    n.dtype = DType::kI32;  // an element index, if its uses say so (checked below)
    index_casts.push_back(int(k.nodes.size()));
  }
  if (n.dtype == DType::kOther)
    throw Unsupported("TINYTPU has no lanes for dtype " + n.dtype_text + " (op " + std::string(op) +
                      ") in kernel " + k.name);
  int64_t nsrc = ln.integer("source count", 0, INT32_MAX);
  for (int64_t i = 0; i < nsrc; ++i)
    n.src.push_back(int(ln.integer("source", 0, int64_t(k.nodes.size()) - 1)));
  if (int(n.src.size()) < info->sources)
    ln.fail(std::string(op) + " needs " + std::to_string(info->sources) + " sources");
  if (n.op == Op::CONST) {
    if (is_float(n.dtype)) {
      float f = ln.float32("float constant");
      std::memcpy(&n.fbits, &f, 4);
    } else {
      n.ivalue = ln.integer("integer constant", INT64_MIN, INT64_MAX);
    }
  } else if (n.op == Op::PARAM) {
    n.ivalue = ln.integer("parameter slot", 0, INT32_MAX);
    n.global = ln.word() == "GLOBAL";
  } else if (n.op == Op::RANGE) {
    n.ivalue = ln.integer("range axis", 0, INT32_MAX);
    n.reduce = ln.word() == "REDUCE";
  } else if (n.op == Op::ADD || n.op == Op::MUL) {
    std::string_view mark = ln.word();
    if (!mark.empty() && mark != "reduce")
      ln.fail(std::string(op) + " takes no word but 'reduce', not '" + std::string(mark) + "'");
    n.reassociable = !mark.empty();
  } else if (n.op == Op::BUFFER) {
    std::string_view space = ln.word();
    if (space != "REG")
      throw Unsupported("TINYTPU has no " + std::string(space) + " memory (kernel " + k.name + ")");
  }
  if (!accepts(*info, n, k.fast_math))
    throw Unsupported("TINYTPU cannot lower " + std::string(op) + " on " + n.dtype_text + " in kernel " +
                      k.name);
  return n;
}

// Blocks must be well formed before any pass walks them: each END closes an open RANGE (its second source),
// each ENDIF the innermost open IF (its source), and nothing is left open.
struct OpenBlocks {
  std::vector<int> ranges, ifs;

  void add(const Node& n, int self, const Line& ln) {
    if (n.op == Op::RANGE) ranges.push_back(self);
    if (n.op == Op::IF) ifs.push_back(self);
    if (n.op == Op::END) {
      auto r = std::find(ranges.begin(), ranges.end(), n.src[1]);
      if (r == ranges.end()) ln.fail("END of node " + std::to_string(n.src[1]) + ", not an open RANGE");
      ranges.erase(r);
    }
    if (n.op == Op::ENDIF) {
      if (ifs.empty() || ifs.back() != n.src[0])
        ln.fail("ENDIF of node " + std::to_string(n.src[0]) + ", not the innermost open IF");
      ifs.pop_back();
    }
  }
  void check_closed() const {
    if (ranges.empty() && ifs.empty()) return;
    const bool range = !ranges.empty();
    throw std::invalid_argument(std::string("malformed kernel IR: ") + (range ? "RANGE" : "IF") + " node " +
                                std::to_string(range ? ranges.front() : ifs.front()) + " is never closed");
  }
};

// tinygrad casts a gather's data-dependent element index to int64 for INDEX. Lanes hold 32-bit indices
// (a larger one is outside any buffer either way), so such a CAST of a 32-bit integer is taken as int32;
// int64 anywhere else has no lanes.
void check_index_casts(const Kernel& k, const std::vector<int>& index_casts) {
  std::vector<bool> index_cast(k.nodes.size(), false);
  for (int c : index_casts) {
    if (k.nodes[c].src.size() != 1)
      throw std::invalid_argument("malformed kernel IR: CAST node " + std::to_string(c) + " has " +
                                  std::to_string(k.nodes[c].src.size()) + " sources");
    const Node& from = k.nodes[k.nodes[c].src[0]];
    if (!is_lane_int(from.dtype) && from.dtype != DType::kIndex)
      throw Unsupported("TINYTPU has no lanes for dtype i64 (a CAST from " + from.dtype_text +
                        ") in kernel " + k.name);
    index_cast[c] = true;
  }
  for (const Node& n : k.nodes)
    for (size_t s = 0; s < n.src.size(); ++s)
      if (index_cast[n.src[s]] && !(n.op == Op::INDEX && s == 1))
        throw Unsupported("TINYTPU has no lanes for dtype i64 (op CAST, used by " +
                          std::string(op_name(n.op)) + ") in kernel " + k.name);
}

}  // namespace

bool reads_bfloat16_storage(const Kernel& k) {
  auto any = [&](auto&& f) { return std::any_of(k.nodes.begin(), k.nodes.end(), f); };
  return any([](const Node& n) { return n.op == Op::PARAM && n.global && n.dtype == DType::kU16; }) &&
         any([](const Node& n) { return n.op == Op::MUL && n.dtype == DType::kF32; });
}

Kernel parse_kernel(std::string_view text) {
  Kernel k;
  int lineno = 0;
  OpenBlocks open;
  std::vector<int> index_casts;
  for (size_t start = 0; start < text.size();) {
    size_t nl = std::min(text.find('\n', start), text.size());
    Line ln{text.substr(start, nl - start), ++lineno};
    start = nl + 1;
    std::string_view op = ln.word();
    if (op.empty()) continue;
    if (op == "KERNEL") {
      k.name = std::string(ln.word());
      for (std::string_view flag = ln.word(); !flag.empty(); flag = ln.word())
        if (flag == "fastmath")
          k.fast_math = true;
        else if (flag == "dots=mxu")
          k.dots_on_mxu = true;
        else
          ln.fail("unknown kernel flag '" + std::string(flag) + "' (fastmath, dots=mxu)");
      continue;
    }
    Node n = parse_node(ln, op, k, index_casts);
    open.add(n, int(k.nodes.size()), ln);
    k.nodes.push_back(std::move(n));
  }
  open.check_closed();
  check_index_casts(k, index_casts);
  return k;
}

}  // namespace tinytpu::compiler
