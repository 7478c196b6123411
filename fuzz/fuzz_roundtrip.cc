// The disassembler: any bundle that parses (TASM or wire) must disassemble to TASM that assembles to the
// same bundle, and that TASM must be a fixed point. Clean rejection of the input: AsmError.
#include "base/errors.h"
#include "fuzz.h"
#include "isa/tasm.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = fuzz::bundle(data, size);
  if (!parsed) return 0;
  const Bundle& b = *parsed;
  std::string tasm = disassemble(b);
  Bundle back;
  try {
    back = assemble(tasm);
  } catch (const AsmError& e) {
    fuzz::broken_invariant(std::string("disassembly does not assemble: ") + e.what() + "\n" + tasm);
  }
  if (to_wire(back) != to_wire(b))
    fuzz::broken_invariant("disassembly assembles to another bundle:\n" + tasm);
  if (disassemble(back) != tasm) fuzz::broken_invariant("disassembly is not a fixed point:\n" + tasm);
  return 0;
}
