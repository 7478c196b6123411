#include "isa/sxu_ops.h"

#include <strings.h>

#include <cstring>

#include "sim/sxu_exec.h"

namespace tinytpu {

const std::array<const char*, kNumStalls> kStallNames = {"VPU write-back", "VPU busy",  "VPU result",
                                                         "XLU result",     "MXU busy",  "MXU result",
                                                         "PSUM port",      "DMA record"};

// TASM templates: see isa/tasm.h for the template language. Mnemonics follow the reference's TASM
// (hardware.md §5); opcodes it has no mnemonic for get the names TRANSPOSE, PSUM_*, SET_PRED_*,
// SKIP_IF_*, PSUM_CLEAR_ALL. The exec of HALT is never called: FETCH handles it.
#define WAR "WMEM[{mxuWBase:addr}], AMEM[{mxuABase:addr}]"
#define GEMM "{vregDst:vreg} = GEMM(" WAR ", tiles={mxuTLen:tiles})"
using namespace sxu_exec;
const std::array<SxuOpInfo, kNumSxuOps> kSxuOps = {{
#define X(opcode, name, mnemonic, exec, cycles, ...) \
  {uint8_t(SxuOpcode::name), mnemonic, {__VA_ARGS__}, exec, cycles},
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
