// Batch shapes (compiler/replay.h): equal exactly when two batches differ by one shift per buffer.
#include <algorithm>
#include <catch2/catch.hpp>

#include "compiler/replay.h"

using namespace tinytpu;
using namespace tinytpu::compiler;

namespace {
// out[idx(l) + 1000] = a[idx(l)] + c, where lane l's element of a is `index(l)`; lane `odd` of the leaf, when
// given, reads a constant instead.
template <class Index>
TileProgram add_program(Index index, uint32_t c, int odd = -1) {
  TileProgram p;
  TileNode leaf{Op::LOAD, DType::kI32};
  p.nodes.push_back(leaf);
  for (int l = 0; l < kLanes; ++l)
    p.lanes(p.nodes[0])[l] = l == odd ? LeafLane(-1, 0, 7) : LeafLane(1, index(l));
  p.nodes.push_back(leaf);
  p.lanes(p.nodes[1]).fill(LeafLane(-1, 0, c));
  p.nodes.push_back(TileNode{Op::ADD, DType::kI32, DType::kVoid, 0, 1});
  TileStore st{0, {}, {}, 2};
  st.active.fill(true);
  for (int l = 0; l < kLanes; ++l) st.index[l] = index(l) + 1000;
  p.stores.push_back(st);
  return p;
}

BatchShape shape_of(const TileProgram& p) {
  BatchShape s;
  REQUIRE(batch_shape(p, s));
  return s;
}

bool same(const BatchShape& a, const BatchShape& b) {
  return a.size == b.size && a.hash == b.hash &&
         std::equal(a.code.begin(), a.code.begin() + int64_t(a.size), b.code.begin());
}
}  // namespace

TEST_CASE("replay: batches equal up to a shift per buffer have one shape, and the cache gives the shift") {
  auto consecutive = [](int64_t base) { return [base](int l) { return base + l; }; };
  auto block = [](int64_t base) { return [base](int l) { return base + (l % kRows) + (l / kRows) * 50; }; };
  auto scattered = [](int64_t base) { return [base](int l) { return base + (l * l) % 23; }; };

  BatchShape first = shape_of(add_program(consecutive(100), 3));
  ReplayCache cache;
  cache.add(first, CompiledBatch{});
  auto hit = cache.find(shape_of(add_program(consecutive(164), 3)));
  REQUIRE(hit);
  CHECK(hit->shift[0] == 64);  // the store's buffer
  CHECK(hit->shift[1] == 64);  // the leaf's
  CHECK(same(first, shape_of(add_program(consecutive(-5), 3))));
  CHECK(same(shape_of(add_program(block(7), 3)), shape_of(add_program(block(90), 3))));
  CHECK(same(shape_of(add_program(scattered(7), 3)), shape_of(add_program(scattered(90), 3))));

  SECTION("any lane's element, a constant or a pattern that differs gives another shape") {
    for (int lane = 0; lane < kLanes; ++lane) {
      auto moved = [&](int l) { return 100 + l + (l == lane ? 1 : 0); };
      INFO("lane " << lane);
      CHECK_FALSE(cache.find(shape_of(add_program(moved, 3))));
      CHECK_FALSE(cache.find(shape_of(add_program(consecutive(100), 3, lane))));
    }
    CHECK_FALSE(cache.find(shape_of(add_program(consecutive(100), 4))));
    CHECK_FALSE(cache.find(shape_of(add_program(block(100), 3))));
    CHECK_FALSE(same(shape_of(add_program(block(7), 3)), shape_of(add_program(scattered(7), 3))));
  }
  SECTION("a shape's storage is reused for the next batch") {
    BatchShape s = shape_of(add_program(scattered(0), 3));
    REQUIRE(batch_shape(add_program(consecutive(164), 3), s));
    CHECK(same(s, shape_of(add_program(consecutive(164), 3))));
    CHECK(cache.find(s));
  }
}
