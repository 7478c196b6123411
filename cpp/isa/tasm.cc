#include "isa/tasm.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "base/config.h"
#include "base/errors.h"
#include "isa/sxu_ops.h"
#include "isa/vpu_ops.h"

namespace tinytpu {

namespace {

// ---- tokens -------------------------------------------------------------------------------------

bool is_word_char(char c) { return std::isalnum(uint8_t(c)) || c == '_' || c == '-' || c == '+'; }

// Splits TASM text into words ("LOAD", "v3", "-12") and the punctuation [ ] , = ( ).
std::vector<std::string> tokenize(std::string_view s, int line) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (std::isspace(uint8_t(c))) {
      ++i;
    } else if (std::string_view("[],=()").find(c) != std::string_view::npos) {
      out.emplace_back(1, c);
      ++i;
    } else if (is_word_char(c)) {
      size_t j = i;
      while (j < s.size() && is_word_char(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    } else {
      throw AsmError("line " + std::to_string(line) + ": unexpected character '" + std::string(1, c) + "'");
    }
  }
  return out;
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// A decimal integer. Magnitudes past 2^40 saturate there: outside every range a caller checks, so a
// huge value is reported as out of range instead of wrapping into it.
std::optional<int64_t> parse_int(std::string_view s) {
  constexpr int64_t kSaturated = int64_t(1) << 40;
  if (s.empty()) return std::nullopt;
  size_t i = s[0] == '-' || s[0] == '+';
  if (i == s.size()) return std::nullopt;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(uint8_t(s[i]))) return std::nullopt;
    v = std::min(v * 10 + (s[i] - '0'), kSaturated);
  }
  return s[0] == '-' ? -v : v;
}

// ---- templates ----------------------------------------------------------------------------------

struct Codec {
  const char* name;
  int64_t lo, hi;
  const char* what;
};
const Codec kCodecs[] = {
    {"vreg", 0, 15, "vreg"},
    {"addr", 0, TensorCoreConfig::kMaxDepth - 1, "address"},
    {"row", 0, TensorCoreConfig::kRows - 1, "row or column"},
    {"u5", 0, 31, "shift"},
    {"psum", 0, 7, "PSUM bucket"},
    {"tiles", 0, 31, "tile count"},
    {"k", 0, TensorCoreConfig::kRows, "k"},          // the OS activation buffer holds one vector per row
    {"group", 0, TensorCoreConfig::kRows, "group"},  // a float dispatch's run of products: at most its k
    {"count", 1, 255, "loop count"},
    {"i8", -128, 127, "int8 immediate"},
    {"i32", INT32_MIN, INT32_MAX, "int32 immediate"},
    {"vpuop", 0, kNumVpuOps - 1, "VPU op"},
};

struct Slot {  // where an operand lives in the instruction
  uint8_t Instr::*field;
  int lo = 0, width = 8;
};

struct Node {
  enum Kind { kText, kOperand, kGroup } kind = kText;
  std::string text;  // kText: literal source; kOperand: source of the placeholder
  // kOperand
  const Codec* codec = nullptr;
  std::vector<Slot> slots;  // several: same value in each, or (concat) bytes most significant first
  bool concat = false;
  // kGroup
  enum Cond { kNonzero, kBinary, kMask } cond = kNonzero;
  Slot cond_slot;
  int mask = 0, value = 0;
  std::vector<Node> children;
};

uint8_t Instr::*field_by_name(std::string_view name) {
  for (const auto& f : kFields)
    if (name == f.name) return f.member;
  throw std::logic_error("bad field in TASM template: " + std::string(name));
}

Slot parse_slot(std::string_view s) {
  Slot slot;
  size_t br = s.find('[');
  slot.field = field_by_name(s.substr(0, br));
  if (br != std::string_view::npos) {  // f[hi:lo]
    int hi = std::stoi(std::string(s.substr(br + 1)));
    slot.lo = std::stoi(std::string(s.substr(s.find(':', br) + 1)));
    slot.width = hi - slot.lo + 1;
  }
  return slot;
}

std::vector<Node> parse_template(std::string_view t, size_t& i, bool in_group) {
  std::vector<Node> nodes;
  std::string text;
  auto flush = [&] {
    if (text.empty()) return;
    Node n;
    n.text = text;
    nodes.push_back(std::move(n));
    text.clear();
  };
  while (i < t.size()) {
    char c = t[i];
    if (c == '>' && in_group) {
      ++i;
      break;
    }
    if (c == '{') {
      flush();
      size_t end = t.find('}', i);
      std::string_view body = t.substr(i + 1, end - i - 1);
      size_t colon = body.rfind(':');
      Node n;
      n.kind = Node::kOperand;
      n.text = std::string(body);
      for (const auto& codec : kCodecs)
        if (body.substr(colon + 1) == codec.name) n.codec = &codec;
      std::string_view fields = body.substr(0, colon);
      n.concat = fields.find('.') != std::string_view::npos;
      char sep = n.concat ? '.' : '+';
      for (size_t p = 0; p <= fields.size();) {
        size_t q = fields.find(sep, p);
        if (q == std::string_view::npos) q = fields.size();
        n.slots.push_back(parse_slot(fields.substr(p, q - p)));
        p = q + 1;
      }
      nodes.push_back(std::move(n));
      i = end + 1;
    } else if (c == '<') {
      flush();
      size_t bar = t.find('|', i);
      std::string_view cond = t.substr(i + 1, bar - i - 1);
      Node g;
      g.kind = Node::kGroup;
      if (cond == "binary") {
        g.cond = Node::kBinary;
      } else if (!cond.empty()) {
        g.cond = Node::kMask;
        size_t amp = cond.find('&'), eq = cond.find('=');
        g.cond_slot.field = field_by_name(cond.substr(0, amp));
        g.mask = std::stoi(std::string(cond.substr(amp + 1, eq - amp - 1)));
        g.value = std::stoi(std::string(cond.substr(eq + 1)));
      }
      i = bar + 1;
      g.children = parse_template(t, i, true);
      nodes.push_back(std::move(g));
    } else {
      text += c;
      ++i;
    }
  }
  flush();
  return nodes;
}

struct Template {
  int opcode;
  const char* source;
  std::vector<Node> nodes;
};

// Templates grouped by their first word, in table order (canonical form first).
const std::map<std::string, std::vector<Template>>& templates() {
  static const auto* table = [] {
    auto* m = new std::map<std::string, std::vector<Template>>;
    for (const auto& op : kSxuOps)
      for (const char* t : op.tasm) {
        if (!t) continue;
        size_t i = 0;
        Template tpl{op.opcode, t, parse_template(t, i, false)};
        std::string first = tokenize(tpl.nodes.front().text, 0).front();
        for (auto& ch : first) ch = char(std::toupper(uint8_t(ch)));
        (*m)[first].push_back(std::move(tpl));
      }
    return m;
  }();
  return *table;
}

// ---- operand values -----------------------------------------------------------------------------

int64_t read_operand(const Node& n, const Instr& in) {
  if (n.concat) {
    uint32_t v = 0;
    for (const Slot& s : n.slots) v = v << 8 | in.*(s.field);
    return int32_t(v);
  }
  const Slot& s = n.slots.front();
  int64_t v = (in.*(s.field) >> s.lo) & ((1 << s.width) - 1);
  return n.codec->lo < 0 && n.codec->hi < 128 ? int64_t(int8_t(v)) : v;  // i8 is a signed byte
}

void write_operand(const Node& n, Instr& in, int64_t v) {
  if (n.concat) {
    int shift = 8 * int(n.slots.size() - 1);
    for (const Slot& s : n.slots) in.*(s.field) = uint8_t(uint32_t(v) >> shift), shift -= 8;
    return;
  }
  for (const Slot& s : n.slots) {
    uint8_t bits = uint8_t((uint64_t(v) & ((1u << s.width) - 1)) << s.lo);
    in.*(s.field) = uint8_t((in.*(s.field) & ~(((1u << s.width) - 1) << s.lo)) | bits);
  }
}

std::string render_operand(const Node& n, int64_t v) {
  if (std::string_view(n.codec->name) == "vreg") return "v" + std::to_string(v);
  if (std::string_view(n.codec->name) == "vpuop") return kVpuOps[v].name;
  return std::to_string(v);
}

struct ParseError {
  std::string message;
};

// Parses one operand token; a syntax mismatch returns nullopt, an out-of-range value throws.
std::optional<int64_t> decode_operand(const Node& n, const std::string& tok) {
  int64_t v;
  std::string_view codec = n.codec->name;
  if (codec == "vreg") {
    if (tok.size() < 2 || (tok[0] != 'v' && tok[0] != 'V')) return std::nullopt;
    auto num = parse_int(std::string_view(tok).substr(1));
    if (!num) return std::nullopt;
    v = *num;
  } else if (codec == "vpuop") {
    const VpuOpInfo* op = find_vpu_op(tok);
    if (!op) throw ParseError{"unknown VPU op '" + tok + "'"};
    v = op->opcode;
  } else {
    auto num = parse_int(tok);
    if (!num) return std::nullopt;
    v = *num;
  }
  if (v < n.codec->lo || v > n.codec->hi)
    throw ParseError{std::string(n.codec->what) + " " + tok + " out of range (" +
                     std::to_string(n.codec->lo) + ".." + std::to_string(n.codec->hi) + ")"};
  return v;
}

// ---- matching -----------------------------------------------------------------------------------

bool match(const std::vector<Node>& nodes, const std::vector<std::string>& toks, size_t& pos, Instr& in) {
  for (const Node& n : nodes) {
    switch (n.kind) {
      case Node::kText:
        for (const auto& lit : tokenize(n.text, 0))
          if (pos >= toks.size() || !iequal(toks[pos++], lit)) return false;
        break;
      case Node::kOperand: {
        if (pos >= toks.size()) return false;
        auto v = decode_operand(n, toks[pos++]);
        if (!v) return false;
        write_operand(n, in, *v);
        break;
      }
      case Node::kGroup: {
        size_t save = pos;
        Instr trial = in;
        if (match(n.children, toks, pos, trial)) {
          if (n.cond == Node::kMask) trial.*(n.cond_slot.field) |= uint8_t(n.value);
          in = trial;
        } else {
          pos = save;
        }
        break;
      }
    }
  }
  return true;
}

bool any_operand_nonzero(const std::vector<Node>& nodes, const Instr& in) {
  for (const Node& n : nodes)
    if ((n.kind == Node::kOperand && read_operand(n, in) != 0) ||
        (n.kind == Node::kGroup && any_operand_nonzero(n.children, in)))
      return true;
  return false;
}

bool group_present(const Node& g, const Instr& in) {
  switch (g.cond) {
    case Node::kMask:
      return (in.*(g.cond_slot.field) & g.mask) == g.value;
    case Node::kBinary:
      return in.vpuOp >= kNumVpuOps || kVpuOps[in.vpuOp].arity == 2 || in.vregSrc2 != 0;
    case Node::kNonzero:
      return any_operand_nonzero(g.children, in);
  }
  return false;
}

// Renders the instruction with a template; nullopt when an operand value has no spelling.
std::optional<std::string> render(const std::vector<Node>& nodes, const Instr& in) {
  std::string out;
  for (const Node& n : nodes) {
    if (n.kind == Node::kText) {
      out += n.text;
    } else if (n.kind == Node::kOperand) {
      int64_t v = read_operand(n, in);
      if (v < n.codec->lo || v > n.codec->hi) return std::nullopt;
      out += render_operand(n, v);
    } else if (group_present(n, in)) {
      auto inner = render(n.children, in);
      if (!inner) return std::nullopt;
      out += *inner;
    }
  }
  return out;
}

// Range checks of the fields the canonical template reads (groups that are present only).
void check_operands(const std::vector<Node>& nodes, const Instr& in, const char* name) {
  for (const Node& n : nodes) {
    if (n.kind == Node::kOperand) {
      int64_t v = read_operand(n, in);
      if (v < n.codec->lo || v > n.codec->hi)
        throw AsmError(std::string(name) + ": " + n.codec->what + " " + std::to_string(v) +
                       " out of range (" + std::to_string(n.codec->lo) + ".." + std::to_string(n.codec->hi) +
                       ")");
    } else if (n.kind == Node::kGroup && group_present(n, in)) {
      check_operands(n.children, in, name);
    }
  }
}

std::string raw_instr(const Instr& in) {
  std::string s = "INSTR";
  for (const auto& f : kFields) s += " " + std::to_string(in.*(f.member));
  return s;
}

const Template& canonical(int opcode) {
  for (const auto& [word, list] : templates())
    for (const auto& t : list)
      if (t.opcode == opcode) return t;
  throw std::logic_error("opcode without template");
}

// ---- directives ---------------------------------------------------------------------------------

std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(uint8_t(c)));
  return s;
}

