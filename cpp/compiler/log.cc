#include "compiler/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>

namespace tinytpu {

spdlog::logger& decision_log() {
  static spdlog::logger& log = []() -> spdlog::logger& {
    static spdlog::logger logger("tinytpu", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger.set_pattern("[tinytpu %l] %v");
    const char* level = std::getenv("TINYTPU_LOG");
    logger.set_level(level ? spdlog::level::from_str(level) : spdlog::level::off);
    return logger;
  }();
  return log;
}

}  // namespace tinytpu
