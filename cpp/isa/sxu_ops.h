#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "base/config.h"

// BROADCAST_SCALAR's lane selector in vregSrc2, for the TASM template: the row in the high bits, the column
// in the low ones (TensorCoreConfig::kRowBits each).
#if TINYTPU_ROWS == 4
#define TINYTPU_LANE_SELECTOR "{vregSrc2[3:2]:row}, {vregSrc2[1:0]:row}"
#elif TINYTPU_ROWS == 8
#define TINYTPU_LANE_SELECTOR "{vregSrc2[5:3]:row}, {vregSrc2[2:0]:row}"
#else
#define TINYTPU_LANE_SELECTOR "{vregSrc2[7:4]:row}, {vregSrc2[3:0]:row}"
#endif

namespace tinytpu {

// The SXU opcodes, numbered in sxu_ops.def.
enum class SxuOpcode : uint8_t {
#define X(opcode, name, ...) name = opcode,
#include "isa/sxu_ops.def"
#undef X
};
// Every opcode in the .def's order, which the table below, indexed by opcode, relies on: 0, 1, 2, ...
inline constexpr SxuOpcode kSxuOpcodes[] = {
#define X(opcode, name, ...) SxuOpcode::name,
#include "isa/sxu_ops.def"
#undef X
};
constexpr int kNumSxuOps = int(std::size(kSxuOpcodes));
static_assert(
    [] {
      for (int i = 0; i < kNumSxuOps; ++i)
        if (int(kSxuOpcodes[i]) != i) return false;
      return true;
    }(),
    "sxu_ops.def lists opcodes 0, 1, 2, ... in order");

// How an opcode's unstalled cycles are made up (the .def's `timing` column; sim/timing.h computes them).
enum class SxuTiming : uint8_t { kFixed, kVpu, kMxu, kWait, kPsumBuckets };
// Whether a quiet core may take the instruction whole (the .def's `alone` column).
enum class SxuAlone : uint8_t { kNever, kAlways, kCombVpu };

// One row per SXU opcode (hardware.md §2.7). The TASM templates drive both the assembler and the
// disassembler (tasm.h documents the template language); the timing columns are described in the .def.
// The simulator's behaviour of each opcode is sim's, named by the .def's exec column.
struct SxuOpInfo {
  uint8_t opcode;
  const char* name;
  std::array<const char*, 2> tasm;  // canonical template first; nullptr when unused
  uint8_t cycles;
  SxuTiming timing;
  SxuAlone alone;
  bool reads_data;
};

extern const std::array<SxuOpInfo, kNumSxuOps> kSxuOps;  // indexed by opcode

const SxuOpInfo* find_sxu_op(std::string_view name);  // by `name`, case-insensitive

// Whether the opcode may write the vreg its vregDst field names: its canonical template names vregDst as a
// vreg (others use the field for a PSUM bucket or a row, or not at all).
bool may_write_vreg_dst(uint8_t opcode);

}  // namespace tinytpu
