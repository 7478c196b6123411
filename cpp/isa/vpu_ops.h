#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "base/tile.h"

namespace tinytpu {

// How the VPU executes an op (hardware.md §2.4): combinationally (result readable next cycle), through
// the shared FpReducer (16 cycles), or through the shared TranscUnit (16 lanes x `transc_steps`).
enum class VpuKind : uint8_t { kComb, kFpReduce, kTransc };
// The datapath a lane's op exercises, which the energy model prices (vpu_ops.def says which each op is).
enum class VpuEnergy : uint8_t { kInt, kIntMul, kFpAdd, kFpMul };

// Semantics: out = op(a, b). `prev` is the VPU result register before this op (only SELECT reads it).
// Multi-cycle ops compute their final value here too; the VPU model supplies the timing.
using VpuFn = void (*)(const Tile& a, const Tile& b, const Tile& prev, Tile& out);

// The VPU opcodes, numbered in vpu_ops.def.
enum class VpuOpcode : uint8_t {
#define X(opcode, name, ...) name = opcode,
#include "isa/vpu_ops.def"
#undef X
};
// Every opcode in the .def's order, which the table below, indexed by opcode, relies on: 0, 1, 2, ...
inline constexpr VpuOpcode kVpuOpcodes[] = {
#define X(opcode, name, ...) VpuOpcode::name,
#include "isa/vpu_ops.def"
#undef X
};
constexpr int kNumVpuOps = int(std::size(kVpuOpcodes));
static_assert(
    [] {
      for (int i = 0; i < kNumVpuOps; ++i)
        if (int(kVpuOpcodes[i]) != i) return false;
      return true;
    }(),
    "vpu_ops.def lists opcodes 0, 1, 2, ... in order");

struct VpuOpInfo {
  uint8_t opcode;
  const char* name;  // TASM mnemonic, e.g. "ADD", "FSUM_REDUCE_TILE"
  uint8_t arity;     // 1: src2 ignored; 2: binary
  VpuKind kind;
  VpuEnergy energy;
  uint8_t transc_steps;  // FP ops per lane in the TranscUnit (kTransc only)
  VpuFn fn;
};

extern const std::array<VpuOpInfo, kNumVpuOps> kVpuOps;  // indexed by opcode

// Case-insensitive mnemonic lookup; nullptr when unknown.
const VpuOpInfo* find_vpu_op(std::string_view name);

// Cycles from dispatch (cycle T) to the first cycle the VPU reports isDone: 1 for combinational ops,
// 17 for FpReducer ops, 16*steps+2 for TranscUnit ops (hardware.md §2.4).
int vpu_done_latency(const VpuOpInfo& op);

}  // namespace tinytpu
