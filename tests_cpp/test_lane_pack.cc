// Lane packing (compiler/lane_pack.h): small stores side by side, reductions across lanes.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "compiler/lane_pack.h"
#include "helpers.h"
#include "runtime/executor.h"

using namespace tinytpu;
using namespace tinytpu::compiler;

namespace {
int leaf(TileProgram& p, int first_element, int lanes) {  // elements first.. of buffer 1 in lanes 0..
  TileNode t{Op::LOAD, DType::kI32};
  for (int l = 0; l < lanes; ++l) p.lanes(t)[l] = {1, first_element + l, 0};
  p.nodes.push_back(t);
  return int(p.nodes.size()) - 1;
}
int node(TileProgram& p, Op op, int a, int b) {
  p.nodes.push_back(TileNode{op, DType::kI32, DType::kI32, a, b});
  return int(p.nodes.size()) - 1;
}
void store(TileProgram& p, int value, int lanes, int first_element) {
  TileStore s{0, {}, {}, value};
  for (int l = 0; l < lanes; ++l) {
    s.active[l] = true;
    s.index[l] = first_element + l;
  }
  p.stores.push_back(s);
}
// out[o] = sum over k < n of in[o * n + k] for `outputs` lanes, as the tracer unrolls it
TileProgram row_sums(int outputs, int n) {
  TileProgram p;
  int acc = -1;
  for (int k = 0; k < n; ++k) {
    TileNode t{Op::LOAD, DType::kI32};
    for (int o = 0; o < outputs; ++o) p.lanes(t)[o] = {1, o * n + k, 0};
    p.nodes.push_back(t);
    int term = int(p.nodes.size()) - 1;
    acc = acc < 0 ? term : node(p, Op::ADD, acc, term);
  }
  store(p, acc, outputs, 0);
  return p;
}
}  // namespace

TEST_CASE("lane_pack: one output's sum becomes one tile and a whole-tile reduce") {
  TileProgram p = row_sums(1, 16);
  pack_lanes(p);
  const TileNode& r = p.nodes[p.stores[0].value];
  REQUIRE(r.op == Op::LANE_REDUCE);
  CHECK(r.axis == LaneAxis::kTile);
  CHECK(r.reduce == Op::ADD);
  const TileNode& in = p.nodes[r.a];
  REQUIRE(in.op == Op::LOAD);
  for (int l = 0; l < kLanes; ++l) CHECK(p.lanes(in)[l].index == l);  // term k in lane k
}

TEST_CASE(
    "lane_pack: eight outputs read by two stores reduce by columns in two row groups joined by a select") {
  TileProgram p = row_sums(8, 8);
  p.stores.push_back(p.stores[0]);  // a second reader: the result's lanes stay where they are
  p.stores[1].buf = 2;
  pack_lanes(p);
  const TileNode& join = p.nodes[p.stores[0].value];
  REQUIRE(join.op == Op::WHERE);
  for (int part : {join.b, join.c}) {
    REQUIRE(p.nodes[part].op == Op::LANE_REDUCE);
    CHECK(p.nodes[part].axis == LaneAxis::kCol);
  }
  // lanes 0..3 (row 0) are the first group: packed lane 4i + c holds term i (then 4 + i) of output c
  const TileNode& sum = p.nodes[p.nodes[join.c].a];
  REQUIRE(sum.op == Op::ADD);
  for (int l = 0; l < kLanes; ++l) CHECK(p.lanes(p.nodes[sum.a])[l].index == (l % 4) * 8 + l / 4);
}

TEST_CASE("lane_pack: eight outputs of one store take two lanes each, finished by a rotate and an add") {
  TileProgram p = row_sums(8, 8);
  pack_lanes(p);
  const TileStore& st = p.stores[0];
  const TileNode& r = p.nodes[st.value];
  REQUIRE(r.op == Op::LANE_REDUCE);
  CHECK(r.axis == LaneAxis::kPair);
  for (int l = 0; l < kLanes; ++l) {  // output j now in lane 2j
    CHECK(st.active[l] == (l % 2 == 0));
    if (l % 2 == 0) CHECK(st.index[l] == l / 2);
  }
  // four tiles summed: lanes 2j, 2j+1 of tile t hold terms 2t, 2t+1 of output j (in[8j + k])
  const TileNode* n = &p.nodes[r.a];
  int tiles = 1;
  while (n->op == Op::ADD) {
    const TileNode& last = p.nodes[n->b];
    REQUIRE(last.op == Op::LOAD);
    for (int l = 0; l < kLanes; ++l) CHECK(p.lanes(last)[l].index == 8 * (l / 2) + 2 * (4 - tiles) + l % 2);
    n = &p.nodes[n->a];
    ++tiles;
  }
  CHECK(tiles == 4);
}

