// Independent groups of runs (compiler/independent.h): which of a plan's runs a call may run at once, on
// threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>

#include "compiler/independent.h"

using namespace tinytpu;
using namespace tinytpu::compiler;

namespace {
// A plan over two buffers: slot 0 stored to (128 elements), slot 1 loaded from (64); the counter slot is 2
// and memo buffer 0 is slot 3.
struct PlanMaker {
  Plan plan;
  PlanMaker() {
    plan.written = {true, false};
    plan.memo_sizes = {64};
    plan.strided.push_back({1, kLanes, 0, 1, kRows});  // 16 consecutive elements of slot 1
    plan.sources.push_back({TileSource::Kind::kStrided, 0});
  }
  std::vector<int64_t> sizes() const { return {128, 64, 0, 64}; }
  int source(TileSource::Kind kind, int id) {
    plan.sources.push_back({kind, id});
    return int(plan.sources.size()) - 1;
  }
  // A launch filling one tile from `source` and keeping it (as scratch or pinned tile `keep`) or storing it
  // to 16 consecutive elements of `store_buf` from `store_at`.
  int64_t launch(int source, std::optional<Keep> keep, int store_buf = -1, int64_t store_at = 0) {
    PlanLaunch l;
    l.fills.push_back({0, source});
    if (keep) l.keeps.push_back(*keep);
    if (store_buf >= 0) {
      if (plan.lane_offsets.empty()) {  // consecutive lanes
        LaneOffsets o{{}, 0, kLanes - 1};
        for (int k = 0; k < kLanes; ++k) o.at[k] = k;
        plan.lane_offsets.push_back(o);
      }
      Scatter s{store_buf, 0};
      s.offsets = 0;
      s.base = store_at;
      s.active.set();
      l.scatters.push_back(s);
    }
    plan.launches.push_back(l);
    return int64_t(plan.launches.size()) - 1;
  }
  // A chain of two launches: the first keeps scratch tile `place`, the second reads it and stores at `at`.
  int64_t chain(int place, int64_t at) {
    plan.scratch_tiles = std::max(plan.scratch_tiles, place + 1);
    const int64_t first = launch(0, Keep{0, false, place});
    launch(source(TileSource::Kind::kScratch, place), std::nullopt, 0, at);
    return first;
  }
  void run(int64_t first, int64_t count, int64_t store_shift = 0) {
    plan.shifts.push_back({store_shift, 0});
    plan.runs.push_back({first, count, int(plan.shifts.size()) - 1});
  }
  std::vector<size_t> groups() const { return independent_groups(plan, sizes()); }
};
}  // namespace

TEST_CASE("independent runs: chains of kept tiles of their own, each element stored by one run") {
  PlanMaker m;
  const int64_t chain = m.chain(0, 0);
  for (int k = 0; k < 4; ++k) m.run(chain, 2, 16 * k);  // one chain replayed, its store moved on each time
  CHECK(m.groups() == std::vector<size_t>{0, 1, 2, 3});

  SECTION("a run storing an element a later run stores is not among them") {
    m.run(chain, 2, 0);
    CHECK(m.groups() == std::vector<size_t>{1, 2, 3, 4});  // the first runs before them
  }
  SECTION("a run that goes on with the tiles the run before it kept is in its group (a long chunk's parts)") {
    m.run(m.launch(m.source(TileSource::Kind::kScratch, 0), std::nullopt), 1);
    CHECK(m.groups() == std::vector<size_t>{0, 1, 2, 3});
  }
}

TEST_CASE("independent runs: those after a prefix whose pinned tiles they all read") {
  PlanMaker m;
  m.run(m.launch(0, Keep{0, true, 0}), 1);  // the uniform prefix, pinned
  const int64_t reads_pin = m.launch(m.source(TileSource::Kind::kPinned, 0), std::nullopt, 0, 0);
  for (int k = 0; k < 3; ++k) m.run(reads_pin, 1, 16 * k);
  m.plan.pinned_tiles = 3;
  CHECK(m.groups() == std::vector<size_t>{1, 2, 3});

  SECTION("a long chunk's parts: the part after a cut reads the tiles the part before it pinned (bank 1)") {
    for (int chunk = 0; chunk < 2; ++chunk) {
      m.run(m.launch(m.source(TileSource::Kind::kPinned, 0), Keep{0, true, 1}), 1);
      m.run(m.launch(m.source(TileSource::Kind::kPinned, 1), std::nullopt, 0, 64 + 16 * chunk), 1);
    }
    CHECK(m.groups() == std::vector<size_t>{1, 2, 3, 4, 6});
  }
  SECTION("a group storing what a later one stores is not among them, nor are those before it") {
    m.run(m.chain(0, 48), 2);
    m.run(m.launch(m.source(TileSource::Kind::kScratch, 0), std::nullopt), 1);  // in the chain's group
    m.run(reads_pin, 1, 48);  // stores what the chain stored
    CHECK(m.groups().empty());
  }
}

TEST_CASE("independent runs: none past one that touches a memo buffer or stores through computed indices") {
  PlanMaker m;
  const int64_t chain = m.chain(0, 0);
  for (int k = 0; k < 2; ++k) m.run(chain, 2, 16 * k);
  SECTION("a memo store") {
    m.run(m.launch(0, std::nullopt, 3, 0), 1);
    CHECK(m.groups().empty());
  }
  SECTION("a memo read") {
    m.plan.strided.push_back({3, kLanes, 0, 1, kRows});
    m.run(m.launch(m.source(TileSource::Kind::kStrided, 1), std::nullopt), 1);
    CHECK(m.groups().empty());
  }
  SECTION("a store at indices a launch computed") {
    const int64_t l = m.launch(0, std::nullopt, 0, 48);
    m.plan.launches[size_t(l)].scatters[0].index_tile = 0;
    m.run(l, 1);
    CHECK(m.groups().empty());
  }
}
