#include "sim/xlu.h"

#include "sim/memories.h"

namespace tinytpu {

Xlu::Xlu() { fill_uninit(result); }

Tile Xlu::rotate(const Tile& src, int amount) {
  Tile out;
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) out[s * kRows + i] = src[s * kRows + ((i + amount) & (kRows - 1))];
  return out;
}

Tile Xlu::broadcast_col(const Tile& src, int lane) {
  Tile out;
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) out[s * kRows + i] = src[s * kRows + (lane & (kRows - 1))];
  return out;
}

Tile Xlu::broadcast_scalar(const Tile& src, int row, int col) {
  Tile out;
  out.fill(src[(row & (kRows - 1)) * kRows + (col & (kRows - 1))]);
  return out;
}

Tile Xlu::broadcast_row(const Tile& src, int row) {
  Tile out;
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) out[s * kRows + i] = src[(row & (kRows - 1)) * kRows + i];
  return out;
}

Tile Xlu::transpose(const Tile& src) {
  Tile out;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kRows; ++c) out[r * kRows + c] = src[c * kRows + r];
  return out;
}

}  // namespace tinytpu
