#pragma once
#include <vector>

#include "compiler/tile_program.h"
#include "isa/instr.h"

namespace tinytpu::compiler {

// What the lowering makes of a batch (lower.h): launches, each one bundle's program and the records that fill
// its VMEM, WMEM and AMEM and drain its outputs, from which compile.cc builds the plan.

// Where a launch's VMEM tiles come from and go to. A tile node's value crossing a launch boundary
// is spilled to host-side scratch (a drain) and comes back as a fill.
struct SlotFill {
  int slot;
  int node;  // a leaf node's lanes, the spilled value of a computed node, or constant tile -k
             // (constants[k-1])
  DType dtype = DType::kI32;  // what the lanes hold (DEBUG=4 shows float tiles as floats too)
};
struct SlotDrain {
  enum Role : uint8_t { kValue, kGate, kIndex };
  int slot;
  int store = -1;  // index into TileProgram::stores (its value, gate or element indices), or
  int spill = -1;  // a node whose value must survive into the next launch
  Role role = kValue;
};

// A WMEM weight tile or an AMEM activation row (lanes 0..3) for MXU_DOT dispatches, and the chains
// (MxuDot::chain) that read it: an element out of int8 range sends them back to the VPU.
struct MxuFill {
  bool weight;
  int addr;
  MxuTile data;
  std::vector<int> chains;
  bool words = false;  // a float block's: 32-bit words (WMEM32, AMEM32 records), never out of range
};

// One bundle, within the configuration's program memory, VMEM tiles, vregs and outputs (validate() checks).
struct Launch {
  std::vector<Instr> program;  // ends in HALT
  std::vector<SlotFill> fills;
  std::vector<SlotDrain> drains;
  std::vector<MxuFill> mxu_fills;
  const char* cut = nullptr;  // the limit that ended it early (the decision log); null at a batch's end
};

}  // namespace tinytpu::compiler