TEST_CASE("lane_pack: four isomorphic 4-lane stores become one 16-lane store") {
  TileProgram p;
  for (int j = 0; j < 4; ++j) store(p, node(p, Op::ADD, leaf(p, 4 * j, 4), leaf(p, 16 + 4 * j, 4)), 4, 4 * j);
  pack_lanes(p);
  REQUIRE(p.stores.size() == 1);
  const TileStore& s = p.stores[0];
  const TileNode& v = p.nodes[s.value];
  REQUIRE(v.op == Op::ADD);
  for (int l = 0; l < kLanes; ++l) {
    CHECK(s.active[l]);
    CHECK(s.index[l] == l);
    CHECK(p.lanes(p.nodes[v.a])[l].index == l);
    CHECK(p.lanes(p.nodes[v.b])[l].index == 16 + l);
  }
}

TEST_CASE("lane_pack: terms of different shapes and stores at one element stay as they are") {
  TileProgram p;
  int a = leaf(p, 0, 1), b = node(p, Op::SUB, leaf(p, 1, 1), leaf(p, 2, 1));
  store(p, node(p, Op::ADD, a, b), 1, 0);
  for (int j = 0; j < 2; ++j) store(p, leaf(p, j, 4), 4, 0);  // both write elements 0..3
  size_t nodes = p.nodes.size();
  pack_lanes(p);
  CHECK(p.nodes.size() == nodes);
  CHECK(p.stores.size() == 3);
  CHECK(p.nodes[p.stores[0].value].op == Op::ADD);
}

TEST_CASE("lane_pack: a 16-element sum runs as LOAD, SUM_REDUCE_TILE (in the background), STORE, HALT") {
  CompiledKernel k(test::kSum16Ir);
  std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(16 * 4)};
  for (int i = 0; i < 16; ++i) {
    int32_t v = 1000 * i - 7;
    std::memcpy(bufs[1].data() + 4 * i, &v, 4);
  }
  KernelStats s = k.run(bufs, {}, true);
  int32_t out;
  std::memcpy(&out, bufs[0].data(), 4);
  CHECK(out == 120000 - 112);
  REQUIRE(s.tasm.size() == 1);
  const std::string& t = s.tasm[0];
  CHECK(t.find("LOAD v0, VMEM[0]\nVPU_BG v1 = SUM_REDUCE_TILE(v0)\nSTORE VMEM[0], v1\nHALT\n") !=
        std::string::npos);
  // the testbench's count: 2 per record (1 tile, 4 instructions, 1 output) + SXU cycles + 1 output + 4
  CHECK(s.cycles == 2 * 6 + s.sxu_cycles + 1 + 4);
}

