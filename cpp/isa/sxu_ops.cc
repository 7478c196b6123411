#include "isa/sxu_ops.h"

#include <strings.h>

#include <cstring>

namespace tinytpu {

// TASM templates: see isa/tasm.h for the template language. Mnemonics follow the reference's TASM
// (hardware.md §5); opcodes it has no mnemonic for get the names TRANSPOSE, PSUM_*, SET_PRED_*,
// SKIP_IF_*, PSUM_CLEAR_ALL.
#define WAR "WMEM[{mxuWBase:addr}], AMEM[{mxuABase:addr}]"
#define GEMM "{vregDst:vreg} = GEMM(" WAR ", tiles={mxuTLen:tiles})"
const std::array<SxuOpInfo, kNumSxuOps> kSxuOps = {{
#define X(opcode, name, mnemonic, exec, cycles, timing, alone, reads_data, ...) \
  {uint8_t(SxuOpcode::name), mnemonic, {__VA_ARGS__}, cycles, SxuTiming::timing, SxuAlone::alone, reads_data},
#include "isa/sxu_ops.def"
#undef X
}};
#undef GEMM
#undef WAR

const SxuOpInfo* find_sxu_op(std::string_view name) {
  for (const auto& op : kSxuOps)
    if (name.size() == strlen(op.name) && strncasecmp(name.data(), op.name, name.size()) == 0) return &op;
  return nullptr;
}

bool may_write_vreg_dst(uint8_t opcode) {
  static const auto writes = [] {
    std::array<bool, kNumSxuOps> w{};
    for (const auto& op : kSxuOps) {
      std::string_view t = op.tasm[0];
      w[op.opcode] = t.find("{vregDst:vreg}") != t.npos || t.find("{vregDst+vregSrc:vreg}") != t.npos;
    }
    return w;
  }();
  return opcode < kNumSxuOps && writes[opcode];
}

}  // namespace tinytpu
