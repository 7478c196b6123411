#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinytpu {

// TLog#(n): the bits of an index into n entries (a Bluespec RegFile or Vector of n).
constexpr int index_bits(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

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
// Everything else is a field (config_fields.def), checked by check().
#ifndef TINYTPU_ROWS
#define TINYTPU_ROWS 4
#endif
struct TensorCoreConfig {
  static constexpr int kRows = TINYTPU_ROWS;  // MXU rows == cols == VPU sublanes == lanes
  static constexpr int kTileElems = kRows * kRows;
  static constexpr int kRowBits = index_bits(kRows);  // a row or column number
  static_assert(1 << kRowBits == kRows, "the tile has 4, 8 or 16 rows");
  static constexpr int kMaxDepth = 256;  // 8-bit address fields (vmemAddr, mxuWBase, mxuABase: TASM `addr`)
  static constexpr int kMaxVregs = 16;   // 4-bit register fields
  static constexpr int kMaxPsumBuckets = 8;   // TASM `psum` operands are 0..7
  static constexpr int kMaxProgDepth = 256;   // the SXU's pc is 8 bits
  static constexpr int kMaxLoopDepth = 16;    // the loop stack's storage; `loop_depth` entries are used
  static constexpr int kMaxOutputs = 255;     // output records of each kind a bundle may hold
  static constexpr int kMaxHbmChannels = 64;  // a chip core's DMA engine keeps a queue for each

  // The fields, each declared once in config_fields.def (type, default, range, doc).
#define X(name, type, default_value, ...) type name = default_value;
#include "base/config_fields.def"
#undef X

  // The reference testbench prints "FAIL: timeout" once its cycle counter passes 50000. Long programs
  // (the simulator-speed benchmark) raise the limit; exceeding it is a SimError, never a hang.
  uint64_t max_cycles = 50000;

  // Throws std::invalid_argument naming the first field outside its row's range. Where a struct built in C++
  // enters (run_bundle(), CompiledKernel) it is called; set() checks the one field it sets.
  void check() const;
  std::string describe() const;  // "depth=32 vregs=16 ...": for messages and logs
  // Sets one field by name ("depth", "fetch_overlap", ...), checked against its row; throws
  // std::invalid_argument naming an unknown field or a value out of range.
  void set(std::string_view field, int value);
};

// One row of config_fields.def, for code that walks the fields by name (specs, bindings, the search).
struct ConfigField {
  enum class Rule : uint8_t { kRange, kPowerOfTwo };
  const char* name;
  bool is_bool;
  int default_value;
  Rule rule;
  int min, max;
  const char* doc;
  std::vector<int> explore;  // values a design-space search tries by default
  int (*get)(const TensorCoreConfig&);
  void (*put)(TensorCoreConfig&, int);  // unchecked: set() checks
  // Throws std::invalid_argument naming the field and value when `value` breaks the row.
  void check(int value) const;
};
const std::vector<ConfigField>& config_fields();

// An arithmetic unit at 45 nm (a row of arithmetic.def, or derived): its area and one operation's energy.
struct ArithmeticUnit {
  const char* name;
  double um2, pj;
  const char* doc;
};
// arithmetic.def's rows, then the bfloat16 multiplier derived from them (config.cc bf16_multiplier()).
const std::vector<ArithmeticUnit>& arithmetic_units();

// One PE's multiply-add by datatype, mxu_dtype's values: 0 int8 (an 8-bit integer multiplier and the int32
// accumulator's adder), 1 bf16 and 2 f32 (a bfloat16 or float32 multiplier and a float32 adder). Its area and
// the energy of one multiply-add are its units' sums. Throws std::invalid_argument for another datatype.
struct MxuPe {
  std::string dtype;  // "int8", "bf16", "f32"
  std::string units;  // the arithmetic units it is built of: "int8_mul + int32_add"
  double um2 = 0, pj = 0;
};
MxuPe mxu_pe(int mxu_dtype);

// What the hardware costs, as a designer would weigh it (proxies, not a layout):
//  - pes: multiply-accumulate cells of the MXU;
//  - pe_area: one cell's area in int8 PEs: 1 the reference's int8 PE; a float core's cell holds a float PE
//    beside it, which adds its units' area over the int8 PE's (mxu_pe());
//  - mxu: the cell's datatypes, "int8", "int8+bf16" or "int8+f32";
//  - sram_bytes: VMEM, both banks of WeightSRAM and ActivationSRAM (32-bit words on a float core, bytes on an
//    int8 one), the vector registers, PSUM and program memory (an instruction taken as 8 bytes), and a
//    pipelined MXU's second weight registers and skew delay lines;
//  - ports: memory ports and forwarding paths beyond the reference's one read and one write per unit;
//  - area: one number for a Pareto front, in PE equivalents: an int8 PE, 256 bytes of SRAM and a port or
//    forwarding path each count 1 (a chosen weighting, stated here so every figure uses the same one);
//  - a chip of several cores counts each core's; its NoC is not counted yet.
struct CostProxy {
  int pes = 0;
  double pe_area = 1;
  std::string mxu;
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
