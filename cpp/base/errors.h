#pragma once
#include <stdexcept>
#include <string>

namespace tinytpu {

// Malformed input: TASM or bundle text, fields out of range, limits exceeded. Python: ValueError.
struct AsmError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run the reference would hang or time out on (WAIT_MXU with no dispatch, undefined opcode, cycle
// limit), reported with pc and instruction. Python: tinytpu.SimError.
struct SimError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tinytpu
