#include "sim/batch.h"

namespace tinytpu {

BatchDatapath::BatchDatapath(const TensorCoreConfig& cfg, int capacity)
    : capacity_(capacity),
      places_(cfg.vregs + cfg.depth + cfg.psum_buckets + 4),
      store_(size_t(places_) * size_t(capacity)),
      cfg(cfg),
      vrf{this, 0, cfg.vregs - 1},
      vmem{{this, cfg.vregs, cfg.depth - 1}, place(places_ - 4)},
      psum{{this, cfg.vregs + cfg.depth, cfg.psum_buckets - 1}, place(places_ - 3)},
      vpu{place(places_ - 2)},
      xlu{place(places_ - 1)} {}

bool BatchDatapath::holds(const TensorCoreConfig& c, int capacity) const {
  return capacity <= capacity_ && c.vregs == cfg.vregs && c.depth == cfg.depth &&
         c.psum_buckets == cfg.psum_buckets;
}

}  // namespace tinytpu
