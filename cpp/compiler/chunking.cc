#include "compiler/chunking.h"

#include <algorithm>

namespace tinytpu::compiler {

void Chunking::lanes(int64_t chunk, std::vector<Lanes>& at, std::array<bool, kLanes>& active) const {
  const int np = int(ranges.size());
  at.assign(ranges.size(), Lanes{});
  const int64_t cols = blocked ? block_cols() : 0, rows = blocked ? block_rows() : 0;
  for (int l = 0; l < kLanes; ++l) {
    int64_t f = chunk * kLanes + l;
    int inner = 0;  // dimensions placed by the 4x4 block
    if (blocked) {
      int64_t i = (chunk / cols % rows) * kRows + l / kRows, j = (chunk % cols) * kRows + l % kRows;
      active[l] = i < bounds[np - 2] && j < bounds[np - 1];
      at[np - 2][l] = std::min(i, bounds[np - 2] - 1);  // an inactive lane repeats a real point
      at[np - 1][l] = std::min(j, bounds[np - 1] - 1);
      f = chunk / cols / rows;
      inner = 2;
    } else {
      active[l] = f < points;
      if (!active[l]) f = std::max<int64_t>(points - 1, 0);
    }
    for (int r = np - 1 - inner; r >= 0; --r) {
      at[r][l] = bounds[r] ? f % bounds[r] : 0;
      f = bounds[r] ? f / bounds[r] : 0;
    }
  }
}

}  // namespace tinytpu::compiler
