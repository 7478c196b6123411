// The trace sink (sim/trace.h): which events each unit reports, at which cycles, and that every cycle
// of a run is accounted for. Expected cycles come from hardware.md §2.3 (MXU FSM), §2.7 (SXU costs) and
// §4.4 (the testbench's phases).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>

#include "base/errors.h"
#include "helpers.h"

using namespace tinytpu;
namespace fs = std::filesystem;

namespace {

struct Slice {
  uint64_t begin, end;
  std::string name;
  int pc;
  bool operator==(const Slice& o) const {
    return begin == o.begin && end == o.end && name == o.name && pc == o.pc;
  }
};
std::ostream& operator<<(std::ostream& os, const Slice& s) {
  return os << "[" << s.begin << "," << s.end << ") " << s.name << " pc " << s.pc;
}

std::vector<Slice> slices(const TraceLog& log, Track t, int depth) {
  std::vector<Slice> out;
  for (const TraceEvent& e : log.events())
    if (e.track == uint8_t(t) && e.depth == depth) out.push_back({e.begin, e.end, log.names()[e.name], e.pc});
  std::sort(out.begin(), out.end(), [](const Slice& a, const Slice& b) { return a.begin < b.begin; });
  return out;
}

uint64_t total(const std::vector<Slice>& s) {
  uint64_t n = 0;
  for (const Slice& x : s) n += x.end - x.begin;
  return n;
}

// Slices that follow one another without gap or overlap from `begin` to `end`.
void check_tiles(const std::vector<Slice>& s, uint64_t begin, uint64_t end) {
  REQUIRE(!s.empty());
  CHECK(s.front().begin == begin);
  for (size_t i = 1; i < s.size(); ++i) CHECK(s[i].begin == s[i - 1].end);
  CHECK(s.back().end == end);
}

void check_disjoint(const std::vector<Slice>& s) {
  for (size_t i = 1; i < s.size(); ++i) CHECK(s[i].begin >= s[i - 1].end);
}

// Every nested slice lies inside one parent slice of the same track.
void check_nested(const std::vector<Slice>& children, const std::vector<Slice>& parents) {
  for (const Slice& c : children) {
    bool inside = false;
    for (const Slice& p : parents) inside |= p.begin <= c.begin && c.end <= p.end;
    INFO(c);
    CHECK(inside);
  }
}

// The accounting every run satisfies: the loader track covers every cycle; the SXU's instructions cover
// exactly its run phase and add up to P; stalls, MXU phases and unit slices add up to the busy counters.
void check_accounting(const TraceLog& log, const RunResult& r) {
  check_tiles(slices(log, Track::kLoader, 0), 0, r.cycles);
  auto sxu = slices(log, Track::kSxu, 0);
  const auto loader = slices(log, Track::kLoader, 0);
  auto run = std::find_if(loader.begin(), loader.end(), [](const Slice& s) { return s.name == "run"; });
  REQUIRE(run != loader.end());
  check_tiles(sxu, run->begin, run->end);
  CHECK(total(sxu) == r.sxu_cycles);
  auto stalls = slices(log, Track::kSxu, 1);
  check_nested(stalls, sxu);
  CHECK(total(stalls) == r.busy.sxu_stall);
  auto mxu = slices(log, Track::kMxu, 0);
  check_disjoint(mxu);
  CHECK(total(mxu) == r.busy.mxu);
  auto phases = slices(log, Track::kMxu, 1);
  check_nested(phases, mxu);
  CHECK(total(phases) == r.busy.mxu);
  for (Track t : {Track::kVpu, Track::kXlu, Track::kVmem}) check_disjoint(slices(log, t, 0));
  CHECK(total(slices(log, Track::kVpu, 0)) == r.busy.vpu);
  CHECK(total(slices(log, Track::kXlu, 0)) == r.busy.xlu);
}

}  // namespace

