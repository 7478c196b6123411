// The TASM assembler. Clean rejection: AsmError. An accepted program must also pass validate().
#include "base/errors.h"
#include "fuzz.h"
#include "isa/tasm.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    Bundle b = assemble(fuzz::text(data, size));
    validate(b);
  } catch (const AsmError&) {
  }
  return 0;
}
