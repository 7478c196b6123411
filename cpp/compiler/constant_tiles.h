#pragma once
#include <vector>

#include "base/tile.h"

namespace tinytpu::compiler {

// The constant tiles the loader fills into a batch's launches (named -1, -2, ... in SlotFill::node), and each
// launch's palette: up to 16 constants in the lanes of one constant tile, each taken into a vreg by
// BROADCAST_SCALAR (an XLU op: 2 cycles) from the vreg holding the palette, where a constant of its own
// costs a fill record and a LOAD (3 cycles) in every launch. Lanes 0..15, because the broadcast's lane
// selector is the 4-bit vregSrc2 (row-major, so lane k on every geometry).
class ConstantTiles {
 public:
  static constexpr int kPaletteLanes = 16;

  const std::vector<Tile>& tiles() const { return tiles_; }
  void begin_launch() {
    palette_.clear();
    palette_tile_ = -1;
    own_ = 0;
  }
  bool in_palette(int32_t value) const;
  // The constant's lane in the launch's palette, given one while there is room; -1 without.
  int palette_lane(int32_t value);
  // The fill of a tile of the constant's own: its node (negative).
  int own_tile(int32_t value);
  // The fill of the palette's tile, made with the lanes the palette has (later lanes are written into it
  // as they are given: VMEM is filled first): its node.
  int palette_tile();

  // What an event that finds the launch full undoes (the launch ends there: its palette keeps the lanes it
  // had). Tiles of their own are still counted: the cut starts another launch.
  struct Mark {
    size_t tiles, palette;
    int palette_tile;
  };
  Mark mark() const { return {tiles_.size(), palette_.size(), palette_tile_}; }
  void rollback(const Mark& m);

 private:
  std::vector<Tile> tiles_;
  std::vector<int32_t> palette_;  // its values, lane by lane
  int palette_tile_ = -1;         // its index in tiles_, -1 before its first fill
  int own_ = 0;                   // constants with fills of their own in the launch
};

}  // namespace tinytpu::compiler
