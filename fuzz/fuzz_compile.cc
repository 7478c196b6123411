// The compiler and executor behind the IR parser: whatever parses is compiled and run on four 256-byte
// buffers with every symbolic variable 3. Clean rejections: compiler::Unsupported, std::invalid_argument
// (malformed IR) and SimError, except the executor's "internal error" (another exception it caught).
#include <stdexcept>

#include "base/errors.h"
#include "fuzz.h"
#include "runtime/executor.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    CompiledKernel kernel(fuzz::text(data, size));
    std::vector<DeviceBuffer> bufs;
    for (int i = 0; i < 4; ++i) bufs.emplace_back(256);
    kernel.run(bufs, {3, 3, 3, 3}, false);
  } catch (const compiler::Unsupported&) {
  } catch (const std::invalid_argument&) {
  } catch (const SimError& e) {
    if (std::string_view(e.what()).find("internal error") != std::string_view::npos)
      fuzz::broken_invariant(e.what());
  }
  return 0;
}