TEST_CASE(
    "add_16: one SXU slice per instruction with its §2.7 cost, the loader's records and phases (§4.4)") {
  TraceLog log;
  RunResult r =
      run_bundle(assemble(test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/seed/add_16.tasm")), {}, &log);
  REQUIRE(r.cycles == 33);
  // R = 8 records: the SXU starts at 2R + 3 = 19. LOAD 3, VPU 3, STORE 2, HALT 1.
  CHECK(slices(log, Track::kSxu, 0) == std::vector<Slice>{{19, 22, "LOAD v0, VMEM[0]", 0},
                                                          {22, 25, "LOAD v1, VMEM[1]", 1},
                                                          {25, 28, "VPU v2 = ADD(v0, v1)", 2},
                                                          {28, 30, "STORE VMEM[2], v2", 3},
                                                          {30, 31, "HALT", 4}});
  // LOAD_REQ reads VMEM in the cycle after FETCH; the VPU works in its dispatch cycle; STORE writes in EXEC.
  CHECK(slices(log, Track::kVmem, 0) == std::vector<Slice>{{20, 21, "read VMEM[0]", 0},
                                                           {23, 24, "read VMEM[1]", 1},
                                                           {29, 30, "write VMEM[2]", 3}});
  CHECK(slices(log, Track::kVpu, 0) == std::vector<Slice>{{26, 27, "ADD", 2}});
  auto loader = slices(log, Track::kLoader, 0);
  REQUIRE(loader.size() == 14);
  CHECK(loader[0] == Slice{0, 1, "open bundle", -1});
  CHECK(loader[1] == Slice{1, 3, "VMEM[0]", -1});
  CHECK(loader[3] == Slice{5, 7, "program[0] LOAD v0, VMEM[0]", -1});
  CHECK(loader[8] == Slice{15, 17, "OUTPUT_VMEM VMEM[2]", -1});
  CHECK(loader[9] == Slice{17, 18, "END", -1});
  CHECK(loader[10] == Slice{18, 19, "start", -1});
  CHECK(loader[11] == Slice{19, 31, "run", -1});
  CHECK(loader[12] == Slice{31, 32, "running done", -1});
  CHECK(loader[13] == Slice{32, 33, "OUTPUT_VMEM VMEM[2]", -1});  // the final print is cycle 33
  check_accounting(log, r);
}

TEST_CASE("MXU dispatch and WAIT_MXU: WS phases per §2.3 and the SXU's stall on the MXU result") {
  for (int tiles : {1, 3}) {
    TraceLog log;
    RunResult r = run_bundle(assemble("WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\nAMEM[0] = 1 2 3 4\n"
                                      "AMEM[1] = 1 2 3 4\nAMEM[2] = 1 2 3 4\nMXU WMEM[0], AMEM[0], tiles=" +
                                      std::to_string(tiles) + "\nWAIT_MXU\nHALT\nEND\n"),
                             {}, &log);
    INFO("tiles=" << tiles);
    const uint64_t sxu0 = 2 * 7 + 3;  // 2R + 3, R = 4 memory records + 3 instructions
    const uint64_t T = sxu0 + 1;      // the MXU's EXEC (start) cycle, after its FETCH
    const uint64_t L = tiles + 3;     // tLen + rows - 1
    CHECK(slices(log, Track::kMxu, 0) ==
          std::vector<Slice>{{T + 1, T + 5 + L, "MXU WMEM[0], AMEM[0], tiles=" + std::to_string(tiles), 0}});
    CHECK(slices(log, Track::kMxu, 1) == std::vector<Slice>{{T + 1, T + 3, "load weights", -1},
                                                            {T + 3, T + 4 + L, "stream", -1},
                                                            {T + 4 + L, T + 5 + L, "drain", -1}});
    // WAIT_MXU: FETCH at T+1, polls from T+2 until Done is visible at T+5+L, where it retires.
    CHECK(slices(log, Track::kSxu, 0) ==
          std::vector<Slice>{{sxu0, T + 1, "MXU WMEM[0], AMEM[0], tiles=" + std::to_string(tiles), 0},
                             {T + 1, T + 6 + L, "WAIT_MXU", 1},
                             {T + 6 + L, T + 7 + L, "HALT", 2}});
    CHECK(slices(log, Track::kSxu, 1) == std::vector<Slice>{{T + 2, T + 5 + L, "MXU result", 1}});
    // DISPATCH_MXU followed by WAIT_MXU costs tLen + rows + 6 (§2.7).
    CHECK(T + 6 + L - sxu0 == uint64_t(tiles + 4 + 6));
    check_accounting(log, r);
  }
}

TEST_CASE("tracing changes nothing and accounts for every cycle of the recorded and seed programs") {
  int checked = 0;
  for (const char* dir : {"/reference", "/seed"}) {
    for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".bundle" && ext != ".tasm") continue;
      INFO(entry.path().filename().string());
      // Every one runs to HALT: each recorded .expected ends "status ok", and the seed kernels are the
      // benchmark's. A SimError fails the test (REQUIRE_NOTHROW names the program and the error).
      Bundle b = parse_bundle(test::read_file(entry.path()));
      RunResult plain;
      REQUIRE_NOTHROW(plain = run_bundle(b));
      TraceLog log;
      RunResult traced;
      REQUIRE_NOTHROW(traced = run_bundle(b, {}, &log));
      CHECK(traced.output() == plain.output());
      check_accounting(log, traced);
      ++checked;
    }
  }
  CHECK(checked >= 60);  // the 11 seed kernels and the 49 recorded programs
}