// "NAME [ n ]" at toks[pos..]; returns the address n, range-checked like an instruction's addr operand.
int expect_mem(const std::vector<std::string>& t, size_t& pos, const char* name) {
  if (pos + 3 >= t.size() || !iequal(t[pos], name) || t[pos + 1] != "[" || t[pos + 3] != "]")
    throw ParseError{std::string("expected ") + name + "[N]"};
  auto v = parse_int(t[pos + 2]);
  if (!v) throw ParseError{std::string("expected ") + name + "[N]"};
  if (*v < 0 || *v >= TensorCoreConfig::kMaxDepth)
    throw ParseError{std::string(name) + " address " + t[pos + 2] + " out of range (0.." +
                     std::to_string(TensorCoreConfig::kMaxDepth - 1) + ")"};
  pos += 4;
  return int(*v);
}

// VMEM[N] = 16 ints, WMEM[N] = 16 int8, AMEM[N] = 4 int8; a float MXU's WMEM32[N] = 16 and AMEM32[N] = 4
// words (float32 bit patterns as ints).
void parse_tile(const std::string& kw, const std::vector<std::string>& toks, Record& r) {
  r.type = kw == "VMEM"     ? RecordType::kVmemTile
           : kw == "WMEM"   ? RecordType::kWeightTile
           : kw == "AMEM"   ? RecordType::kActTile
           : kw == "WMEM32" ? RecordType::kWeightWords
                            : RecordType::kActWords;
  size_t pos = 0;
  r.addr = expect_mem(toks, pos, kw.c_str());
  ++pos;
  size_t n = is_act_row(r.type) ? kRows : kTileElems;
  if (toks.size() - pos != n)
    throw ParseError{kw + " needs " + std::to_string(n) + " values, got " +
                     std::to_string(toks.size() - pos)};
  for (size_t k = 0; k < n; ++k) {
    auto v = parse_int(toks[pos + k]);
    if (!v) throw ParseError{"bad value '" + toks[pos + k] + "'"};
    if (*v < INT32_MIN || *v > INT32_MAX)
      throw ParseError{kw + " value " + toks[pos + k] + " out of range (" + std::to_string(INT32_MIN) + ".." +
                       std::to_string(INT32_MAX) + ")"};
    r.data[k] = int32_t(*v);
  }
}

