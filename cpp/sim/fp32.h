#pragma once
#include <cstdint>

namespace tinytpu::fp32 {

// float32 as bsc's FloatingPoint library computes it (hardware.md §3.4): IEEE-754 RNE with gradual
// underflow, NaN operands propagated by bsc's precedence (sNaN a, sNaN b, qNaN a, qNaN b; a signalling
// NaN comes back quieted), and every invalid operation (inf-inf, 0*inf) giving 0x7FC00000.
// Values are raw bit patterns as carried in the Int32 lanes.
uint32_t add(uint32_t a, uint32_t b);
uint32_t sub(uint32_t a, uint32_t b);  // add(a, b with its sign bit flipped)
uint32_t mul(uint32_t a, uint32_t b);

enum class Order : uint8_t { kLT, kEQ, kGT, kUO };
Order compare(uint32_t a, uint32_t b);  // any NaN -> kUO; +0 == -0
// The VPU FMAX/FMIN select, also the reducers' MAX/MIN step: compare(a, b) in {GT, EQ} (max_of) or
// {LT, EQ} (min_of) ? a : b. Raw bits pass through; a NaN in either operand selects b.
uint32_t max_of(uint32_t a, uint32_t b);
uint32_t min_of(uint32_t a, uint32_t b);

uint32_t from_int(int32_t x);  // VPU_I2F: truncates toward zero above 2^24
int32_t to_int(uint32_t f);    // VPU_F2I: truncates; NaN/inf -> 0; overflow wraps (hardware.md §3.4)
// to_int's conversion without its NaN/inf -> 0 rule: TranscUnit's tr_fp_to_int (hardware.md §2.5).
int32_t to_int_keep_special(uint32_t f);

constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
constexpr uint32_t kOne = 0x3F800000u;
constexpr uint32_t kSignBit = 0x80000000u;

inline bool is_nan(uint32_t f) { return (f & 0x7F800000u) == 0x7F800000u && (f & 0x007FFFFFu) != 0; }

}  // namespace tinytpu::fp32
