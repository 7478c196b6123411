// The tile geometry: mkTensorCore is TensorCore#(rows, cols, depth) with rows == cols (hardware.md §1), and
// this file states every rows-dependent timing and result in terms of kRows. It is built into the reference
// test binary (4 rows) and into the 8-row one, so one formula is checked on both geometries:
//  - WS dispatch + WAIT_MXU = tLen + rows + 6 (§2.3, "T+tLen+rows+4" Done);
//  - OS dispatch + WAIT_MXU = K' + kLen + rows + cols + 5;
//  - the FpReducer walks the tile's rows*cols elements one a cycle, the TranscUnit each element in its
//    per-op step count (§2.4, FpReducer#(16) / TranscUnit#(16) at 4x4);
//  - address and length operands are truncated to TLog#(depth) bits, so an OS slice of `depth` terms is 0;
//  - a dispatch run whole (the batch executor's) leaves what the Controller's cycles leave.
#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <random>

#include "helpers.h"
#include "isa/tasm.h"
#include "isa/vpu_ops.h"
#include "runtime/executor.h"
#include "sim/controller.h"

using namespace tinytpu;
using Mat = Eigen::Matrix<int64_t, Eigen::Dynamic, Eigen::Dynamic>;

namespace {

constexpr int R = kRows;
std::mt19937 rng(99);

Mat random_i8(int rows, int cols) {
  Mat m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = std::uniform_int_distribution<int>(-128, 127)(rng);
  return m;
}
std::string wmem(int addr, const Mat& w) {  // one WeightSRAM word: a whole R x R tile
  std::string s = "WMEM[" + std::to_string(addr) + "] =";
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < R; ++c) s += " " + std::to_string(w(r, c));
  return s + "\n";
}
std::string amem(int addr, const Mat& a, int row) {  // one ActivationSRAM word: R values
  std::string s = "AMEM[" + std::to_string(addr) + "] =";
  for (int c = 0; c < R; ++c) s += " " + std::to_string(a(row, c));
  return s + "\n";
}
int32_t wrap(int64_t v) { return int32_t(uint32_t(uint64_t(v))); }
std::string reg(int v) { return "v" + std::to_string(v); }

// The OS result read back by matrix rows into VMEM[0..R-1].
std::string read_matrix() {
  std::string p;
  for (int row = 0; row < R; ++row)
    p += "LOAD_MXU_MATRIX_ROW v1, row=" + std::to_string(row) + "\nSTORE VMEM[" + std::to_string(row) +
         "], v1\n";
  p += "HALT\n";
  for (int row = 0; row < R; ++row) p += "OUTPUT_VMEM VMEM[" + std::to_string(row) + "]\n";
  return p + "END";
}

}  // namespace

TEST_CASE("geometry: weight-stationary sums tLen activation rows against one R x R weight tile") {
  for (int n : {1, 2, R, R + 3}) {
    INFO("rows " << R << ", tLen " << n);
    Mat w = random_i8(R, R), a = random_i8(n, R);
    std::string p = wmem(1, w);
    for (int k = 0; k < n; ++k) p += amem(4 + k, a, k);
    p += "MXU WMEM[1], AMEM[4], tiles=" + std::to_string(n) + "\nWAIT_MXU\nHALT\nOUTPUT_MXU\nEND";
    RunResult r = test::run(p);
    Mat expect = a.colwise().sum() * w;
    REQUIRE(r.mxu_result);
    for (int c = 0; c < R; ++c) CHECK((*r.mxu_result)[c] == wrap(expect(0, c)));
    CHECK(r.sxu_cycles == uint64_t(n + R + 6 + 1));  // MXU + WAIT = tLen + rows + 6, then HALT
  }
}

