#include "sim/batch.h"

namespace tinytpu {

BatchDatapath::BatchDatapath(const TensorCoreConfig& cfg, int capacity)
    : capacity_(capacity),
      places_(cfg.vregs + cfg.depth + cfg.psum_buckets + 8),
      store_(size_t(places_) * size_t(capacity)),
      mxu_(size_t(capacity), LaunchMxu{WeightSram(cfg), ActivationSram(cfg), {}, {}}),
      cfg(cfg),
      vrf{this, 0, cfg.vregs - 1},
      vmem{{this, cfg.vregs, cfg.depth - 1}, place(places_ - 8)},
      psum{{this, cfg.vregs + cfg.depth, cfg.psum_buckets - 1}, place(places_ - 7)},
      vpu{place(places_ - 6)},
      xlu{place(places_ - 5)},
      ctrl{this, place(places_ - 4), place(places_ - 3), place(places_ - 2), place(places_ - 1)},
      array{this},
      wsram{cfg.depth - 1},
      asram{cfg.depth - 1} {}

bool BatchDatapath::holds(const TensorCoreConfig& c, int capacity) const {
  return capacity <= capacity_ && c.vregs == cfg.vregs && c.depth == cfg.depth &&
         c.psum_buckets == cfg.psum_buckets && c.mxu_dtype == cfg.mxu_dtype;  // 32-bit SRAM words or none
}

void BatchDatapath::Array::clear_all() const {
  for (int l = 0; l < batch->launches(); ++l) batch->mxu(l).array.clear_all();
}

void BatchDatapath::start_mxu(const MxuDispatch& d, const TileSpan& operand) {
  ctrl.state = CState::kDone;
  ctrl.epilogue_active = d.kind == MxuStart::kEpilogue;
  if (ctrl.epilogue_active) ctrl.epi = d.epi;
  for (int l = 0; l < launches_; ++l) {
    Controller& c = mxu(l).ctrl;
    c.scale_mul = ctrl.scale_mul;
    c.scale_shift = ctrl.scale_shift;
    c.start(d, mxu(l).array, operand[l]);
    c.run_whole(mxu(l).array, mxu(l).wsram, mxu(l).asram, psum.mem[c.psum_addr][l]);
  }
}

}  // namespace tinytpu