TEST_CASE("lane_pack: a constant term packed with leaf terms leaves the identity in its padding lanes") {
  // r_8_8 as BEAM (UNROLL 8) has tinygrad write (a.sum(axis=1) + 1): the + 1 is a ninth term of each row's
  // chain. Packed four terms per column, it gets a tile of its own whose other three rows must hold 0;
  // the whole constant tile (1 in every lane) made each row sum 3 too large.
  CompiledKernel k(
      "KERNEL r_8_8\nCONST idx 0 8\nCAST i32 1 0\nPARAM i32 1 1 0 GLOBAL 0 0\nCONST idx 0 64\n"
      "CAST i32 1 3\nPARAM i32 1 4 1 GLOBAL 0 0\nCONST idx 0 1\nCAST i32 1 6\nCONST idx 0 2\n"
      "CAST i32 1 8\nCONST idx 0 3\nCAST i32 1 10\nCONST idx 0 4\nCAST i32 1 12\nCONST idx 0 5\n"
      "CAST i32 1 14\nCONST idx 0 6\nCAST i32 1 16\nCONST idx 0 7\nCAST i32 1 18\n"
      "RANGE i32 1 1 1 WEAK\nSHL i32 2 20 11\nADD i32 2 21 7\nINDEX i32 2 5 22\nLOAD i32 1 23\n"
      "ADD i32 2 21 9\nINDEX i32 2 5 25\nLOAD i32 1 26\nADD i32 2 21 11\nINDEX i32 2 5 28\n"
      "LOAD i32 1 29\nADD i32 2 21 13\nINDEX i32 2 5 31\nLOAD i32 1 32\nADD i32 2 21 15\n"
      "INDEX i32 2 5 34\nLOAD i32 1 35\nADD i32 2 21 17\nINDEX i32 2 5 37\nLOAD i32 1 38\n"
      "ADD i32 2 21 19\nINDEX i32 2 5 40\nLOAD i32 1 41\nINDEX i32 2 5 21\nLOAD i32 1 43\n"
      "INDEX i32 2 2 20\nADD i32 2 44 24\nADD i32 2 46 27\nADD i32 2 47 30\nADD i32 2 48 33\n"
      "ADD i32 2 49 36\nADD i32 2 50 39\nADD i32 2 51 42\nADD i32 2 52 7\nSTORE void 2 45 53\n"
      "END void 2 54 20\nSINK void 1 55\n");
  std::vector<DeviceBuffer> bufs{DeviceBuffer(8 * 4), DeviceBuffer(64 * 4)};
  for (int32_t i = 0; i < 64; ++i) std::memcpy(bufs[1].data() + 4 * i, &i, 4);
  k.run(bufs, {}, false);
  for (int r = 0; r < 8; ++r) {
    int32_t out;
    std::memcpy(&out, bufs[0].data() + 4 * r, 4);
    CHECK(out == 64 * r + 28 + 1);  // sum of 8r .. 8r + 7, plus 1
  }
}

namespace {
// A leaf whose lane l reads element at(l) of buffer 1.
template <class At>
int leaf_at(TileProgram& p, At at) {
  TileNode t{Op::LOAD, DType::kI32};
  for (int l = 0; l < kLanes; ++l) p.lanes(t)[l] = {1, at(l), 0};
  p.nodes.push_back(t);
  return int(p.nodes.size()) - 1;
}
// The broadcasts the store's value reads, through its chain of ADDs and MULs.
std::vector<const TileNode*> broadcasts(const TileProgram& p, int value) {
  std::vector<const TileNode*> found;
  std::vector<int> walk{value};
  while (!walk.empty()) {
    const TileNode& n = p.nodes[walk.back()];
    walk.pop_back();
    if (n.op == Op::LANE_BROADCAST) {
      found.push_back(&n);
      continue;
    }
    for (int o : {n.a, n.b})
      if (o >= 0) walk.push_back(o);
  }
  return found;
}
}  // namespace

TEST_CASE("lane_pack: row-replicated trees are computed four to a tile and copied back by column") {
  // sum over k < 4 of (x[r][k] * x[r][k] + 3) * w[k][lane]: x[r][k] is the same in each row's four lanes
  TileProgram p;
  int acc = -1, three = -1;
  {
    TileNode c{Op::LOAD, DType::kI32};
    for (int l = 0; l < kLanes; ++l) p.lanes(c)[l].bits = 3;
    p.nodes.push_back(c);
    three = int(p.nodes.size()) - 1;
  }
  for (int k = 0; k < 4; ++k) {
    int x = leaf_at(p, [&](int l) { return 100 + 4 * (l / 4) + k; });
    int tree = node(p, Op::ADD, node(p, Op::MUL, x, x), three);
    int w = leaf_at(p, [&](int l) { return 16 * k + l; });
    int term = node(p, Op::MUL, tree, w);
    acc = acc < 0 ? term : node(p, Op::ADD, acc, term);
  }
  store(p, acc, kLanes, 0);
  pack_lanes(p);
  auto found = broadcasts(p, p.stores[0].value);
  REQUIRE(found.size() == 4);
  std::set<int> lanes;
  for (const TileNode* b : found) {
    CHECK(b->axis == LaneAxis::kRow);
    CHECK(b->a == found[0]->a);  // one packed tile
    lanes.insert(b->lane);
  }
  CHECK(lanes == std::set<int>{0, 1, 2, 3});
  // the packed tree: (x * x) + 3 with x's lane (r, j) = element 100 + 4r + j, tree j's row r
  const TileNode& packed = p.nodes[found[0]->a];
  REQUIRE(packed.op == Op::ADD);
  const TileNode& square = p.nodes[packed.a];
  REQUIRE(square.op == Op::MUL);
  REQUIRE(square.a == square.b);
  for (int l = 0; l < kLanes; ++l) CHECK(p.lanes(p.nodes[square.a])[l].index == 100 + 4 * (l / 4) + l % 4);
  CHECK(uniform_bits(p, p.nodes[packed.b]) == 3u);
}

