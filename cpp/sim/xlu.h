#pragma once
#include "base/tile.h"

namespace tinytpu {

// XLU#(4,4) (hardware.md §2.6): every operation writes the result register in the dispatch cycle;
// the SXU collects it into a vreg the next cycle. No busy state of its own. Each operation is a function of
// its source tile, which the SXU applies to one core's tile or to each launch's of a batch (sim/batch.h).
struct Xlu {
  Tile result;  // mkRegU: Bluesim's 0xAA fill until the first operation
  Xlu();
  static Tile rotate(const Tile& src, int amount);       // out[s][i] = src[s][(i + amt) mod 4]
  static Tile broadcast_col(const Tile& src, int lane);  // out[s][i] = src[s][lane] (BROADCAST, COL)
  static Tile broadcast_scalar(const Tile& src, int row, int col);
  static Tile broadcast_row(const Tile& src, int row);  // out[r] = src[row]
  static Tile transpose(const Tile& src);
};

}  // namespace tinytpu
