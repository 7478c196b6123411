#pragma once
#include <cstdint>

namespace tinytpu {

// TranscUnit#(16) (hardware.md §2.5): each lane runs a fixed sequence of RNE float ops.
// These functions compute one lane's final value bit-exactly; the VPU model supplies the timing
// (16 lanes x steps cycles). Steps per lane: EXP2 7, LOG2 6, SIN 11, COS 5.
enum class TranscOp : uint8_t { kExp2, kLog2, kSin, kCos };
constexpr int transc_steps(TranscOp op) {
  return op == TranscOp::kExp2 ? 7 : op == TranscOp::kLog2 ? 6 : op == TranscOp::kSin ? 11 : 5;
}
uint32_t transc_lane(TranscOp op, uint32_t x);

}  // namespace tinytpu
