#pragma once
#include <cstdint>
#include <vector>

#include "base/tile.h"

namespace tinytpu {

// HBMModel#(depth, rows, cols, latency) (HBMModel.bsv, hardware.md §6): a tile memory whose reads are fully
// pipelined through `latency` stages. Clocked as the chip's other units (sparse_core.h): methods in a cycle,
// then tick().
class HbmModel {
 public:
  HbmModel(int depth, int latency);

  int entries() const { return int(mem_.size()); }  // 2^TLog(depth): mkRegFileFull's index range
  int latency() const { return int(pipeline_.size()); }

  // mem.upd: a read requested in the same cycle still reads the tile as it was.
  void write(int addr, const Tile& data);
  // Samples mem[addr] in this cycle; its tile is read_resp() `latency` cycles later. One request a cycle.
  void read_req(int addr);
  // The pipeline's last stage, whatever it holds: the reference exports no valid flag (zeros before any
  // read, the last response once the pipeline empties). resp_valid() is the flag it keeps inside.
  const Tile& read_resp() const { return pipeline_.back().tile; }
  bool resp_valid() const { return pipeline_.back().valid; }

  void tick();  // shift_pipeline, with this cycle's request entering stage 0; then the write

 private:
  int index(int addr, const char* what) const;

  std::vector<Tile> mem_;  // Bluesim's 0xAA fill until written
  struct Stage {
    Tile tile{};  // mkReg(replicate(...(0)))
    bool valid = false;
  };
  std::vector<Stage> pipeline_;  // [0] newest, [latency-1] the response
  // this cycle's method calls
  bool wrote_ = false, requested_ = false;
  int write_addr_ = 0;
  Tile write_data_{}, requested_tile_{};
};

}  // namespace tinytpu
