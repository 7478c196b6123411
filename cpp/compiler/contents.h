#pragma once
#include <cstdint>

namespace tinytpu::compiler {

// What a VMEM slot or a vreg of a launch is known to hold, so that a later read in the launch takes it from
// there instead of filling another slot: a node's lanes (the node's index: a leaf, or a value spilled in the
// launch, Emitter::evict_value), a constant in every lane, or the launch's palette of constants
// (constant_tiles.h).
using Content = int64_t;
constexpr Content kNothing = INT64_MIN;
constexpr Content kConstTag = Content(1) << 40;
constexpr Content const_content(int32_t value) { return kConstTag + Content(uint32_t(value)); }
constexpr int32_t content_value(Content constant) { return int32_t(constant - kConstTag); }
constexpr Content kPalette = kConstTag - 1;

}  // namespace tinytpu::compiler