// INSTR with the nine raw fields.
void parse_raw_instr(const std::vector<std::string>& toks, Record& r) {
  if (toks.size() != 1 + kNumFields) throw ParseError{"INSTR needs the 9 instruction fields"};
  r.type = RecordType::kInstr;
  for (int k = 0; k < kNumFields; ++k) {
    auto v = parse_int(toks[1 + k]);
    if (!v || *v < 0 || *v >= (1 << kFields[k].width))
      throw ParseError{std::string("field ") + kFields[k].name + " value '" + toks[1 + k] +
                       "' does not fit " + std::to_string(kFields[k].width) + " bits"};
    r.instr.*(kFields[k].member) = uint8_t(*v);
  }
}

// An instruction by its mnemonic: the first of its templates that matches the whole line.
void parse_mnemonic(const std::string& kw, const std::vector<std::string>& toks, Record& r) {
  auto it = templates().find(kw);
  if (it == templates().end()) throw ParseError{"unknown mnemonic '" + toks[0] + "'"};
  for (const auto& t : it->second) {
    Instr in;
    in.op = uint8_t(t.opcode);
    size_t pos = 0;
    if (match(t.nodes, toks, pos, in) && pos == toks.size()) {
      r.type = RecordType::kInstr;
      r.instr = in;
      return;
    }
  }
  std::string forms;
  for (const auto& t : it->second) forms += (forms.empty() ? "" : " or ") + std::string(t.source);
  throw ParseError{"malformed " + kw + "; expected " + forms};
}