TEST_CASE("geometry: output-stationary C = X W over kLen terms, in K' + kLen + rows + cols + 5 cycles") {
  for (int k : {1, R / 2, R}) {
    INFO("rows " << R << ", kLen " << k);
    Mat w = random_i8(R, R), a = random_i8(k, R);
    std::string p = wmem(0, w);
    for (int i = 0; i < k; ++i) p += amem(i, a, i);
    p += "MXU_OS WMEM[0], AMEM[0], k=" + std::to_string(k) + "\nWAIT_MXU\n";
    RunResult r = test::run(p + read_matrix());
    Mat c = a.transpose() * w.topRows(k);  // X[r][k] = A_k[r]; weight rows >= kLen never enter
    for (int row = 0; row < R; ++row)
      for (int col = 0; col < R; ++col) CHECK(r.vmem_results[row][col] == wrap(c(row, col)));
    CHECK(test::sxu_cycles(p) == uint64_t(std::max(k, 1) + k + R + R + 5 + 1));
  }
}

TEST_CASE("geometry: an OS slice of `depth` terms has kLen truncated to TLog#(depth) bits: 0") {
  // The smallest core the model allows has depth == rows: k=R reaches the Controller as kLen 0, K' = 1.
  TensorCoreConfig cfg;
  cfg.depth = R;
  Mat w = random_i8(R, R), a = random_i8(R, R);
  std::string p = wmem(0, w);
  for (int i = 0; i < R; ++i) p += amem(i, a, i);
  p += "MXU_OS WMEM[0], AMEM[0], k=" + std::to_string(R) + "\nWAIT_MXU\n";
  RunResult r = test::run(p + read_matrix(), cfg);
  for (int row = 0; row < R; ++row)
    for (int col = 0; col < R; ++col) CHECK(r.vmem_results[row][col] == 0);
  CHECK(test::sxu_cycles(p, cfg) == uint64_t(1 + 0 + R + R + 5 + 1));
}

TEST_CASE("geometry: the FpReducer and TranscUnit take one step per element of the R x R tile") {
  const int elems = R * R;
  struct Case {
    const char* op;
    uint64_t p;  // sxu_cycles with the final HALT; at 4x4 these are test_sxu.cc's 19, 116, 100, 180, 84
  } cases[] = {
      {"FSUM_REDUCE_TILE", uint64_t(elems + 3 + 1)}, {"EXP2", uint64_t(elems * 7 + 4 + 1)},
      {"LOG2", uint64_t(elems * 6 + 4 + 1)},         {"SIN", uint64_t(elems * 11 + 4 + 1)},
      {"COS", uint64_t(elems * 5 + 4 + 1)},
  };
  for (const Case& c : cases) {
    INFO(c.op << " on " << R << "x" << R);
    CHECK(test::sxu_cycles(std::string("VPU v1 = ") + c.op + "(v0)") == c.p);
  }
  // The sum itself: 1.0f in every lane adds up to the element count, exactly.
  Tile ones;
  ones.fill(0x3F800000);
  RunResult r = test::run(test::vmem_decl(0, ones) +
                          "LOAD v0, VMEM[0]\nVPU v1 = FSUM_REDUCE_TILE(v0)\nSTORE VMEM[1], v1\nHALT\n"
                          "OUTPUT_VMEM VMEM[1]\nEND");
  float sum = float(elems);
  uint32_t bits;
  std::memcpy(&bits, &sum, 4);
  for (int32_t lane : r.vmem_results[0]) CHECK(uint32_t(lane) == bits);
}

TEST_CASE("geometry: BROADCAST_SCALAR selects any lane (row, col) of the tile and round-trips as TASM") {
  Tile t;
  for (int i = 0; i < kTileElems; ++i) t[i] = 100 + i;
  for (int row : {0, 1, R - 1})
    for (int col : {0, R / 2, R - 1}) {
      INFO("lane (" << row << ", " << col << ") of " << R << "x" << R);
      const std::string instr =
          "BROADCAST_SCALAR v2 = v0[" + std::to_string(row) + ", " + std::to_string(col) + "]";
      RunResult r = test::run(test::vmem_decl(0, t) + "LOAD v0, VMEM[0]\n" + instr +
                              "\nSTORE VMEM[1], v2\nHALT\nOUTPUT_VMEM VMEM[1]\nEND");
      for (int32_t lane : r.vmem_results[0]) CHECK(lane == 100 + row * R + col);
      CHECK_THAT(disassemble(assemble(instr + "\nHALT\nEND")), Catch::Matchers::Contains(instr));
    }
  CHECK_THROWS_AS(assemble("BROADCAST_SCALAR v2 = v0[0, " + std::to_string(R) + "]\nEND"), AsmError);
}

