#include "sim/tensorcore.h"

namespace tinytpu {

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

}  // namespace tinytpu
