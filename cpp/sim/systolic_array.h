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
  void clear_all() {
    accum.fill(0);  // float PEs: +0.0
    run_open = false;
  }

  // A float MXU's PEs (config mxu_dtype; docs/model.md "A float MXU"): `accum` holds float32 bits and
  // `run` each PE's sum of the open run of products, `run_open` whether a run is open. A float dispatch's
  // K steps, as stream_os pairs them: step j's product is a float32 multiply (bfloat16: of the words' high
  // halves, whose product float32 holds exactly but in float32's underflow); a run's first product is taken
  // as it is, the next ones added in order; a run ends after every `group`-th step and at the last one (group
  // 0: it stays open for the next dispatch), and its sum is then added to the accumulator. Every add and
  // multiply rounds (no FMA).
  Tile run{};
  bool run_open = false;
  void stream_os_float(const Tile& w, const std::array<Row, kRows>& act, int k, int group, bool bf16);
  void seed(const Tile& words) {  // DISPATCH_MXU_SEED: the accumulators set, no run open
    accum = words;
    run_open = false;
  }
};

}  // namespace tinytpu
