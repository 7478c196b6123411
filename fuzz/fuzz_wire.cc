// The numeric ("wire") bundle parser behind parse_bundle, which also picks TASM for text starting with a
// word. Clean rejection: AsmError. An accepted bundle must print back to the same wire text.
#include "base/errors.h"
#include "fuzz.h"
#include "isa/bundle.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = fuzz::bundle(data, size);
  if (!parsed) return 0;
  const Bundle& b = *parsed;
  std::string wire = to_wire(b);
  if (to_wire(parse_wire(wire)) != wire) fuzz::broken_invariant("to_wire(parse_wire(w)) != w for\n" + wire);
  return 0;
}