// One statement (a line's tokens) into its record; false for END, which has none.
bool parse_statement(const std::vector<std::string>& toks, Record& r) {
  const std::string kw = upper(toks[0]);
  if ((kw == "VMEM" || kw == "WMEM" || kw == "AMEM" || kw == "WMEM32" || kw == "AMEM32") && toks.size() > 4 &&
      toks[4] == "=") {
    parse_tile(kw, toks, r);
  } else if (kw == "OUTPUT_MXU" && toks.size() <= 2) {  // optional flag, as record type 3 carries one
    r.type = RecordType::kOutputMxu;
    auto flag = toks.size() == 2 ? parse_int(toks[1]) : std::optional<int64_t>(1);
    if (!flag || *flag < INT32_MIN || *flag > INT32_MAX)
      throw ParseError{"OUTPUT_MXU flag must be a 32-bit integer"};
    r.addr = int(*flag);
  } else if (kw == "OUTPUT_VMEM" || kw == "OUTPUT_ASRAM") {
    size_t pos = 1;
    r.type = kw == "OUTPUT_VMEM" ? RecordType::kOutputVmem : RecordType::kOutputAsram;
    r.addr = expect_mem(toks, pos, kw == "OUTPUT_VMEM" ? "VMEM" : "ASRAM");
    if (pos != toks.size()) throw ParseError{"unexpected '" + toks[pos] + "'"};
  } else if (kw == "END" && toks.size() == 1) {
    return false;
  } else if (kw == "INSTR") {
    parse_raw_instr(toks, r);
  } else {
    parse_mnemonic(kw, toks, r);
  }
  return true;
}

