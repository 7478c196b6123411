#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/tile.h"
#include "isa/instr.h"

namespace tinytpu {

// The reference testbench's bundle (hardware.md §4.2): records applied in order, then END.
enum class RecordType : uint8_t {
  kWeightTile = 0,
  kActTile = 1,
  kInstr = 2,
  kOutputMxu = 3,
  kEnd = 4,
  kVmemTile = 5,
  kOutputVmem = 6,
  kOutputAsram = 7,
  // A float MXU's (config mxu_dtype; not in the reference): WeightSRAM and ActivationSRAM entries of 32-bit
  // words.
  kWeightWords = 8,
  kActWords = 9,
};

struct Record {
  RecordType type;
  int addr = 0;  // tile address (0..depth-1) or, for kOutputMxu, the flag
  Tile data{};   // 16 values (VMEM, WMEM, WMEM32) or 4 (AMEM, AMEM32)
  Instr instr;
  int line = 0;  // source line, for messages
};

// Records before END; END itself is implied. R in the cycle formula is records.size().
struct Bundle {
  std::vector<Record> records;
};

// A tile of data (VMEM, WMEM, AMEM); the other records are the launch's program and output list.
inline bool is_data(const Record& r) {
  return r.type == RecordType::kVmemTile || r.type == RecordType::kWeightTile ||
         r.type == RecordType::kActTile || r.type == RecordType::kWeightWords ||
         r.type == RecordType::kActWords;
}
// An ActivationSRAM entry: a row of values, not a tile.
inline bool is_act_row(RecordType t) { return t == RecordType::kActTile || t == RecordType::kActWords; }
// A data record's TASM keyword (VMEM, WMEM, AMEM, WMEM32, AMEM32).
inline const char* data_keyword(RecordType t) {
  switch (t) {
    case RecordType::kWeightTile:
      return "WMEM";
    case RecordType::kActTile:
      return "AMEM";
    case RecordType::kWeightWords:
      return "WMEM32";
    case RecordType::kActWords:
      return "AMEM32";
    default:
      return "VMEM";
  }
}
// Whether two bundles hold the same program and output list: their records other than data, in order.
bool same_program(const Bundle& a, const Bundle& b);

// Numeric ("wire") format: whitespace-separated integers, '#' comments. Raises AsmError naming the line.
Bundle parse_wire(std::string_view text);
std::string to_wire(const Bundle& b);
// TASM when the first token is not an integer, wire format otherwise.
Bundle parse_bundle(std::string_view text);
// Checks every limit of the core: tile addresses below its depth, int8 MXU data, instruction fields, at
// most prog_depth instructions and max_outputs outputs of each kind (the reference: 32, 256, 31).
// Raises AsmError.
void validate(const Bundle& b, const TensorCoreConfig& cfg = {});
// What either text format may hold: the reference's limits with the deepest memories, a float and pipelined
// MXU's records and instructions. A run on a core without them refuses them (run_bundle validates against the
// core's configuration), so TASM and wire text accept the same bundles.
TensorCoreConfig format_limits();

}  // namespace tinytpu
