// MXU: the Controller's modes against an Eigen reference (hardware.md §2.3), drain side effects and
// their timing.
#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <random>

#include "base/errors.h"
#include "helpers.h"
#include "sim/controller.h"

using namespace tinytpu;
using Mat = Eigen::Matrix<int64_t, Eigen::Dynamic, Eigen::Dynamic>;

namespace {

std::mt19937 rng(1234);
int rand_i8() { return std::uniform_int_distribution<int>(-128, 127)(rng); }

std::string wmem(int addr, const Mat& w) {
  std::string s = "WMEM[" + std::to_string(addr) + "] =";
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) s += " " + std::to_string(w(r, c));
  return s + "\n";
}
std::string amem(int addr, const Mat& a, int row) {
  std::string s = "AMEM[" + std::to_string(addr) + "] =";
  for (int c = 0; c < 4; ++c) s += " " + std::to_string(a(row, c));
  return s + "\n";
}
Mat random_mat(int rows, int cols) {
  Mat m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = rand_i8();
  return m;
}
int32_t wrap(int64_t v) { return int32_t(uint32_t(uint64_t(v))); }

}  // namespace

TEST_CASE("weight-stationary: N activation vectors summed against one weight tile (§2.3 WS result)") {
  for (int n : {1, 2, 4, 7}) {
    Mat w = random_mat(4, 4), a = random_mat(n, 4);
    std::string p = wmem(3, w);
    for (int k = 0; k < n; ++k) p += amem(10 + k, a, k);
    p += "MXU WMEM[3], AMEM[10], tiles=" + std::to_string(n) + "\nWAIT_MXU\nHALT\nOUTPUT_MXU\nEND";
    auto r = test::run(p);
    Mat expect = a.colwise().sum() * w;  // (sum_k a_k)^T W
    REQUIRE(r.mxu_result);
    for (int c = 0; c < 4; ++c) CHECK((*r.mxu_result)[c] == wrap(expect(0, c)));
    CHECK(r.sxu_cycles == uint64_t(n + 10 + 1));                       // MXU + WAIT = tLen + rows + 6
    CHECK(r.sxu_cycles == uint64_t(ws_dispatch_interval(n) + 2 + 1));  // what cost models read, + HALT
  }
}

TEST_CASE("output-stationary: C = X W with X[r][k] = A_k[r], read by matrix rows (§2.3 OS result)") {
  for (int k : {1, 3, 4}) {
    Mat w = random_mat(4, 4), a = random_mat(k, 4);
    std::string p = wmem(0, w);
    for (int i = 0; i < k; ++i) p += amem(i, a, i);
    p += "MXU_OS WMEM[0], AMEM[0], k=" + std::to_string(k) + "\nWAIT_MXU\n";
    for (int row = 0; row < 4; ++row)
      p += "LOAD_MXU_MATRIX_ROW v" + std::to_string(row) + ", row=" + std::to_string(row) + "\nSTORE VMEM[" +
           std::to_string(row) + "], v" + std::to_string(row) + "\n";
    p += "HALT\nOUTPUT_VMEM VMEM[0]\nOUTPUT_VMEM VMEM[1]\nOUTPUT_VMEM VMEM[2]\nOUTPUT_VMEM VMEM[3]\nEND";
    auto r = test::run(p);
    // MXU_OS + WAIT = K' + kLen + rows + cols + 5 (21 for kLen = 4), what cost models read
    std::string timed = wmem(0, w) + "MXU_OS WMEM[0], AMEM[0], k=" + std::to_string(k) + "\nWAIT_MXU";
    for (int i = 0; i < k; ++i) timed = amem(i, a, i) + timed;
    CHECK(test::sxu_cycles(timed) == uint64_t(std::max(k, 1) + k + 4 + 4 + 5 + 1));
    CHECK(test::sxu_cycles(timed) == uint64_t(os_dispatch_interval(k) + 2 + 1));
    Mat x = a.transpose();     // 4 x k
    Mat c = x * w.topRows(k);  // only weight rows < kLen enter the staircase
    for (int row = 0; row < 4; ++row)
      for (int col = 0; col < 4; ++col) CHECK(r.vmem_results[row][col] == wrap(c(row, col)));
  }
}

