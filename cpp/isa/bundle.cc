#include "isa/bundle.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <sstream>

#include "base/config.h"
#include "base/errors.h"
#include "isa/tasm.h"

namespace tinytpu {

namespace {

// The wire format's integer stream with the line each integer came from.
struct WireReader {
  std::string_view text;
  size_t pos = 0;
  int line = 1;

  bool next(int64_t& value, int& at) {
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\n') {
        ++line, ++pos;
      } else if (std::isspace(uint8_t(c))) {
        ++pos;
      } else if (c == '#') {  // a comment runs to the end of the line
        while (pos < text.size() && text[pos] != '\n') ++pos;
      } else {
        size_t end = pos;
        while (end < text.size() && !std::isspace(uint8_t(text[end])) && text[end] != '#') ++end;
        std::string tok(text.substr(pos, end - pos));
        pos = end;
        at = line;
        char* rest = nullptr;
        errno = 0;
        long long v = std::strtoll(tok.c_str(), &rest, 10);
        if (*rest || tok.empty() || errno == ERANGE)
          throw AsmError("line " + std::to_string(line) + ": '" + tok + "' is not a 32-bit integer");
        value = v;
        return true;
      }
    }
    return false;
  }
  // The next integer of the current record, which must lie in lo..hi.
  int32_t need(const char* what, int64_t lo = INT32_MIN, int64_t hi = INT32_MAX) {
    int64_t v;
    int at;
    if (!next(v, at))
      throw AsmError("line " + std::to_string(line) + ": bundle ends inside a record (" + what + ")");
    if (v < lo || v > hi)
      throw AsmError("line " + std::to_string(at) + ": " + what + " " + std::to_string(v) +
                     " out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return int32_t(v);
  }
};

const char* space_name(RecordType t) {
  switch (t) {
    case RecordType::kWeightTile:
    case RecordType::kWeightWords:
      return "WMEM address";
    case RecordType::kActTile:
    case RecordType::kActWords:
      return "AMEM address";
    case RecordType::kOutputAsram:
      return "ASRAM address";
    default:
      return "VMEM address";
  }
}

}  // namespace

Bundle parse_wire(std::string_view text) {
  Bundle b;
  WireReader rd{text};
  int64_t type;
  int line;
  bool ended = false;
  while (rd.next(type, line)) {
    if (ended) throw AsmError("line " + std::to_string(line) + ": record after END");
    Record r;
    r.line = line;
    switch (type) {
      case 0:
      case 1:
      case 5:
      case 8:
      case 9: {
        r.type = RecordType(type);
        r.addr = rd.need(space_name(r.type), 0, TensorCoreConfig::kMaxDepth - 1);
        int n = is_act_row(r.type) ? kRows : kTileElems;
        for (int k = 0; k < n; ++k) r.data[k] = rd.need("tile value");
        break;
      }
      case 2:
        r.type = RecordType::kInstr;
        for (const auto& f : kFields) {
          int64_t v = rd.need("instruction field");
          if (v < 0 || v >= (int64_t(1) << f.width))
            throw AsmError("line " + std::to_string(line) + ": instruction field " + f.name + " = " +
                           std::to_string(v) + " does not fit " + std::to_string(f.width) + " bits");
          r.instr.*(f.member) = uint8_t(v);
        }
        break;
      case 3:
        r.type = RecordType::kOutputMxu;
        r.addr = rd.need("flag");
        break;
      case 6:
      case 7:
        r.type = RecordType(type);
        r.addr = rd.need(space_name(r.type), 0, TensorCoreConfig::kMaxDepth - 1);
        break;
      case 4:
        ended = true;
        continue;
      default:
        throw AsmError("line " + std::to_string(line) + ": unknown bundle record type " +
                       std::to_string(type));
    }
    b.records.push_back(r);
  }
  if (!ended) throw AsmError("bundle has no END record (4)");
  validate(b, format_limits());
  return b;
}

std::string to_wire(const Bundle& b) {
  std::ostringstream out;
  for (const Record& r : b.records) {
    out << int(r.type);
    switch (r.type) {
      case RecordType::kInstr:
        for (const auto& f : kFields) out << ' ' << int(r.instr.*(f.member));
        break;
      case RecordType::kWeightTile:
      case RecordType::kActTile:
      case RecordType::kVmemTile:
      case RecordType::kWeightWords:
      case RecordType::kActWords: {
        out << ' ' << r.addr;
        int n = is_act_row(r.type) ? kRows : kTileElems;
        for (int k = 0; k < n; ++k) out << ' ' << r.data[k];
        break;
      }
      default:
        out << ' ' << r.addr;
        break;
    }
    out << '\n';
  }
  out << "4\n";
  return out.str();
}

