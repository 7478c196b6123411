#include "isa/sxu_ops.h"

#include <strings.h>

#include <cstring>

namespace tinytpu {

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
