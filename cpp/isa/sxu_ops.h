#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "sim/config.h"

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

class TensorCore;

// What one EXEC cycle of an SXU instruction did. BSV rules either fire or are blocked by a guard;
// a blocked rule leaves the SXU in place (a stall) and lets a conflicting background rule fire. A stall
// says what it waits for: the profiler reports the causes.
enum class Exec : uint8_t {
  kFired,         // the rule fired; the instruction needs more EXEC cycles (step advances)
  kNext,          // finished: pc + 1, back to FETCH
  kJump,          // finished: the function set pc itself, back to FETCH
  kAwaitCollect,  // dispatched a synchronous VPU op: wait in VPU_COLLECT for the write-back
  // Stalls: nothing happened this cycle (or WAIT_MXU polled); step stays.
  kStallVpuWriteback,  // a VPU result is still to be written back to a vreg
  kStallVpuBusy,       // a multi-cycle VPU op is running
  kStallVpuResult,     // a synchronous VPU op waits for its result (VPU_COLLECT)
  kStallXluResult,     // the previous XLU result is collected this cycle
  kStallMxuBusy,       // the MXU is running a dispatch
  kStallMxuResult,     // waits for the MXU to reach Done
  kStallPsumPort,      // the MXU drain owns the PSUM write port
  kStallLoad,          // a memory entry's record has not arrived (the DMA loader variant, config.h)
};
constexpr Exec kFirstStall = Exec::kStallVpuWriteback;
constexpr int kNumStalls = 8;
inline bool is_stall(Exec e) { return e >= kFirstStall; }
extern const std::array<const char*, kNumStalls> kStallNames;  // indexed by e - kFirstStall

using SxuExecFn = Exec (*)(TensorCore& tc);

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

// One row per SXU opcode (hardware.md §2.7). The TASM templates drive both the assembler and the
// disassembler (tasm.h documents the template language); `exec` is the instruction's behaviour in
// one EXEC cycle, defined in sim/sxu.cc; `cycles` documents the unstalled cost including FETCH.
struct SxuOpInfo {
  uint8_t opcode;
  const char* name;
  std::array<const char*, 2> tasm;  // canonical template first; nullptr when unused
  SxuExecFn exec;
  const char* cycles;
};

extern const std::array<SxuOpInfo, kNumSxuOps> kSxuOps;  // indexed by opcode

const SxuOpInfo* find_sxu_op(std::string_view name);  // by `name`, case-insensitive

// Whether the opcode may write the vreg its vregDst field names: its canonical template names vregDst as a
// vreg (others use the field for a PSUM bucket or a row, or not at all).
bool may_write_vreg_dst(uint8_t opcode);

}  // namespace tinytpu
