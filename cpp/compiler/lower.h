#pragma once
#include <vector>

#include "base/tile.h"
#include "compiler/mxu_dot.h"
#include "compiler/tracer.h"
#include "isa/instr.h"

namespace tinytpu::compiler {

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
};

// One bundle, within the configuration's program memory, VMEM tiles, vregs and outputs (validate() checks).
struct Launch {
  std::vector<Instr> program;  // ends in HALT
  std::vector<SlotFill> fills;
  std::vector<SlotDrain> drains;
  std::vector<MxuFill> mxu_fills;
  const char* cut = nullptr;  // the limit that ended it early (the decision log); null at a batch's end
};

// Instruction selection, register and VMEM allocation, and splitting into launches.
// Constant tiles the code needs are returned in `constants` (uniform values, and each launch's palette). An
// MXU operand with the values of one already loaded in the launch (`choices`) reuses it. What the testbench
// takes to run launches by the compiler's estimate (compiler/cost.h), their fills, MXU fills and drains being
// the data records.
int64_t estimated_cycles(const std::vector<Launch>& launches);

std::vector<Launch> lower(const TileProgram& prog, const TensorCoreConfig& cfg, std::vector<Tile>& constants,
                          bool fast_math = false, const Choices& choices = {});

}  // namespace tinytpu::compiler
