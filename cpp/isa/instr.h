#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "base/config.h"

namespace tinytpu {

// SxuInstr (hardware.md §2.7): nine fields, in the order of a type-2 bundle record.
struct Instr {
  uint8_t op = 0, vmemAddr = 0, vregDst = 0, vregSrc = 0, vpuOp = 0, vregSrc2 = 0, mxuWBase = 0, mxuABase = 0,
          mxuTLen = 0;
};

// DISPATCH_MXU's PSUM deposit, in vregSrc2's low two bits (hardware.md §2.7).
enum class PsumMode : uint8_t { kOff = 0, kWrite = 1, kAccumulate = 2, kInvalid = 3 };

constexpr int kNumFields = 9;
struct FieldInfo {
  const char* name;
  uint8_t Instr::*member;
  int width;  // bits kept by the testbench when it loads the record
};
inline constexpr std::array<FieldInfo, kNumFields> kFields = {{
    {"op", &Instr::op, 6},
    {"vmemAddr", &Instr::vmemAddr, 8},
    {"vregDst", &Instr::vregDst, 4},
    {"vregSrc", &Instr::vregSrc, 4},
    {"vpuOp", &Instr::vpuOp, 7},
    // BROADCAST_SCALAR's lane selector takes a row and a column number: 4 bits at 4x4, wider on wider tiles
    {"vregSrc2", &Instr::vregSrc2, std::max(4, 2 * TensorCoreConfig::kRowBits)},
    {"mxuWBase", &Instr::mxuWBase, 8},
    {"mxuABase", &Instr::mxuABase, 8},
    {"mxuTLen", &Instr::mxuTLen, 8},
}};

inline bool operator==(const Instr& a, const Instr& b) {
  for (const auto& f : kFields)
    if (a.*(f.member) != b.*(f.member)) return false;
  return true;
}

}  // namespace tinytpu
