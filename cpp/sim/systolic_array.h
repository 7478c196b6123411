#pragma once
#include <array>

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
  // A whole stream's products added at once, the same as feeding it cycle by cycle from pass registers that
  // hold zeros where they are read, as every stream run to its end leaves them. WS: each PE's weight times
  // its row's activations summed over the stream (`act_sums`). OS: K steps, step j the weight row and
  // activation slot j mod rows, as the staircase pairs them.
  void stream_ws(const Row& act_sums);
  void stream_os(const I8Tile& w, const std::array<I8Row, kRows>& act, int k);
  Row results() const;  // column sums, Int32 wrap
  const Tile& matrix() const { return accum; }
  void clear_all() { accum.fill(0); }
};

}  // namespace tinytpu