TEST_CASE("runs are laid end to end on one timeline") {
  TraceLog log;
  Bundle b = assemble(test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/seed/add_16.tasm"));
  run_bundle(b, {}, &log);
  run_bundle(b, {}, &log);
  CHECK(log.base == 66);
  auto sxu = slices(log, Track::kSxu, 0);
  REQUIRE(sxu.size() == 10);
  CHECK(sxu[5] == Slice{33 + 19, 33 + 22, "LOAD v0, VMEM[0]", 0});
}

namespace {
std::map<std::string, uint64_t> stall_cycles(const std::string& program) {
  TraceLog log;
  RunResult r = run_bundle(assemble(program), {}, &log);
  check_accounting(log, r);
  std::map<std::string, uint64_t> out;
  for (const Slice& s : slices(log, Track::kSxu, 1)) out[s.name] += s.end - s.begin;
  return out;
}
// A run without a trace (which takes shortcuts) against the same run traced (which ticks every cycle):
// the same results, cycles and unit counts. Returns the untraced run.
RunResult check_untraced_as_traced(const Bundle& b) {
  const RunResult plain = run_bundle(b);
  TraceLog log;
  const RunResult traced = run_bundle(b, {}, &log);
  CHECK(plain.output() == traced.output());
  CHECK(plain.sxu_cycles == traced.sxu_cycles);
  CHECK(plain.busy.vpu == traced.busy.vpu);
  CHECK(plain.busy.xlu == traced.busy.xlu);
  CHECK(plain.busy.mxu == traced.busy.mxu);
  CHECK(plain.busy.sxu_stall == traced.busy.sxu_stall);
  return plain;
}
// The same run timed out at `max_cycles`, untraced and traced: the same timeout error.
void check_timeout_as_traced(const Bundle& b, uint64_t max_cycles) {
  TensorCoreConfig cfg;
  cfg.max_cycles = max_cycles;
  std::string plain_error, traced_error;
  try {
    run_bundle(b, cfg);
  } catch (const SimError& e) {
    plain_error = e.what();
  }
  try {
    TraceLog timed_out;
    run_bundle(b, cfg, &timed_out);
  } catch (const SimError& e) {
    traced_error = e.what();
  }
  CHECK_THAT(plain_error, Catch::Contains("no HALT after"));
  CHECK(plain_error == traced_error);
}
const char* kData =
    "WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\nAMEM[0] = 1 2 3 4\n"
    "VMEM[0] = 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n";
}  // namespace

TEST_CASE("each stall is named by what the SXU waits for, with the cycles test_sxu.cc derives") {
  using Stalls = std::map<std::string, uint64_t>;
  // Back-to-back dispatches (dispatch EXEC at T): the second's EXEC is blocked T+2..T+8 until Done at
  // T+9; WAIT_MXU (FETCH T+10) polls T+11..T+17 and sees Done at T+18.
  CHECK(stall_cycles(std::string(kData) +
                     "MXU WMEM[0], AMEM[0], tiles=1\nMXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU\nHALT\nEND") ==
        Stalls{{"MXU busy", 7}, {"MXU result", 7}});
  // A synchronous FSUM_REDUCE_TILE (dispatch T, collect T+17, §2.4) waits in VPU_COLLECT T+1..T+16.
  CHECK(stall_cycles(std::string(kData) + "LOAD v0, VMEM[0]\nVPU v1 = FSUM_REDUCE_TILE(v0)\nHALT\nEND") ==
        Stalls{{"VPU result", 16}});
  // A VPU op after a background one (FETCH T+1): the VPU is busy T+2..T+16; at T+17 the result is
  // ready but its write-back fires in that cycle, so the dispatch goes at T+18.
  CHECK(stall_cycles(std::string(kData) +
                     "LOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\nVPU v2 = ADD(v0, v0)\nHALT\nEND") ==
        Stalls{{"VPU busy", 15}, {"VPU write-back", 1}});
  // An SXU PSUM write in the MXU drain cycle loses the port for one cycle (§8 item 2); WAIT_MXU then
  // polls until Done.
  auto psum = stall_cycles(std::string(kData) +
                           "LOAD v0, VMEM[0]\nMXU WMEM[0], AMEM[0], tiles=1, psum_write=PSUM[1], psum_row=0\n"
                           "VZERO v1\nVZERO v2\nVZERO v3\nPSUM_WRITE PSUM[2], v0\nWAIT_MXU\nHALT\nEND");
  CHECK(psum["PSUM port"] == 1);
  // The epilogue dispatch whose EXEC meets the VPU_BG collect waits one cycle (bsc G0010).
  std::string epi =
      std::string(kData) + "LOAD v0, VMEM[0]\nVPU_BG v1 = FSUM_REDUCE_TILE(v0)\nPSUM_READ v9, PSUM[0]\n";
  for (int i = 0; i < 6; ++i) epi += "VZERO v2\n";
  epi += "MXU_EPILOGUE v5 = GEMM(WMEM[0], AMEM[0], tiles=1) DST_VREG\nHALT\nEND";
  CHECK(stall_cycles(epi)["VPU write-back"] == 1);
}

TEST_CASE(
    "an untraced run takes a wait for a multi-cycle VPU op at once, with the traced run's every count") {
  // run_cycles skips the cycles in which the SXU only waits for the FpReducer or TranscUnit (vpu_wait_ahead);
  // a traced run ticks each of them. Both must agree on cycles, unit counts and results, also when the MXU
  // or the XLU works during the wait (no skipping then) and when the timeout falls inside it.
  const std::string programs[] = {
      "LOAD v0, VMEM[0]\nVPU v1 = EXP2(v0)\nVPU v2 = SIN(v1)\nSTORE VMEM[1], v2\nHALT\nOUTPUT_VMEM "
      "VMEM[1]\nEND",
      "LOAD v0, VMEM[0]\nVPU_BG v1 = LOG2(v0)\nVPU v2 = ADD(v0, v0)\nVPU_BG v3 = FSUM_REDUCE_TILE(v2)\n"
      "LOAD_VPU_RESULT v4\nSTORE VMEM[1], v4\nHALT\nOUTPUT_VMEM VMEM[1]\nEND",
      "LOAD v0, VMEM[0]\nMXU WMEM[0], AMEM[0], tiles=1\nVPU v1 = COS(v0)\nWAIT_MXU\nSTORE VMEM[1], v1\nHALT\n"
      "OUTPUT_VMEM VMEM[1]\nEND",
      "LOAD v0, VMEM[0]\nVPU_BG v1 = EXP2(v0)\nTRANSPOSE v2, v0\nSELECT v3 = SELECT(v2, v1, v0)\n"
      "STORE VMEM[1], v3\nHALT\nOUTPUT_VMEM VMEM[1]\nEND",
  };
  for (const std::string& program : programs) {
    INFO(program);
    const Bundle b = assemble(std::string(kData) + program);
    const RunResult plain = check_untraced_as_traced(b);
    CHECK(plain.busy.sxu_stall > 80);              // the TranscUnit's waits are there to be skipped
    check_timeout_as_traced(b, plain.start + 60);  // inside the first op's wait
  }
}

TEST_CASE(
    "an untraced run takes an instruction whole when only the SXU works in it, with the traced run's every "
    "count") {
  // run_cycles runs an instruction from FETCH to retirement at once when no other unit works
  // (Sxu::run_alone); a traced run ticks every cycle. On every recorded reference program (random programs
  // that mix the MXU, PSUM port conflicts, XLU write-backs, loops and skips) both must agree on results,
  // cycles and counts.
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/reference")) {
    if (entry.path().extension() != ".bundle") continue;
    INFO(entry.path().filename().string());
    check_untraced_as_traced(parse_wire(test::read_file(entry.path())));
    ++checked;
  }
  CHECK(checked >= 49);
  // A timeout in any cycle of an instruction taken whole names the same cycle and instruction as ticking.
  // The second program is the compiler's: background VPU ops and XLU broadcasts, each read by the next
  // instruction, whose write-backs land in that instruction's FETCH.
  for (const char* program : {"LOAD v0, VMEM[0]\nVPU v1 = ADD(v0, v0)\nSELECT v2 = SELECT(v0, v1, v0)\n"
                              "ROTATE v3, v2, amount=1\nSTORE VMEM[1], v3\n",
                              "LOAD v0, VMEM[0]\nVPU_BG v1 = ADD(v0, v0)\nVPU_BG v2 = MUL(v1, v1)\n"
                              "BROADCAST_SCALAR v3 = v2[1, 2]\nVPU_BG v4 = ADD(v3, v2)\n"
                              "SELECT v5 = SELECT(v0, v4, v3)\nSTORE VMEM[1], v5\n"}) {
    INFO(program);
    const Bundle b = assemble(std::string(kData) + program + "HALT\nOUTPUT_VMEM VMEM[1]\nEND");
    const RunResult whole = check_untraced_as_traced(b);
    for (uint64_t at = whole.start; at < whole.start + whole.sxu_cycles; ++at) {
      INFO("max_cycles " << at);
      check_timeout_as_traced(b, at);
    }
  }
}

