// The run loop: parse a bundle (TASM or wire) and run it like the reference testbench under a small
// cycle cap, so a program that never halts must end in a SimError rather than a libFuzzer timeout.
// Clean rejections: AsmError (input), SimError (a run the reference would hang or time out on).
#include "base/errors.h"
#include "fuzz.h"
#include "isa/bundle.h"
#include "sim/runner.h"

using namespace tinytpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  TensorCoreConfig cfg;
  cfg.max_cycles = 4000;
  try {
    RunResult res = run_bundle(parse_bundle(fuzz::text(data, size)), cfg);
    if (res.cycles > cfg.max_cycles)
      fuzz::broken_invariant("ran " + std::to_string(res.cycles) + " cycles, past the cap");
  } catch (const AsmError&) {
  } catch (const SimError&) {
  }
  return 0;
}
