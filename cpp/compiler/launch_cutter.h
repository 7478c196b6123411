#pragma once
#include <algorithm>
#include <vector>

#include "base/config.h"
#include "compiler/launch.h"

namespace tinytpu::compiler {

// A launch's limits, from the configuration: program memory (the code and its HALT), VMEM tiles (or fewer:
// `slots`, when above 0), vregs, output records, and WMEM tiles / AMEM rows for the MXU.
struct Limits {
  int instrs, slots, vregs, drains, mxu_entries;
  explicit Limits(const TensorCoreConfig& c, int slots = 0)
      : instrs(c.prog_depth - 1),
        slots(slots > 0 ? std::min(slots, c.depth) : c.depth),
        vregs(c.vregs),
        drains(c.max_outputs),
        mxu_entries(c.depth) {}
};
// The limits an event can find full (LaunchCutter::no_room), named in the decision log.
constexpr const char* kNoInstrs = "instructions";
constexpr const char* kNoSlots = "VMEM tiles";
constexpr const char* kNoOutputs = "outputs";
constexpr const char* kNoVregs = "vregs";

// Cuts a batch's code into launches within the limits. The code comes as events (a node's or a store's
// instructions), each emitted into the current launch whole or not at all: an event that finds a limit full
// (no_room) is rolled back to its mark, the launch is cut, and the event is emitted again into a fresh one.
// At a cut, the values later events read move to host-side scratch through output tiles (spill()) and come
// back as fills. The emitter keeps room for that: one instruction, VMEM tile and output per vreg a cut would
// spill.
class LaunchCutter {
 public:
  LaunchCutter(const TensorCoreConfig& cfg, int nodes, int slots = 0)
      : lim(cfg, slots), spilled_(nodes, false) {}
  const Limits lim;

  Launch& launch() { return cur_; }
  // Room for `more` instructions, outputs (drain records) or output tiles (`outs` of them taken) in the
  // launch.
  bool fits_instrs(int more) const { return int(cur_.program.size()) + more <= lim.instrs; }
  bool fits_drains(int more) const { return int(cur_.drains.size()) + more <= lim.drains; }
  bool fits_slots(int outs, int more) const { return outs + more <= lim.slots; }

  // The event does not fit the launch: noted, not thrown (a throw per launch cost more than the rest of the
  // event). The first limit found names the cut; whether this was it.
  bool no_room(const char* why) {
    if (full_) return false;
    full_ = why;
    return true;
  }
  // The limit the current event found full, or null.
  const char* full() const { return full_; }

  // Where an event began, and the event undone to it (its limit names the cut).
  struct Mark {
    size_t program, fills, drains, mxu_fills, spills;
  };
  Mark begin_event() {
    full_ = nullptr;
    return {cur_.program.size(), cur_.fills.size(), cur_.drains.size(), cur_.mxu_fills.size(),
            spills_.size()};
  }
  void rollback(const Mark& m);

  // A value a later launch reads: STORE it from its vreg into an output slot, drained to scratch.
  void spill(int node, int vreg, int slot);
  // The node's value was saved in scratch by an earlier launch.
  bool spilled(int node) const { return spilled_[node]; }
  // Ends the launch with its HALT and starts another; false when it has nothing to run.
  bool finish();
  std::vector<Launch> take() { return std::move(launches_); }

 private:
  std::vector<bool> spilled_;
  std::vector<int> spills_;  // the nodes spilled in the current launch: in scratch once it ends (finish())
  std::vector<Launch> launches_;
  Launch cur_;
  const char* full_ = nullptr;
};

}  // namespace tinytpu::compiler
