#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "isa/bundle.h"
#include "isa/sxu_ops.h"

namespace tinytpu {

// TASM (hardware.md §5). Every instruction's syntax is a template in the kSxuOps table:
//   literal text     matched token by token, case-insensitively ("LOAD", "VMEM", "[", ",", "=")
//   {field:codec}    one operand stored in an instruction field; codecs: vreg (vN, 0..15), addr (0..255),
//                    row (a row or column of the tile: 0..3), u5 (0..31), psum (0..7), tiles (0..31),
//                    k (0..4), count (1..255), i8 (-128..127), i32, vpuop (a VPU mnemonic)
//   {f[hi:lo]:codec} the operand occupies bits hi..lo of field f
//   {f1+f2:codec}    the operand is stored in both fields (BROADCAST vN is in place)
//   {f1.f2.f3.f4:c}  a 32-bit operand split over four byte fields, most significant first
//   <cond|...>       optional group. cond "f&mask=value": present iff (f & mask) == value, and writing it
//                    sets those bits; empty cond: present iff an operand inside is non-zero; "binary":
//                    the second VPU operand, shown for binary ops
// Directives: VMEM[N] = 16 ints, WMEM[N] = 16 int8, AMEM[N] = 4 int8, OUTPUT_MXU, OUTPUT_VMEM VMEM[N],
// OUTPUT_ASRAM ASRAM[N], END, and INSTR with the nine raw fields for encodings no template can show.
Bundle assemble(std::string_view text);
std::string disassemble(const Bundle& b);
std::string format_instr(const Instr& instr);  // one instruction's TASM; assemble(it) gives it back
// Range checks of the operands an opcode uses (AsmError); undefined opcodes pass (they fail when fetched).
void validate_instr(const Instr& instr);
// An instruction of `op` from its operands, in the order its canonical template reads them: each placeholder,
// and the condition field of an optional group "f&mask=value" (written whole), at its first appearance.
// Operands left out are 0; each value goes into its bits as the assembler puts it there (validate_instr
// checks ranges). isa/instr_builders.h names one builder per opcode with it.
Instr instr_from_operands(SxuOpcode op, std::initializer_list<int64_t> operands);

}  // namespace tinytpu
