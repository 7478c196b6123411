#pragma once
#include <array>
#include <cstdint>
#include <optional>
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

// The values of sxu_ops.def's columns. Unscoped enums in a namespace of their own, so that the rows name them
// bare and everything else as SxuTiming::kFixed, MxuStart::kOS, ...
namespace sxu_columns {
// How an opcode's unstalled cycles are made up (the `timing` column; sim/timing.h computes them).
enum SxuTiming : uint8_t { kFixed, kVpu, kMxu, kWait, kPsumBuckets };
// Whether a quiet core may take the instruction whole (the `alone` column).
enum SxuAlone : uint8_t { kNever, kAlways, kCombVpu };
// The MXU Controller's start methods (hardware.md §2.3), one per dispatching opcode (the `mxu_start` column).
enum MxuStart : uint8_t {
  kPsum,          // DISPATCH_MXU: WS, clears at start and drain, optional PSUM row deposit
  kAccumulate,    // DISPATCH_MXU_ACCUMULATE: WS without clears
  kOS,            // DISPATCH_MXU_OS
  kOSAccumulate,  // DISPATCH_MXU_OS_ACCUMULATE
  kEpilogue,      // DISPATCH_MXU_EPILOGUE
  kRequant,       // DISPATCH_MXU_REQUANT
  kGeneric,       // DISPATCH_MXU_VPU_EPILOGUE
  kOSFloat,       // DISPATCH_MXU_OS_FLOAT: a float MXU's (config mxu_dtype)
  kOSFloatAccumulate,
  kSeed,  // DISPATCH_MXU_SEED
};
inline constexpr std::nullopt_t kNone = std::nullopt;  // starts no dispatch
// How the EXEC waits for a pending VPU write-back (the `vpu_wb_wait` column).
enum VpuWbWait : uint8_t { kUnguarded, kGuarded, kGuardedStep2, kCollect };
}  // namespace sxu_columns
using sxu_columns::MxuStart;
using sxu_columns::SxuAlone;
using sxu_columns::SxuTiming;
using sxu_columns::VpuWbWait;

constexpr bool float_dispatch(MxuStart s) {
  return s == MxuStart::kOSFloat || s == MxuStart::kOSFloatAccumulate || s == MxuStart::kSeed;
}
constexpr bool output_stationary(MxuStart s) {
  return s == MxuStart::kOS || s == MxuStart::kOSAccumulate || float_dispatch(s);
}
// The starts that keep the PE accumulators (every other clears them).
constexpr bool accumulating(MxuStart s) {
  return s == MxuStart::kAccumulate || s == MxuStart::kOSAccumulate || s == MxuStart::kOSFloatAccumulate ||
         s == MxuStart::kSeed;
}
// The output-stationary starts that replace the accumulators: a pipelined MXU's output bank takes them first.
constexpr bool replacing(MxuStart s) {
  return s == MxuStart::kOS || s == MxuStart::kOSFloat || s == MxuStart::kSeed;
}
// The epilogue dispatches hold the SXU until they are Done (hardware.md §2.7: 42, 46); the others are async.
constexpr bool synchronous(MxuStart s) { return s == MxuStart::kEpilogue || s == MxuStart::kGeneric; }

// One row per SXU opcode (hardware.md §2.7). The TASM templates drive both the assembler and the
// disassembler (tasm.h documents the template language); the columns are described in the .def.
// The simulator's behaviour of each opcode is sim's, named by the .def's fn column.
struct SxuOpInfo {
  uint8_t opcode;
  const char* name;
  std::array<const char*, 2> tasm;  // canonical template first; nullptr when unused
#define SXU_OP_COLUMN(type, name) type name;
#include "isa/sxu_ops.def"
#undef SXU_OP_COLUMN
};

// TASM templates: see isa/tasm.h for the template language. Mnemonics follow the reference's TASM
// (hardware.md §5); opcodes it has no mnemonic for get the names TRANSPOSE, PSUM_*, SET_PRED_*,
// SKIP_IF_*, PSUM_CLEAR_ALL.
#define WAR "WMEM[{mxuWBase:addr}], AMEM[{mxuABase:addr}]"
#define GEMM "{vregDst:vreg} = GEMM(" WAR ", tiles={mxuTLen:tiles})"
#define SXU_OP_COLUMNS(...) __VA_ARGS__
namespace sxu_columns {
inline constexpr std::array<SxuOpInfo, kNumSxuOps> kSxuOps = {{
#define X(opcode, name, mnemonic, fn, columns, ...) \
  {uint8_t(SxuOpcode::name), mnemonic, {__VA_ARGS__}, SXU_OP_COLUMNS columns},
#include "isa/sxu_ops.def"
#undef X
}};
}  // namespace sxu_columns
#undef SXU_OP_COLUMNS
#undef GEMM
#undef WAR
using sxu_columns::kSxuOps;  // indexed by opcode

const SxuOpInfo* find_sxu_op(std::string_view name);  // by `name`, case-insensitive

// Whether the opcode may write the vreg its vregDst field names: its canonical template names vregDst as a
// vreg (others use the field for a PSUM bucket or a row, or not at all).
bool may_write_vreg_dst(uint8_t opcode);

}  // namespace tinytpu