TEST_CASE("lane_pack: sixteen tile-replicated trees share one tile, one lane each") {
  TileProgram p;
  for (int j = 0; j < kLanes; ++j) {
    int x = leaf_at(p, [&](int) { return 500 + j; });
    int tree = node(p, Op::SUB, node(p, Op::MUL, x, x), x);
    store(p, node(p, Op::MUL, tree, leaf_at(p, [&](int l) { return 16 * j + l; })), kLanes, 16 * j);
  }
  pack_lanes(p);
  REQUIRE(p.stores.size() == kLanes);
  int tile = -1;
  for (int j = 0; j < kLanes; ++j) {
    auto found = broadcasts(p, p.stores[j].value);
    REQUIRE(found.size() == 1);
    CHECK(found[0]->axis == LaneAxis::kTile);
    CHECK(found[0]->lane == j);
    tile = tile < 0 ? found[0]->a : tile;
    CHECK(found[0]->a == tile);
  }
  const TileNode& x = p.nodes[p.nodes[p.nodes[tile].a].a];
  for (int l = 0; l < kLanes; ++l) CHECK(p.lanes(x)[l].index == 500 + l);
}

TEST_CASE("lane_pack: replicated leaves alone, lone trees and unreplicated trees are not packed") {
  TileProgram p;
  int acc = -1;
  for (int k = 0; k < 4; ++k) {  // bare row-replicated leaves times per-lane leaves: the loader refills them
    int x = leaf_at(p, [&](int l) { return 4 * (l / 4) + k; });
    int term = node(p, Op::MUL, x, leaf_at(p, [&](int l) { return 16 * k + l; }));
    acc = acc < 0 ? term : node(p, Op::ADD, acc, term);
  }
  store(p, acc, kLanes, 0);
  int lone = leaf_at(p, [](int) { return 7; });  // one replicated tree: nothing to share a tile with
  store(p, node(p, Op::MUL, node(p, Op::MUL, lone, lone), leaf_at(p, [](int l) { return l; })), kLanes, 16);
  int spread = leaf_at(p, [](int l) { return l; });  // a different value in every lane
  store(p, node(p, Op::MUL, spread, spread), kLanes, 32);
  size_t nodes = p.nodes.size();
  pack_lanes(p);
  CHECK(p.nodes.size() == nodes);
  for (const TileStore& s : p.stores) CHECK(broadcasts(p, s.value).empty());
}

TEST_CASE("lane_pack: a sum of terms the same in every lane packs sixteen terms a tile, one result for all") {
  // a whole-tensor sum broadcast to the tile: term k reads element k in all sixteen lanes
  TileProgram p;
  int acc = -1;
  for (int k = 0; k < 32; ++k) {
    int term = leaf_at(p, [&](int) { return k; });
    acc = acc < 0 ? term : node(p, Op::ADD, acc, term);
  }
  store(p, acc, kLanes, 0);
  pack_lanes(p);
  const TileNode& r = p.nodes[p.stores[0].value];
  REQUIRE(r.op == Op::LANE_REDUCE);
  CHECK(r.axis == LaneAxis::kTile);  // every lane gets the sum
  const TileNode& sum = p.nodes[r.a];
  REQUIRE(sum.op == Op::ADD);
  for (int l = 0; l < kLanes; ++l) {
    CHECK(p.lanes(p.nodes[sum.a])[l].index == l);
    CHECK(p.lanes(p.nodes[sum.b])[l].index == 16 + l);
  }
}
