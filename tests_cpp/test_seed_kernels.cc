// The 11 seed benchmark kernels as TASM bundles (hardware.md §4.4). Expected cycles are the reference
// README's table (hardware.md §7), which §4.4 reproduces with cycles = 2R + P + M + 4.
#include <catch2/catch.hpp>
#include <numeric>

#include "helpers.h"

using namespace tinytpu;

namespace {

RunResult run_kernel(const std::string& name) {
  return test::run(test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/seed/" + name + ".tasm"));
}

Tile iota_tile(int start, int step = 1) {
  Tile t;
  for (int i = 0; i < kTileElems; ++i) t[i] = start + i * step;
  return t;
}

Tile row0(Row r) { return row_tile(r); }

}  // namespace

TEST_CASE("add_16: 33 cycles, element-wise sum") {
  auto r = run_kernel("add_16");
  CHECK(r.cycles == 33);  // R=8, P=12, M=1 (§4.4)
  CHECK(r.sxu_cycles == 12);
  REQUIRE(r.vmem_results.size() == 1);
  CHECK(r.vmem_results[0] == iota_tile(1, 2));
}

TEST_CASE("add_256: 423 cycles") {
  auto r = run_kernel("add_256");
  CHECK(r.cycles == 423);  // R=113, P=177, M=16 (§4.4)
  REQUIRE(r.vmem_results.size() == 16);
  for (int t = 0; t < 16; ++t) CHECK(r.vmem_results[t] == iota_tile(32 * t + 1, 2));
}

TEST_CASE("relu_64: 83 cycles") {
  auto r = run_kernel("relu_64");
  CHECK(r.cycles == 83);
  REQUIRE(r.vmem_results.size() == 4);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 16; ++i) CHECK(r.vmem_results[t][i] == std::max(16 * t + i - 32, 0));
}

TEST_CASE("reshape_64: 63 cycles") {
  auto r = run_kernel("reshape_64");
  CHECK(r.cycles == 63);
  for (int t = 0; t < 4; ++t) CHECK(r.vmem_results[t] == iota_tile(16 * t));
}

TEST_CASE("sum_16_scalar: 26 cycles") {
  auto r = run_kernel("sum_16_scalar");
  CHECK(r.cycles == 26);
  Tile expect;
  expect.fill(120);
  CHECK(r.vmem_results[0] == expect);
}

TEST_CASE("sum_256_scalar: 281 cycles") {
  auto r = run_kernel("sum_256_scalar");
  CHECK(r.cycles == 281);
  Tile expect;
  expect.fill(255 * 256 / 2);
  CHECK(r.vmem_results[0] == expect);
}

TEST_CASE("rowsum_8x8 and colsum_8x8: 79 cycles each") {
  auto rows = run_kernel("rowsum_8x8");
  CHECK(rows.cycles == 79);
  for (int i = 0; i < 2; ++i)
    for (int r = 0; r < 4; ++r) {
      int row = 4 * i + r, sum = 8 * 8 * row + 28;  // sum_c (8*row + c)
      for (int c = 0; c < 4; ++c) CHECK(rows.vmem_results[i][4 * r + c] == sum);
    }
  auto cols = run_kernel("colsum_8x8");
  CHECK(cols.cycles == 79);
  for (int j = 0; j < 2; ++j)
    for (int c = 0; c < 4; ++c) {
      int col = 4 * j + c, sum = 8 * 28 + 8 * col;  // sum_r (8r + col)
      for (int r = 0; r < 4; ++r) CHECK(cols.vmem_results[j][4 * r + c] == sum);
    }
}

TEST_CASE("gemm kernels: 37, 121 and 227 cycles") {
  auto g1 = run_kernel("gemm_1x4x4");
  CHECK(g1.cycles == 37);  // R=8, P=16, M=1 (§4.4)
  CHECK(g1.vmem_results[0] == row0({1, 2, 3, 4}));
  auto g4 = run_kernel("gemm_4x4x4");
  CHECK(g4.cycles == 121);
  for (int r = 0; r < 4; ++r) CHECK(g4.vmem_results[r] == row0({4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3}));
  auto g8 = run_kernel("gemm_4x8x4");
  CHECK(g8.cycles == 227);
  for (int r = 0; r < 4; ++r) {
    int s = 0;
    for (int k = 0; k < 8; ++k) s += 8 * r + k;
    CHECK(g8.vmem_results[r] == row0({s, s, s, s}));
  }
}