// The operands a builder takes (instr_from_operands), in the order the template reads them: each placeholder,
// and the condition field of each "f&mask=value" group, at its first appearance.
void builder_operands(const std::vector<Node>& nodes, std::vector<const Node*>& out) {
  for (const Node& n : nodes) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Node* o) {
      return o->kind == n.kind &&
             (n.kind == Node::kOperand ? o->text == n.text : o->cond_slot.field == n.cond_slot.field);
    });
    if (n.kind == Node::kOperand && !seen) out.push_back(&n);
    if (n.kind == Node::kGroup) {
      if (n.cond == Node::kMask && !seen) out.push_back(&n);
      builder_operands(n.children, out);
    }
  }
}

}  // namespace

std::string format_instr(const Instr& in) {
  if (in.op < kNumSxuOps) {
    for (const auto& [word, list] : templates())
      for (const auto& t : list) {
        if (t.opcode != in.op) continue;
        auto text = render(t.nodes, in);
        if (!text) continue;
        auto toks = tokenize(*text, 0);
        size_t pos = 0;
        Instr back;
        back.op = in.op;
        if (match(t.nodes, toks, pos, back) && pos == toks.size() && back == in) return *text;
      }
  }
  return raw_instr(in);
}

Bundle assemble(std::string_view text) {
  Bundle b;
  bool ended = false;
  int line = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view raw = text.substr(start, nl - start);
    start = nl + 1;
    ++line;
    auto toks = tokenize(raw.substr(0, raw.find('#')), line);
    if (toks.empty()) continue;
    if (ended) throw AsmError("line " + std::to_string(line) + ": statement after END");
    Record r;
    r.line = line;
    try {
      ended = !parse_statement(toks, r);
    } catch (const ParseError& e) {
      throw AsmError("line " + std::to_string(line) + ": " + e.message);
    }
    if (!ended) b.records.push_back(r);
  }
  if (!ended) throw AsmError("bundle has no END");
  validate(b, format_limits());
  return b;
}

std::string disassemble(const Bundle& b) {
  std::ostringstream out;
  auto values = [&](const Record& r, int n) {
    for (int k = 0; k < n; ++k) out << ' ' << r.data[k];
  };
  for (const Record& r : b.records) {
    switch (r.type) {
      case RecordType::kVmemTile:
      case RecordType::kWeightTile:
      case RecordType::kActTile:
      case RecordType::kWeightWords:
      case RecordType::kActWords:
        out << data_keyword(r.type) << "[" << r.addr << "] =";
        values(r, is_act_row(r.type) ? kRows : kTileElems);
        break;
      case RecordType::kInstr:
        out << format_instr(r.instr);
        break;
      case RecordType::kOutputMxu:
        out << "OUTPUT_MXU";
        if (r.addr != 1) out << ' ' << r.addr;
        break;
      case RecordType::kOutputVmem:
        out << "OUTPUT_VMEM VMEM[" << r.addr << "]";
        break;
      case RecordType::kOutputAsram:
        out << "OUTPUT_ASRAM ASRAM[" << r.addr << "]";
        break;
      case RecordType::kEnd:
        break;
    }
    out << '\n';
  }
  out << "END\n";
  return out.str();
}

void validate_instr(const Instr& in) {
  if (in.op >= kNumSxuOps) return;  // undefined opcodes load fine and hang when fetched: a SimError
  check_operands(canonical(in.op).nodes, in, kSxuOps[in.op].name);
}

Instr instr_from_operands(SxuOpcode op, std::initializer_list<int64_t> operands) {
  static const auto* table = [] {
    auto* t = new std::array<std::vector<const Node*>, kNumSxuOps>;
    for (int o = 0; o < kNumSxuOps; ++o) builder_operands(canonical(o).nodes, (*t)[o]);
    return t;
  }();
  const std::vector<const Node*>& fields = (*table)[size_t(op)];
  if (operands.size() > fields.size())
    throw std::logic_error(std::string(kSxuOps[size_t(op)].name) + " takes " + std::to_string(fields.size()) +
                           " operands");
  Instr in;
  in.op = uint8_t(op);
  const int64_t* v = operands.begin();
  for (size_t k = 0; k < operands.size(); ++k) {
    const Node& n = *fields[k];
    if (n.kind == Node::kOperand)
      write_operand(n, in, v[k]);
    else
      in.*(n.cond_slot.field) = uint8_t(v[k]);
  }
  return in;
}

}  // namespace tinytpu
