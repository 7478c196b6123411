#pragma once
#include <cstdint>

namespace tinytpu {

// The reference runtime configuration TensorCore#(4,4,32) (hardware.md §1). Sizes are compile-time
// constants so tiles are fixed-size arrays in the hot loop.
struct TensorCoreConfig {
  static constexpr int kRows = 4;  // MXU rows == cols == VPU sublanes == lanes
  static constexpr int kTileElems = kRows * kRows;
  static constexpr int kDepth = 32;  // VMEM, WeightSRAM and ActivationSRAM entries; addresses wrap mod 32
  static constexpr int kVregs = 16;
  static constexpr int kPsumBuckets = 8;
  static constexpr int kProgDepth = 256;
  static constexpr int kLoopDepth = 4;
  static constexpr int kMaxOutputs = 31;  // the testbench's output counters are 5 bits wide

  // The reference testbench prints "FAIL: timeout" once its cycle counter passes 50000. Long programs
  // (the simulator-speed benchmark) raise the limit; exceeding it is a SimError, never a hang.
  uint64_t max_cycles = 50000;
};

}  // namespace tinytpu
