#include "sim/tensorcore.h"

#include "isa/tasm.h"
#include "sim/errors.h"

namespace tinytpu {

std::string TensorCore::where() const {
  return "pc " + std::to_string(sxu.pc) + " (" + format_instr(sxu.cur) + ") at cycle " +
         std::to_string(cycle);
}

void TensorCore::fail(const std::string& what) const { throw SimError(where() + ": " + what); }

}  // namespace tinytpu
