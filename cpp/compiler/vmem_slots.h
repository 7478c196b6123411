#pragma once
#include <algorithm>
#include <array>

#include "base/config.h"
#include "compiler/contents.h"

namespace tinytpu::compiler {

// A launch's VMEM tiles: free, consumed by the LOAD that read the loader's fill (it may take an output, and
// still holds what was filled), or an output the launch drains. Slots past the configuration's depth stay
// kAbsent. Fixed arrays: a transaction saves the whole struct.
struct VmemSlots {
  enum State : uint8_t { kFree, kUsed, kOut, kAbsent };
  std::array<State, TensorCoreConfig::kMaxDepth> state{};  // written through set()
  std::array<Content, TensorCoreConfig::kMaxDepth> content{};
  int outs = 0;  // slots kOut, counted as they change (room checks ask for every vreg and output)

  void reset(int depth) {
    state.fill(kAbsent);
    std::fill_n(state.begin(), depth, kFree);
    outs = 0;
    content.fill(kNothing);
  }
  void set(int s, State to) {
    outs += int(to == kOut) - int(state[s] == kOut);
    state[s] = to;
  }
  // The first free slot, or kMaxDepth.
  int first_free() const { return int(std::find(state.begin(), state.end(), kFree) - state.begin()); }
  // The first slot that is no output (a value spilled at a cut goes there).
  int first_not_out() const {
    int s = 0;
    while (state[s] == kOut) ++s;
    return s;
  }
  // A slot holding `c`, or -1.
  int holding(Content c) const {
    auto s = std::find(content.begin(), content.end(), c);
    return s == content.end() ? -1 : int(s - content.begin());
  }
  // A slot made an output, holding nothing known: a free one or, unless `unfilled` (the loader fills it: a
  // slot an earlier fill used would be refilled before the program reads it), a consumed one; -1 without.
  int take_output(bool unfilled) {
    for (int s = 0; s < int(state.size()); ++s)
      if ((state[s] == kUsed && !unfilled) || state[s] == kFree) {
        set(s, kOut);
        content[s] = kNothing;
        return s;
      }
    return -1;
  }
};

}  // namespace tinytpu::compiler