TEST_CASE("a run that fails keeps its trace up to the error") {
  TraceLog log;
  TensorCoreConfig cfg;
  cfg.max_cycles = 100;
  CHECK_THROWS_AS(run_bundle(assemble("LOOP_BEGIN count=255\nVZERO v0\nLOOP_END\nHALT\nEND\n"), cfg, &log),
                  SimError);
  // Loading: R = 4 records, so the SXU starts at 11; the timeout fires at the start of cycle 101.
  CHECK(log.base == 101);
  auto sxu = slices(log, Track::kSxu, 0);
  REQUIRE(!sxu.empty());
  CHECK(sxu.front() == Slice{11, 13, "LOOP_BEGIN count=255", 0});
  CHECK(sxu.back().end <= 101);
  check_tiles(slices(log, Track::kLoader, 0), 0, 101);
}

namespace {
// 255 iterations of a 2-instruction loop: about 1,000 cycles and 1,800 events traced.
const char* kLoop = "LOOP_BEGIN count=255\nVZERO v0\nVZERO v1\nLOOP_END\nHALT\nEND\n";
}  // namespace

TEST_CASE(
    "at the event cap recording stops at one cycle, the open slices are closed there, the run goes on") {
  const Bundle b = assemble(kLoop);
  const RunResult plain = run_bundle(b);
  TraceLog log;
  log.max_events = 100;
  const RunResult traced = run_bundle(b, {}, &log);
  CHECK(traced.output() == plain.output());
  REQUIRE(log.stopped_at());
  const uint64_t stop = *log.stopped_at();
  CHECK(stop > 20);
  CHECK(stop < plain.cycles);
  // Beyond the cap only the slices open at the stop: one per track at most, and the MXU dispatch.
  CHECK(log.events().size() >= 100);
  CHECK(log.events().size() <= 100 + kNumTracks + 1);
  for (const TraceEvent& e : log.events()) CHECK(e.end <= stop);
  check_tiles(slices(log, Track::kLoader, 0), 0, stop);  // [0, stop) is whole
  check_tiles(slices(log, Track::kSxu, 0), 2 * 5 + 3, stop);
  CHECK(log.base == plain.cycles);
  CHECK(!log.recording());
  // Later runs go untraced and keep the timeline.
  const size_t n = log.events().size();
  CHECK(run_bundle(b, {}, &log).output() == plain.output());
  CHECK(log.events().size() == n);
  CHECK(log.base == 2 * plain.cycles);
}

TEST_CASE("a cycle window keeps the slices overlapping it, clipped to it, and paused records nothing") {
  const Bundle add = assemble(test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/seed/add_16.tasm"));
  TraceLog log;
  log.window_begin = 40;
  log.window_end = 60;
  for (int i = 0; i < 3; ++i) run_bundle(add, {}, &log);  // 33 cycles each: the window is in the second
  CHECK(log.base == 99);
  CHECK(!log.recording());
  REQUIRE(!log.events().empty());
  for (const TraceEvent& e : log.events()) CHECK((e.begin >= 40 && e.end <= 60));
  check_tiles(slices(log, Track::kLoader, 0), 40, 60);
  CHECK(!log.stopped_at());

  TraceLog paused;
  paused.paused = true;
  run_bundle(add, {}, &paused);
  CHECK(paused.events().empty());
  CHECK(paused.base == 33);
  paused.paused = false;
  run_bundle(add, {}, &paused);
  CHECK(slices(paused, Track::kSxu, 0).front() == Slice{33 + 19, 33 + 22, "LOAD v0, VMEM[0]", 0});
}
