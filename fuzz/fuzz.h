// Shared by the libFuzzer targets. Each target feeds one front door arbitrary bytes; the project's own
// error types are the clean rejections it catches. Anything else is a finding libFuzzer reports with
// the input: an escaping exception (std::terminate), a sanitizer report, a timeout, or broken_invariant.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "isa/bundle.h"
#include "base/errors.h"

namespace tinytpu::fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input as a bundle (TASM or wire, as parse_bundle picks), or nothing when it is cleanly rejected.
inline std::optional<Bundle> bundle(const uint8_t* data, size_t size) {
  try {
    return parse_bundle(text(data, size));
  } catch (const AsmError&) {
    return std::nullopt;
  }
}

// An input was accepted but a property that must hold for it does not.
[[noreturn]] inline void broken_invariant(const std::string& what) {
  std::fprintf(stderr, "broken invariant: %s\n", what.c_str());
  std::abort();
}

}  // namespace tinytpu::fuzz