TEST_CASE("OS accumulate keeps the PE sums, and MXU_CLEAR starts a fresh epoch") {
  Mat w = random_mat(4, 4), a = random_mat(4, 4);
  std::string p = wmem(0, w);
  for (int i = 0; i < 4; ++i) p += amem(i, a, i);
  p +=
      "MXU_OS WMEM[0], AMEM[0], k=4\nMXU_OS_ACCUMULATE WMEM[0], AMEM[0], k=4\nWAIT_MXU\n"
      "LOAD_MXU_MATRIX_ROW v1, row=1\nSTORE VMEM[0], v1\nMXU_CLEAR\nMXU_OS_ACCUMULATE WMEM[0], AMEM[0], "
      "k=4\nWAIT_MXU\n"
      "LOAD_MXU_MATRIX_ROW v2, row=1\nSTORE VMEM[1], v2\nHALT\nOUTPUT_VMEM VMEM[0]\nOUTPUT_VMEM VMEM[1]\nEND";
  auto r = test::run(p);
  Mat c = a.transpose() * w;
  for (int col = 0; col < 4; ++col) {
    CHECK(r.vmem_results[0][col] == wrap(2 * c(1, col)));
    CHECK(r.vmem_results[1][col] == wrap(c(1, col)));
  }
}

TEST_CASE("WS accumulate sums column sums across dispatches until MXU_CLEAR") {
  Mat w = random_mat(4, 4), a = random_mat(2, 4);
  std::string p = wmem(0, w) + amem(0, a, 0) + amem(1, a, 1);
  p += "MXU_ACCUMULATE WMEM[0], AMEM[0], tiles=1\nMXU_ACCUMULATE WMEM[0], AMEM[1], "
       "tiles=1\nWAIT_MXU\nHALT\nOUTPUT_MXU\nEND";
  auto r = test::run(p);
  Mat expect = a.colwise().sum() * w;
  for (int c = 0; c < 4; ++c) CHECK((*r.mxu_result)[c] == wrap(expect(0, c)));
}

TEST_CASE("epilogue 42 works on the per-PE matrix with bias and ReLU, and reports row stats (§2.3)") {
  Mat w = random_mat(4, 4), a = random_mat(2, 4);
  std::string p =
      wmem(0, w) + amem(0, a, 0) + amem(1, a, 1) + "VMEM[0] = 5 -7 100 -3 0 0 0 0 0 0 0 0 0 0 0 0\n";
  p += "LOAD v1, VMEM[0]\nMXU_EPILOGUE v2 = GEMM(WMEM[0], AMEM[0], tiles=2) BIAS=v1 RELU REDUCE_SUMSQ "
       "DST_VMEM[4]\n"
       "LOAD_EPILOGUE_STAT v3\nSTORE VMEM[5], v3\nHALT\nOUTPUT_VMEM VMEM[4]\nOUTPUT_VMEM VMEM[5]\nEND";
  auto r = test::run(p);
  Mat asum = a.colwise().sum();
  int64_t bias[4] = {5, -7, 100, -3};
  for (int row = 0; row < 4; ++row) {
    int64_t sumsq = 0;
    for (int c = 0; c < 4; ++c) {
      int64_t v =
          std::max<int64_t>(asum(0, row) * w(row, c) + bias[c], 0);  // PE[r][c] = sum_k a_k[r] W[r][c]
      CHECK(r.vmem_results[0][4 * row + c] == v);
      sumsq += v * v;
    }
    CHECK(r.vmem_results[1][4 * row] == wrap(sumsq));
    CHECK(r.vmem_results[1][4 * row + 1] == int32_t(sumsq >> 32));
  }
  CHECK(r.sxu_cycles == 3 + (2 + 11) + 2 + 2 + 1);
}

