#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include "base/config.h"
#include "isa/bundle.h"
#include "isa/vpu_ops.h"

namespace tinytpu {

// What a launch does, counted by action: the inputs of the energy model (tinytpu.energy prices each). Tiles
// are the core's (rows x rows int32 lanes), rows an MXU row of int8 or int32.
struct Activity {
  uint64_t instructions = 0;                 // SXU fetches from program memory
  std::array<uint64_t, 4> vpu_lane_ops{};    // by VpuEnergy: one op on one lane (a TranscUnit op: its steps)
  uint64_t xlu_ops = 0;                      // broadcasts, transposes, rotates (a tile each)
  uint64_t mxu_macs = 0;                     // int8 multiply-accumulates of the PEs
  uint64_t vreg_reads = 0, vreg_writes = 0;  // tiles
  uint64_t vmem_reads = 0, vmem_writes = 0;  // tiles: loads, stores, records and output lines
  uint64_t wsram_reads = 0, wsram_writes = 0;  // weight tiles (int8)
  uint64_t asram_reads = 0, asram_writes = 0;  // activation rows (int8)
  uint64_t psum_accesses = 0;                  // PSUM tile or row reads and writes
  uint64_t program_writes = 0;                 // instruction records written into program memory
  // Bytes moved into and out of the core (sim/dma_engine.h's wire sizes): data records, the program's records
  // (instructions and output requests, which a resident program does not send again), output lines.
  uint64_t data_bytes = 0, program_bytes = 0, output_bytes = 0;

  Activity& operator+=(const Activity& o);
};

// The activity of a bundle whose program runs straight through (no loop, skip or halt before its end: what
// the compiler emits), each instruction once: none for another program.
std::optional<Activity> straight_line_activity(const Bundle& bundle, const TensorCoreConfig& cfg);

}  // namespace tinytpu
