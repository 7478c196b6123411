#pragma once
#include "base/tile.h"

namespace tinytpu {

// SystolicArray#(4,4) of mkPE (hardware.md §2.2). PE[r][c] holds an Int8 weight, an Int32 accumulator
// and the Int8 activation/weight it passes right/down; values passed between PEs are the ones
// registered the cycle before.
struct SystolicArray {
  I8Tile weight{}, act_pass{}, w_pass{};
  Tile accum{};

  void load_weights(const I8Tile& w) { weight = w; }
  void feed_activations(const I8Row& a);                    // weight-stationary feed, no row skew
  void feed_pair(const I8Row& w_top, const I8Row& a_left);  // output-stationary staircase feed
  Row results() const;                                      // column sums, Int32 wrap
  const Tile& matrix() const { return accum; }
  void clear_all() { accum.fill(0); }
};

}  // namespace tinytpu