TEST_CASE("epilogue 46: op(column sums, src2 row 0) into row 0 (§2.3 item 3)") {
  Mat w = random_mat(4, 4), a = random_mat(1, 4);
  std::string p =
      wmem(0, w) + amem(0, a, 0) + "VMEM[0] = 3 -4 5 6 9 9 9 9 9 9 9 9 9 9 9 9\nLOAD v1, VMEM[0]\n";
  const char* ops[] = {"ADD", "SUB", "MUL", "MAX", "MIN", "IPAIR_ROTATE", "XOR"};
  for (int i = 0; i < 7; ++i)
    p += std::string("MXU_VPU_EPILOGUE v2 = GEMM(WMEM[0], AMEM[0], tiles=1) SRC2=v1 OP=") + ops[i] +
         " DST_VMEM[" + std::to_string(i + 1) + "]\n";
  p += "HALT\n";
  for (int i = 0; i < 7; ++i) p += "OUTPUT_VMEM VMEM[" + std::to_string(i + 1) + "]\n";
  auto r = test::run(p + "END");
  Mat cs = a * w;
  int64_t s2[4] = {3, -4, 5, 6};
  for (int c = 0; c < 4; ++c) {
    int64_t x = cs(0, c);
    CHECK(r.vmem_results[0][c] == wrap(x + s2[c]));
    CHECK(r.vmem_results[1][c] == wrap(x - s2[c]));
    CHECK(r.vmem_results[2][c] == wrap(x * s2[c]));
    CHECK(r.vmem_results[3][c] == std::max(x, s2[c]));
    CHECK(r.vmem_results[4][c] == std::min(x, s2[c]));
    CHECK(r.vmem_results[6][c] == x);      // not in the curated set: passes through
    CHECK(r.vmem_results[0][4 + c] == 0);  // rows 1..3 are zero
  }
  CHECK(r.vmem_results[5][0] == wrap(cs(0, 0) * 3 - cs(0, 1) * -4));
  CHECK(r.vmem_results[5][1] == wrap(cs(0, 0) * -4 + cs(0, 1) * 3));
  // tLen + rows + 7, with FETCH (+ HALT): hardware.md §2.7; the row-driven check is test_sxu.cc's
  std::string timed =
      wmem(0, w) + amem(0, a, 0) + "MXU_VPU_EPILOGUE v2 = GEMM(WMEM[0], AMEM[0], tiles=1) SRC2=v1 OP=OR";
  CHECK(test::sxu_cycles(timed) == uint64_t(1 + 4 + 7 + 1));
}

TEST_CASE("requant writes one clamped int8 row to ASRAM per dispatch (§2.3 item 1)") {
  // identity weights, a = (100, -50, 3, 0): colsums = a. mul 3, shift 2: (x*3 + 2) >> 2, clamped.
  std::string p = "WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\nAMEM[0] = 100 -50 3 0\n";
  p += "SET_REQUANT_CONFIG scale_mul=3 scale_shift=2\nDISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 "
       "ASRAM[7]\nWAIT_MXU\n"
       "SET_REQUANT_CONFIG scale_mul=1 scale_shift=0\nDISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 "
       "ASRAM[8]\nWAIT_MXU\n"
       "HALT\nOUTPUT_ASRAM ASRAM[7]\nOUTPUT_ASRAM ASRAM[8]\nEND";
  auto r = test::run(p);
  REQUIRE(r.asram_results.size() == 2);
  CHECK(r.asram_results[0] == Row{75, -37, 2, 0});  // (300+2)>>2, (-150+2)>>2 arithmetic, (9+2)>>2, 2>>2
  // shift 0: the addend is 1 << 31 (UInt#(5) wrap of shift-1), so every lane saturates
  CHECK(r.asram_results[1] == Row{127, 127, 127, 127});
}
