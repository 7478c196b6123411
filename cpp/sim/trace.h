#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/config.h"
#include "isa/instr.h"

namespace tinytpu {

// One track per unit in a trace (trace_format.def's TRACK rows). kKernel holds the tinygrad kernels and their
// launches; kLoader the testbench's phases: loading records, start, run, output.
enum class Track : uint8_t {
#define TRACK(name, ...) name,
#include "sim/trace_format.def"
};
constexpr int kNumTracks = 0
#define TRACK(...) +1
#include "sim/trace_format.def"
    ;

// One slice of a track, [begin, end) in cycles of the trace's timeline. Depth 0 is a unit's own work
// (an instruction, an MXU dispatch, a VPU op, a record, a kernel); depth 1 nests inside it (an SXU stall
// with its cause, an MXU phase, a launch). Python reads the events as raw bytes, in the layout the bindings
// export of trace_format.def's FIELD rows.
struct TraceEvent {
#define FIELD(type, name, doc) type name{};
#include "sim/trace_format.def"
  uint16_t unused[3] = {};  // to 32 bytes, zeroed
};
static_assert(sizeof(TraceEvent) == 32, "32 bytes an event (docs/profiling.md: a trace's memory)");

// The optional event sink of the model. TensorCore holds a pointer to one, null by default: the
// per-cycle path is compiled without tracing then (TensorCore::tick<false>), and each dispatch site
// tests the pointer once. Runs are laid end to end: a run's cycle c is at base + c on the timeline, and
// end_run() moves base past the run.
//
// What is kept is bounded: at most max_events events (0: no cap), then recording stops for good at the
// cycle reached (stopped_at()); the slices still open there are closed at it, so the trace covers
// [0, stopped_at) whole. Only slices overlapping [window_begin, window_end) are kept, clipped to it, and
// none while paused. A run started while !recording() goes untraced (run_bundle) and skip()s the timeline.
class TraceLog {
 public:
  static constexpr size_t kDefaultMaxEvents = 2'000'000;  // 64 MB here, about 330 MB of Chrome JSON
  uint64_t base = 0;
  // The core whose runs are recorded: on a chip, its kernels go at the core's place on the chip's timeline
  // (base set to it), so the cores' tracks overlap as their kernels do.
  uint16_t core = 0;
  size_t max_events = kDefaultMaxEvents;
  uint64_t window_begin = 0, window_end = UINT64_MAX;
  bool paused = false;

  bool recording() const { return !paused && !stopped_at_ && base < window_end; }
  std::optional<uint64_t> stopped_at() const { return stopped_at_; }
  void skip(uint64_t cycles) { base += cycles; }  // an untraced run

  uint32_t intern(std::string_view name);
  // A name with static storage (a literal, a name from an opcode table), optionally with "[index]"
  // appended: cached by address, so the per-cycle reports build no strings.
  uint32_t name(const char* literal, int index = -1);
  void slice(Track t, int depth, uint64_t begin, uint64_t end, uint32_t name, int pc = -1);  // run cycles
  // Timeline cycles. An enclosing slice (a kernel, a launch) never stops recording: it is kept, clipped,
  // when it began before the stop.
  void span(Track t, int depth, uint64_t begin, uint64_t end, uint32_t name);
  // One cycle of a per-cycle state (a stall, an MXU phase, a testbench phase): consecutive cycles with
  // the same state coalesce into one slice.
  void state(Track t, int depth, uint64_t cycle, uint32_t name, int pc = -1);
  // The TASM text of the instruction at pc, cached for the run: the program does not change during one.
  uint32_t instr_name(int pc, const Instr& in);

  void begin_run();
  // Closes what is still open (an MXU dispatch the program never waited for) and clips every slice of
  // the run to its `cycles` (and drops what began after a stop), then advances base.
  void end_run(uint64_t cycles);

  // An MXU dispatch is a depth-0 slice from its first busy cycle to the cycle it reaches Done.
  void mxu_started(uint64_t first_busy_cycle, uint32_t name, int pc);
  void mxu_done(uint64_t cycle);

  const std::vector<TraceEvent>& events() const { return events_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  void close_state(Track t);
  // Keeps `e` if it lies in what is recorded (clipped to it); at the cap, stops recording at e's begin.
  void record(TraceEvent e, bool may_stop = true);

  std::vector<TraceEvent> events_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<uint64_t, uint32_t> static_ids_;       // (address << 16) + index + 1
  std::array<std::optional<TraceEvent>, kNumTracks> open_;  // the state being coalesced, per track
  std::array<int64_t, TensorCoreConfig::kMaxProgDepth> pc_names_{};
  std::optional<TraceEvent> mxu_;  // the running dispatch
  size_t run_first_event_ = 0;
  std::optional<uint64_t> stopped_at_;
};

}  // namespace tinytpu
