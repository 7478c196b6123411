#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinytpu {

// The TensorCore's sizes: one run-time value that the compiler, the plan and the simulator all take.
// The default is the reference runtime configuration TensorCore#(4,4,32) (hardware.md §1).
//
// What is fixed when the model is built, and why:
//  - the tile geometry (kRows, the build's TINYTPU_ROWS): tiles and vregs are fixed-size arrays in the
//    simulator's hot loop. mkTensorCore is parameterised TensorCore#(rows, cols, depth) with rows == cols
//    (hardware.md §1); the reference instance has 4, and the Python package holds one extension module
//    per geometry it ships (4 and 8 rows);
//  - the encoding bounds (kMax*): TASM and the bundle's instruction fields are the reference ISA's, so
//    a configuration can shrink a memory below what an instruction field addresses, never grow it.
// Everything else is a field, checked by check().
#ifndef TINYTPU_ROWS
#define TINYTPU_ROWS 4
#endif
struct TensorCoreConfig {
  static constexpr int kRows = TINYTPU_ROWS;  // MXU rows == cols == VPU sublanes == lanes
  static constexpr int kTileElems = kRows * kRows;
  static constexpr int kRowBits = kRows == 4 ? 2 : kRows == 8 ? 3 : 4;  // log2(kRows): a row or column number
  static_assert(1 << kRowBits == kRows, "the tile has 4, 8 or 16 rows");
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

  // Micro-architecture switches: hardware changes a designer could build (named_configs() below). Their
  // defaults are the reference; every other value changes timing only, never a result.
  //  - fetch_overlap: the SXU fetches the next instruction in the last EXEC cycle of the current one, so
  //    an instruction costs its EXEC cycles alone. A taken branch still refetches (one bubble). XLU
  //    and VPU write-backs are forwarded to the instruction executing in the cycle they land.
  //  - record_cycles: loader cycles per bundle record. The reference testbench reads a record's type in
  //    one cycle and applies it in the next (2); a loader with the type beside the payload on its bus
  //    takes one.
  //  - dma_overlap: the loader sends the program and output records first; the SXU starts once they are
  //    in, while the data records (VMEM, WeightSRAM, ActivationSRAM tiles) keep arriving one per
  //    record_cycles. An access to a VMEM entry whose record has not arrived waits for it (a read, and
  //    a write, which the record would otherwise overwrite); an MXU dispatch waits for every
  //    WeightSRAM and ActivationSRAM record; the outputs wait for every record.
  //  - prefetch_launches: program memory, VMEM, WeightSRAM and ActivationSRAM are double-banked. While a
  //    launch runs, the loader fills the other banks with the next launch of the same kernel call; the
  //    next launch starts once its records are in and the current one has output its results. A launch
  //    that reads a value the launch before it output starts loading only after that output.
  //  - resident_program: program memory keeps programs across launches and kernel calls. It is a ring of
  //    whole programs (prog_depth entries, both banks' with prefetch_launches): a new one is written after
  //    the last one written, evicting those it overwrites; a launch starts at its program's first entry
  //    (SXU programs have no absolute branch targets). Beside it, each resident program's output list.
  //    The host knows what it sent: a launch whose program and output list are resident sends neither,
  //    only its data records (the loader opens the bundle, sends the data, END and starts). With launch
  //    prefetch, a launch whose program would overwrite the running launch's loads after it ends.
  bool fetch_overlap = false;
  int record_cycles = 2;
  bool dma_overlap = false;
  bool prefetch_launches = false;
  bool resident_program = false;

  // The reference testbench prints "FAIL: timeout" once its cycle counter passes 50000. Long programs
  // (the simulator-speed benchmark) raise the limit; exceeding it is a SimError, never a hang.
  uint64_t max_cycles = 50000;

  // Throws std::invalid_argument naming the first field outside what the model supports. Wrapping
  // sizes are powers of two: the hardware drops an address's high bits.
  void check() const;
  std::string describe() const;  // "depth=32 vregs=16 ...": for messages and logs
  // Sets one field by name ("depth", "fetch_overlap", ...); throws std::invalid_argument naming an
  // unknown one. The value is checked by check().
  void set(std::string_view field, int value);
};

// What the hardware costs, as a designer would weigh it (proxies, not a layout):
//  - pes: multiply-accumulate cells of the MXU;
//  - sram_bytes: VMEM, both banks of WeightSRAM and ActivationSRAM, the vector registers, PSUM and
//    program memory (an instruction taken as 8 bytes);
//  - ports: memory ports and forwarding paths beyond the reference's one read and one write per unit;
//  - area: one number for a Pareto front, in PE equivalents: a PE, 256 bytes of SRAM and a port or
//    forwarding path each count 1 (a chosen weighting, stated here so every figure uses the same one).
struct CostProxy {
  int pes = 0;
  int64_t sram_bytes = 0;
  int ports = 0;
  double area = 0;
};
CostProxy cost_proxy(const TensorCoreConfig& cfg);

// The named TensorCore variants: the reference first, then each hardware change beside it.
struct NamedConfig {
  std::string name;
  std::string change;  // one line: what differs from the reference
  TensorCoreConfig config;
};
const std::vector<NamedConfig>& named_configs();
// "NAME" or "NAME,field=value,...": a named configuration with fields changed. Throws
// std::invalid_argument naming an unknown configuration (and the known ones) or field.
TensorCoreConfig config_from_spec(std::string_view spec);

}  // namespace tinytpu
