#include "compiler/constant_tiles.h"

#include <algorithm>

namespace tinytpu::compiler {

bool ConstantTiles::in_palette(int32_t value) const {
  return std::find(palette_.begin(), palette_.end(), value) != palette_.end();
}

int ConstantTiles::palette_lane(int32_t value) {
  auto it = std::find(palette_.begin(), palette_.end(), value);
  if (it != palette_.end()) return int(it - palette_.begin());
  if (int(palette_.size()) == kPaletteLanes) return -1;
  // A launch's first loader constant keeps a fill of its own (a fill and a LOAD: 7 cycles, where the
  // palette's fill, LOAD and broadcast take 11); the second starts the palette.
  if (palette_.empty() && own_ == 0) return -1;
  if (palette_tile_ >= 0)
    tiles_[palette_tile_][palette_.size()] = value;  // loaded or not: VMEM is filled first
  palette_.push_back(value);
  return int(palette_.size()) - 1;
}

int ConstantTiles::own_tile(int32_t value) {
  tiles_.emplace_back().fill(value);
  ++own_;
  return -int(tiles_.size());
}

int ConstantTiles::palette_tile() {
  if (palette_tile_ < 0) {
    palette_tile_ = int(tiles_.size());
    Tile& t = tiles_.emplace_back();
    t.fill(0);
    std::copy(palette_.begin(), palette_.end(), t.begin());
  }
  return -(palette_tile_ + 1);
}

void ConstantTiles::rollback(const Mark& m) {
  tiles_.resize(m.tiles);
  palette_.resize(m.palette);
  palette_tile_ = m.palette_tile;
  if (palette_tile_ >= 0)
    std::fill(tiles_[palette_tile_].begin() + m.palette, tiles_[palette_tile_].end(), 0);
}

}  // namespace tinytpu::compiler
