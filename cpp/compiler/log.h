#pragma once
#include <spdlog/spdlog.h>

namespace tinytpu {

// The compiler's decision log (stderr): what each kernel became and why. The level comes from the
// environment variable TINYTPU_LOG (off, info, debug; off by default) when the log is first used.
// Messages are formatted only at an enabled level, so a call site costs one comparison when off.
spdlog::logger& decision_log();

}  // namespace tinytpu
