#pragma once
#include <cstdint>
#include <string>

namespace tinytpu {

// The TensorCore's sizes: one run-time value that the compiler, the plan and the simulator all take.
// The default is the reference runtime configuration TensorCore#(4,4,32) (hardware.md §1).
//
// What is fixed when the model is built, and why:
//  - the tile geometry (kRows): tiles and vregs are fixed-size arrays in the simulator's hot loop;
//  - the encoding bounds (kMax*): TASM and the bundle's instruction fields are the reference ISA's, so
//    a configuration can shrink a memory below what an instruction field addresses, never grow it.
// Everything else is a field, checked by check().
struct TensorCoreConfig {
  static constexpr int kRows = 4;  // MXU rows == cols == VPU sublanes == lanes
  static constexpr int kTileElems = kRows * kRows;
  static constexpr int kMaxDepth = 32;       // 5-bit tile addresses (TASM `addr`, `tiles`)
  static constexpr int kMaxVregs = 16;       // 4-bit register fields
  static constexpr int kMaxPsumBuckets = 8;  // TASM `psum` operands are 0..7
  static constexpr int kMaxProgDepth = 256;  // the SXU's pc is 8 bits
  static constexpr int kMaxLoopDepth = 16;   // the loop stack's storage; `loop_depth` entries are used
  static constexpr int kMaxOutputs = 255;    // output records of each kind a bundle may hold

  int depth = 32;        // VMEM, WeightSRAM and ActivationSRAM entries; addresses wrap mod depth
  int vregs = 16;        // vector registers; register numbers wrap mod vregs
  int psum_buckets = 8;  // PSUM tiles; bucket numbers wrap mod psum_buckets
  int prog_depth = 256;  // program memory entries
  int loop_depth = 4;    // nested LOOP_BEGINs kept; deeper ones are ignored, as in the reference
  int max_outputs = 31;  // OUTPUT_VMEM / OUTPUT_ASRAM records: the testbench's counters are 5 bits wide

  // The reference testbench prints "FAIL: timeout" once its cycle counter passes 50000. Long programs
  // (the simulator-speed benchmark) raise the limit; exceeding it is a SimError, never a hang.
  uint64_t max_cycles = 50000;

  // Throws std::invalid_argument naming the first field outside what the model supports. Wrapping
  // sizes are powers of two: the hardware drops an address's high bits.
  void check() const;
  std::string describe() const;  // "depth=32 vregs=16 ...": for messages and logs
};

}  // namespace tinytpu
