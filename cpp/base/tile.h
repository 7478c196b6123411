#pragma once
#include <array>
#include <cstdint>

#include "base/config.h"

namespace tinytpu {

constexpr int kRows = TensorCoreConfig::kRows;
constexpr int kTileElems = TensorCoreConfig::kTileElems;

// A 4x4 Int32 tile or vreg, row-major: element (r, c) is at 4r + c (hardware.md §1 "Layout").
using Tile = std::array<int32_t, kTileElems>;
using Row = std::array<int32_t, kRows>;
using I8Row = std::array<int8_t, kRows>;        // one ActivationSRAM word
using I8Tile = std::array<int8_t, kTileElems>;  // one WeightSRAM word

inline Tile row_tile(const Row& row0) {  // row 0 = row0, rows 1..3 = 0 (LOAD_MXU_RESULT shape)
  Tile t{};
  for (int c = 0; c < kRows; ++c) t[c] = row0[c];
  return t;
}

// Two's-complement wrap without signed-overflow UB.
inline int32_t wrap_add(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }
inline int32_t wrap_sub(int32_t a, int32_t b) { return int32_t(uint32_t(a) - uint32_t(b)); }
inline int32_t wrap_mul(int32_t a, int32_t b) { return int32_t(uint32_t(a) * uint32_t(b)); }
inline int32_t wrap_neg(int32_t a) { return int32_t(0u - uint32_t(a)); }

}  // namespace tinytpu
