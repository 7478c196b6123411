#pragma once
#include <cstdint>
#include <string_view>

#include "isa/instr.h"
#include "isa/sxu_ops.h"
#include "isa/tasm.h"
#include "isa/vpu_ops.h"

// Instructions by what their operands mean, so code generators never fill Instr fields by position: one
// builder per sxu_ops.def row, named after its TASM mnemonic (the row's fn column), taking the operands in
// the order its canonical template reads them (instr_from_operands), so that a row states its fields once:
// load(dst, addr) is "LOAD dst, VMEM[addr]", vpu(dst, op, a, b) "VPU dst = op(a, b)", mxu(w, a, tiles, psum,
// bucket, row) "MXU WMEM[w], AMEM[a], tiles=tiles, psum_write=PSUM[bucket], psum_row=row" (psum a PsumMode).
// Operands left out are 0: a unary VPU op's second, an MXU dispatch's PSUM deposit (PsumMode::kOff).
namespace tinytpu::instr {

// Whether `fn` is the template's first word in lower case.
constexpr bool names_mnemonic(std::string_view fn, std::string_view tasm) {
  const std::string_view word = tasm.substr(0, tasm.find(' '));
  if (word.size() != fn.size()) return false;
  for (size_t i = 0; i < fn.size(); ++i)
    if (fn[i] != (word[i] >= 'A' && word[i] <= 'Z' ? char(word[i] - 'A' + 'a') : word[i])) return false;
  return true;
}

#define X(opcode, name, mnemonic, fn, ...)                                                    \
  static_assert(names_mnemonic(#fn, kSxuOps[opcode].tasm[0]), #fn ": not its TASM mnemonic"); \
  template <class... Operands>                                                                \
  Instr fn(Operands... operands) {                                                            \
    return instr_from_operands(SxuOpcode::name, {int64_t(operands)...});                      \
  }
#include "isa/sxu_ops.def"
#undef X

}  // namespace tinytpu::instr
