#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace tinytpu {

class TensorCore;

// What one EXEC cycle of an SXU instruction did. BSV rules either fire or are blocked by a guard;
// a blocked rule leaves the SXU in place (a stall) and lets a conflicting background rule fire.
enum class Exec : uint8_t {
  kBlocked,      // guard false: nothing happened this cycle
  kFired,        // the rule fired; the instruction needs more EXEC cycles (step advances)
  kPoll,         // the rule fired but made no progress (WAIT_MXU polling); step stays
  kNext,         // finished: pc + 1, back to FETCH
  kJump,         // finished: the function set pc itself, back to FETCH
  kAwaitCollect  // dispatched a synchronous VPU op: wait in VPU_COLLECT for the write-back
};
using SxuExecFn = Exec (*)(TensorCore& tc);

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

constexpr int kNumSxuOps = 47;
extern const std::array<SxuOpInfo, kNumSxuOps> kSxuOps;  // indexed by opcode

const SxuOpInfo* find_sxu_op(std::string_view name);  // by `name`, case-insensitive

}  // namespace tinytpu