TEST_CASE("geometry: a compiled kernel runs on the core it was compiled for") {
  // r_16 (sum of 16 int32) on any geometry: 16 lanes of a 4x4 tile, a quarter of an 8x8 one.
  CompiledKernel k(test::kSum16Ir, TensorCoreConfig{});
  std::vector<DeviceBuffer> bufs{DeviceBuffer(4), DeviceBuffer(64)};
  int32_t* in = reinterpret_cast<int32_t*>(bufs[1].data());
  for (int i = 0; i < 16; ++i) in[i] = i * i - 40;
  KernelStats s = k.run(bufs, {}, false, nullptr, nullptr);
  CHECK(*reinterpret_cast<int32_t*>(bufs[0].data()) == 1240 - 640);  // sum of i^2 for i < 16, minus 16 * 40
  CHECK(s.launches == 1);
}

TEST_CASE("geometry: OUTPUT_ASRAM prints every one of an ActivationSRAM word's R values") {
  const Mat a = random_i8(1, R);
  auto r = test::run(amem(5, a, 0) + "HALT\nOUTPUT_ASRAM ASRAM[5]\nEND");
  REQUIRE(r.asram_results.size() == 1);
  for (int c = 0; c < R; ++c) CHECK(r.asram_results[0][c] == a(0, c));
}

TEST_CASE("geometry: a dispatch run whole gives the array and the drain what its cycles give") {
  // Every dispatch kind, K and tLen past the slots and stream, one after another on one array: the
  // Controller's FSM ticked against run_whole, state by state
  std::mt19937 rng(7);
  const TensorCoreConfig cfg;
  WeightSram wsram(cfg);
  ActivationSram asram(cfg);
  for (auto& w : wsram.mem)
    for (int8_t& x : w) x = int8_t(rng());
  for (auto& r : asram.mem)
    for (int8_t& x : r) x = int8_t(rng());
  PsumBank psum_ticked(cfg), psum_whole(cfg);
  ActivationSram asram_ticked = asram, asram_whole = asram;
  SystolicArray ticked_array, whole_array;
  Controller ticked, whole;
  for (int n = 0; n < 500; ++n) {
    MxuDispatch d;
    d.kind = MxuStart(rng() % 7);
    d.w_base = uint8_t(rng() % 32);
    d.a_base = uint8_t(rng() % 32);
    d.len = uint8_t(rng() % 32);
    d.psum_addr = uint8_t(rng() % 8);
    d.psum_row = uint8_t(rng() % kRows);
    d.psum_mode = PsumMode(rng() % 4);
    d.epi = {bool(rng() % 2), bool(rng() % 2), bool(rng() % 2), bool(rng() % 2)};
    d.vpu_op = uint8_t(rng() % kNumVpuOps);
    d.requant_base = uint8_t(rng() % 32);
    Tile operand;
    for (int32_t& x : operand) x = int32_t(rng());
    ticked.scale_mul = whole.scale_mul = int32_t(rng());
    ticked.scale_shift = whole.scale_shift = uint8_t(rng() % 32);
    ticked.start(d, ticked_array, operand);
    while (!ticked.is_done()) ticked.tick(ticked_array, wsram, asram_ticked, psum_ticked);
    whole.start(d, whole_array, operand);
    whole.run_whole(whole_array, wsram, asram_whole, psum_whole.mem[psum_whole.bucket(whole.psum_addr)]);
    INFO(n);
    REQUIRE(whole_array.accum == ticked_array.accum);
    REQUIRE(whole.output_buf == ticked.output_buf);
    REQUIRE(whole.matrix_buf == ticked.matrix_buf);
    REQUIRE(whole.epilogue_buf == ticked.epilogue_buf);
    REQUIRE(whole.stat_tile() == ticked.stat_tile());
    REQUIRE(asram_whole.mem == asram_ticked.mem);
    REQUIRE(psum_whole.mem == psum_ticked.mem);
    if (rng() % 8 == 0) {  // MXU_CLEAR now and then
      ticked_array.clear_all();
      whole_array.clear_all();
    }
  }
}
