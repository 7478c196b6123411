#include "sim/tensorcore.h"

#include "isa/tasm.h"
#include "sim/errors.h"

namespace tinytpu {

std::string TensorCore::where() const {
  return "pc " + std::to_string(sxu.pc) + " (" + format_instr(sxu.cur) + ") at cycle " +
         std::to_string(cycle);
}

void TensorCore::trace_mxu(CState phase) {
  const char* name = "drain";
  switch (phase) {
    case CState::kLoadWeights:
    case CState::kLoadWeightsResp:
    case CState::kLoadWeightsRespOS:
      name = "load weights";
      break;
    case CState::kLoadActsOS:
      name = "load activations";
      break;
    case CState::kStream:
    case CState::kStreamOS:
      name = "stream";
      break;
    default:
      break;
  }
  trace->state(Track::kMxu, 1, cycle, trace->name(name));
  if (ctrl.is_done()) trace->mxu_done(cycle);
}

void TensorCore::fail(const std::string& what) const { throw SimError(where() + ": " + what); }

}  // namespace tinytpu
