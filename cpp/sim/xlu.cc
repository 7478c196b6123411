#include "sim/xlu.h"

#include "sim/memories.h"

namespace tinytpu {

Xlu::Xlu() { fill_uninit(result); }

void Xlu::rotate(const Tile& src, int amount) {
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) result[s * kRows + i] = src[s * kRows + ((i + amount) & (kRows - 1))];
}

void Xlu::broadcast_col(const Tile& src, int lane) {
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) result[s * kRows + i] = src[s * kRows + (lane & (kRows - 1))];
}

void Xlu::broadcast_scalar(const Tile& src, int row, int col) {
  result.fill(src[(row & (kRows - 1)) * kRows + (col & (kRows - 1))]);
}

void Xlu::broadcast_row(const Tile& src, int row) {
  for (int s = 0; s < kRows; ++s)
    for (int i = 0; i < kRows; ++i) result[s * kRows + i] = src[(row & (kRows - 1)) * kRows + i];
}

void Xlu::transpose(const Tile& src) {
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kRows; ++c) result[r * kRows + c] = src[c * kRows + r];
}

}  // namespace tinytpu
