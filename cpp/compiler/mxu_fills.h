#pragma once
#include <vector>

#include "compiler/launch.h"
#include "compiler/mxu_dot.h"
#include "isa/bundle.h"

namespace tinytpu::compiler {

// The MXU's memories in a launch: the WMEM weight tiles and AMEM activation rows its dispatches read, as the
// launch's MxuFills. An operand with the values of one already loaded (Choices::canonical) reads that one.
// A fill's bundle record: WMEM or AMEM, int8 or 32-bit words.
RecordType record_type(const MxuFill& f);

struct MxuMemory {
  std::vector<MxuFill>& fills;  // the launch's
  const Choices& choices;
  int entries;  // WMEM tiles, and AMEM rows
  // (`words`: MxuFill::words; an int8 fill and a words fill of the same lanes are two fills)
  bool record_reads;  // false in an event that found the launch full (Emitter::no_room)

  // The WMEM address of a weight tile, or -1 when WMEM is full.
  int weight(const MxuTile& data, const std::vector<int>& chains, bool words);
  // The first of k consecutive AMEM rows (row r in lanes 4r..4r+3 of block: one WS activation row, or an OS
  // slice's activations), or -1 when AMEM is full.
  int activations(const MxuTile& block, int k, const std::vector<int>& chains, bool words);

 private:
  // The chains read the fill (the VPU takes them back when the fill's data leaves int8). (A rolled-back
  // event may leave its chains on a fill of the launch it was cut from: harmless, the fill holds the same
  // lanes as the one the chains then read.)
  void read_by(MxuFill& f, const std::vector<int>& chains);
};

}  // namespace tinytpu::compiler