Bundle parse_bundle(std::string_view text) {
  // The first token decides: an integer starts a wire bundle, a word starts TASM.
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (std::isspace(uint8_t(text[i]))) {
      ++i;
    } else {
      break;
    }
  }
  bool wire = i < text.size() && (std::isdigit(uint8_t(text[i])) || text[i] == '-');
  return wire ? parse_wire(text) : assemble(text);
}

bool same_program(const Bundle& a, const Bundle& b) {
  auto next = [](const Bundle& x, size_t i) {  // the first record at or after i that is not data
    while (i < x.records.size() && is_data(x.records[i])) ++i;
    return i;
  };
  size_t i = next(a, 0), j = next(b, 0);
  for (; i < a.records.size() && j < b.records.size(); i = next(a, i + 1), j = next(b, j + 1)) {
    const Record &r = a.records[i], &s = b.records[j];
    if (r.type != s.type || (r.type == RecordType::kInstr ? !(r.instr == s.instr) : r.addr != s.addr))
      return false;
  }
  return i == a.records.size() && j == b.records.size();
}

TensorCoreConfig format_limits() {
  TensorCoreConfig limits;
  limits.depth = TensorCoreConfig::kMaxDepth;
  limits.mxu_dtype = 2;
  limits.mxu_pipelined = true;
  return limits;
}

void validate(const Bundle& b, const TensorCoreConfig& cfg) {
  int instrs = 0, vmem_out = 0, asram_out = 0;
  for (const Record& r : b.records) {
    auto fail = [&](const std::string& what) {
      throw AsmError("line " + std::to_string(r.line) + ": " + what);
    };
    auto check_addr = [&](const char* space) {
      if (r.addr < 0 || r.addr >= cfg.depth)
        fail(std::string(space) + " address " + std::to_string(r.addr) + " out of range (0.." +
             std::to_string(cfg.depth - 1) + ")");
    };
    switch (r.type) {
      case RecordType::kVmemTile:
        check_addr("VMEM");
        break;
      case RecordType::kWeightTile:
      case RecordType::kActTile: {
        check_addr(r.type == RecordType::kWeightTile ? "WMEM" : "AMEM");
        int n = r.type == RecordType::kActTile ? kRows : kTileElems;
        for (int k = 0; k < n; ++k)
          if (r.data[k] < -128 || r.data[k] > 127)
            fail("MXU operand " + std::to_string(r.data[k]) + " is outside the int8 range (-128..127)");
        break;
      }
      case RecordType::kWeightWords:
      case RecordType::kActWords:
        check_addr(r.type == RecordType::kWeightWords ? "WMEM32" : "AMEM32");
        if (cfg.mxu_dtype == 0)
          fail("a 32-bit MXU operand record on a core without a float MXU (mxu_dtype 0)");
        break;
      case RecordType::kInstr:
        if (++instrs > cfg.prog_depth)
          fail("more than " + std::to_string(cfg.prog_depth) + " instructions (program memory is " +
               std::to_string(cfg.prog_depth) + " entries)");
        try {
          validate_instr(r.instr);
        } catch (const AsmError& e) {
          fail(e.what());
        }
        if (r.instr.op < kNumSxuOps && kSxuOps[r.instr.op].mxu_start &&
            float_dispatch(*kSxuOps[r.instr.op].mxu_start) && cfg.mxu_dtype == 0)
          fail(std::string(kSxuOps[r.instr.op].name) + " needs a float MXU (config mxu_dtype 1 or 2)");
        if (r.instr.op == uint8_t(SxuOpcode::kLoadMxuBank) && !cfg.mxu_pipelined)
          fail("LOAD_MXU_BANK needs a pipelined MXU (config mxu_pipelined)");
        break;
      case RecordType::kOutputVmem:
        check_addr("VMEM");
        if (++vmem_out > cfg.max_outputs)
          fail("more than " + std::to_string(cfg.max_outputs) + " OUTPUT_VMEM records");
        break;
      case RecordType::kOutputAsram:
        check_addr("ASRAM");
        if (++asram_out > cfg.max_outputs)
          fail("more than " + std::to_string(cfg.max_outputs) + " OUTPUT_ASRAM records");
        break;
      case RecordType::kOutputMxu:
      case RecordType::kEnd:
        break;
    }
  }
}

}  // namespace tinytpu
