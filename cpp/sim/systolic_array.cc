#include "sim/systolic_array.h"

namespace tinytpu {

// Columns and rows are walked from the far end so every PE reads its neighbour's pass register
// before the neighbour overwrites it: the same values a clocked array would see.
void SystolicArray::feed_activations(const I8Row& a) {
  for (int r = 0; r < kRows; ++r)
    for (int c = kRows - 1; c >= 0; --c) {
      int i = r * kRows + c;
      int8_t in = c == 0 ? a[r] : act_pass[i - 1];
      accum[i] = wrap_add(accum[i], int32_t(in) * int32_t(weight[i]));
      act_pass[i] = in;
    }
}

void SystolicArray::feed_pair(const I8Row& w_top, const I8Row& a_left) {
  for (int r = kRows - 1; r >= 0; --r)
    for (int c = kRows - 1; c >= 0; --c) {
      int i = r * kRows + c;
      int8_t w = r == 0 ? w_top[c] : w_pass[i - kRows];
      int8_t a = c == 0 ? a_left[r] : act_pass[i - 1];
      accum[i] = wrap_add(accum[i], int32_t(a) * int32_t(w));
      act_pass[i] = a;
      w_pass[i] = w;
    }
}

void SystolicArray::stream_ws(const Row& act_sums) {
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kRows; ++c) {
      int i = r * kRows + c;
      accum[i] = wrap_add(accum[i], int32_t(uint32_t(act_sums[r]) * uint32_t(int32_t(weight[i]))));
    }
}

void SystolicArray::stream_os(const I8Tile& w, const std::array<I8Row, kRows>& act, int k) {
  for (int j = 0; j < k; ++j) {
    const int slot = j & (kRows - 1);
    for (int r = 0; r < kRows; ++r) {
      const int32_t a = act[slot][r];
      int32_t* row = &accum[r * kRows];
      for (int c = 0; c < kRows; ++c) row[c] = wrap_add(row[c], a * int32_t(w[slot * kRows + c]));
    }
  }
}

Row SystolicArray::results() const {
  Row out{};
  for (int c = 0; c < kRows; ++c)
    for (int r = 0; r < kRows; ++r) out[c] = wrap_add(out[c], accum[r * kRows + c]);
  return out;
}

}  // namespace tinytpu
