// The compiler's text IR parser (what python/tinytpu/renderer.py serialize() writes). Clean rejections:
// compiler::Unsupported (a kernel the backend cannot lower) and std::invalid_argument (malformed IR).
#include <stdexcept>

#include "compiler/ir.h"
#include "fuzz.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    compiler::parse_kernel(fuzz::text(data, size));
  } catch (const compiler::Unsupported&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
