// The MXU variants (config mxu_pipelined, mxu_dtype, mxu_fp_latency; docs/model.md "A pipelined MXU" and
// "A float MXU"): their timing against the derivation there, their results against the reference's (int8) and
// against the float PE's definition, one operation at a time (float).
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "base/errors.h"
#include "base/fp32.h"
#include "helpers.h"
#include "sim/controller.h"

using namespace tinytpu;

namespace {

constexpr int R = kRows;
std::mt19937 rng(51);

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TensorCoreConfig pipelined(int dtype = 0, int latency = 0, bool overlap = false) {
  TensorCoreConfig cfg;
  cfg.mxu_pipelined = true;
  cfg.mxu_dtype = dtype;
  cfg.mxu_fp_latency = latency;
  cfg.fetch_overlap = overlap;
  return cfg;
}

// Records of int8 operands: weight tile 0 and activation rows 0..R-1 (random), or of 32-bit words.
std::string int8_data() {
  std::string s = "WMEM[0] =";
  for (int i = 0; i < R * R; ++i) s += " " + std::to_string(int(rng() % 256) - 128);
  for (int k = 0; k < R; ++k) {
    s += "\nAMEM[" + std::to_string(k) + "] =";
    for (int r = 0; r < R; ++r) s += " " + std::to_string(int(rng() % 256) - 128);
  }
  return s + "\n";
}
std::string words_data(const std::vector<uint32_t>& w, const std::vector<std::vector<uint32_t>>& act) {
  std::string s = "WMEM32[0] =";
  for (uint32_t x : w) s += " " + std::to_string(int32_t(x));
  for (size_t k = 0; k < act.size(); ++k) {
    s += "\nAMEM32[" + std::to_string(k) + "] =";
    for (uint32_t x : act[k]) s += " " + std::to_string(int32_t(x));
  }
  return s + "\n";
}
// The PE matrix after `dispatches`, read row by row into VMEM and output.
std::vector<Tile> matrix_after(const std::string& data, const std::string& dispatches,
                               const TensorCoreConfig& cfg) {
  std::string p = data + dispatches + "WAIT_MXU\n";
  for (int row = 0; row < R; ++row)
    p += "LOAD_MXU_MATRIX_ROW v1, row=" + std::to_string(row) + "\nSTORE VMEM[" + std::to_string(row) +
         "], v1\n";
  p += "HALT\n";
  for (int row = 0; row < R; ++row) p += "OUTPUT_VMEM VMEM[" + std::to_string(row) + "]\n";
  return test::run(p + "END\n", cfg).vmem_results;
}
std::string os(int k, bool accumulate = false) {
  return std::string(accumulate ? "MXU_OS_ACCUMULATE" : "MXU_OS") +
         " WMEM[0], AMEM[0], k=" + std::to_string(k) + "\n";
}
std::string os_float(int k, int group, bool accumulate = false) {
  return std::string(accumulate ? "MXU_OS_FLOAT_ACCUMULATE" : "MXU_OS_FLOAT") +
         " WMEM[0], AMEM[0], k=" + std::to_string(k) + ", group=" + std::to_string(group) + "\n";
}

}  // namespace

// docs/model.md "A pipelined MXU": EXEC in cycle T, operand reads T+1..T+K' (the weight tile beside row 0),
// the last product at PE[R-1][R-1] in T+K'+2R-1, the drain in T+K'+2R, Done seen from T+K'+2R+1. WAIT_MXU
// then fires and the program ends as after the reference's dispatch: + 2, + HALT.
TEST_CASE("a pipelined MXU: a lone output-stationary dispatch is Done K' + rows + cols + 1 after its EXEC") {
  const std::string data = int8_data();
  for (int k : {0, 1, 3, R}) {
    INFO(k);
    CHECK(test::sxu_cycles(data + os(k) + "WAIT_MXU", pipelined()) ==
          uint64_t(os_pipelined_latency(k) + 2 + 1));
    CHECK(os_pipelined_latency(k) == std::max(k, 1) + 2 * R + 1);
    CHECK(os_pipelined_latency(k) < os_dispatch_interval(k));  // the reference's: K' + K + 2R + 3
    CHECK(matrix_after(data, os(k), pipelined()) == matrix_after(data, os(k), {}));
  }
}

// A chain of n dispatches: each EXEC the SXU's own interval after the one before (2, or 1 with overlapped
// fetch) unless the issue stage is still reading, max(K', interval) in all; the last is Done its latency
// after its EXEC. The reference waits for each to be Done.
TEST_CASE("a pipelined MXU: a chain's dispatches issue max(K', the SXU's interval) apart") {
  const std::string data = int8_data();
  for (bool overlap : {false, true})
    for (int k : {1, 2, 3, R})
      for (int n : {2, 5}) {
        INFO("k " << k << " n " << n << " overlap " << overlap);
        std::string chain = os(k);
        for (int i = 1; i < n; ++i) chain += os(k, true);
        const int sxu_interval = overlap ? 1 : 2;
        const uint64_t one = test::sxu_cycles(data + os(k) + "WAIT_MXU", pipelined(0, 0, overlap));
        const uint64_t many = test::sxu_cycles(data + chain + "WAIT_MXU", pipelined(0, 0, overlap));
        CHECK(many - one == uint64_t((n - 1) * std::max(std::max(k, 1), sxu_interval)));
        TensorCoreConfig reference;
        reference.fetch_overlap = overlap;
        CHECK(matrix_after(data, chain, pipelined(0, 0, overlap)) == matrix_after(data, chain, reference));
        CHECK(test::sxu_cycles(data + chain + "WAIT_MXU", reference) -
                  test::sxu_cycles(data + os(k) + "WAIT_MXU", reference) ==
              uint64_t((n - 1) * os_dispatch_interval(k)));
      }
}

TEST_CASE("a pipelined MXU: a weight-stationary dispatch or MXU_CLEAR waits until the pipeline is empty") {
  const std::string data = int8_data();
  // The WS dispatch fires in the first cycle the OS one is Done, as behind it on the reference
  const uint64_t os_alone = test::sxu_cycles(data + os(R) + "WAIT_MXU", pipelined());
  const uint64_t both =
      test::sxu_cycles(data + os(R) + "MXU WMEM[0], AMEM[0], tiles=1\nWAIT_MXU", pipelined());
  CHECK(both - os_alone == uint64_t(ws_dispatch_interval(1)));
  const std::string clear = os(R) + "MXU_CLEAR\n" + os(2, true);
  CHECK(matrix_after(data, clear, pipelined()) == matrix_after(data, clear, {}));
}

// A float dispatch's PE (docs/model.md "A float MXU"), one rounding at a time: out[r][c] over steps j of
// A_j[r] * W[j][c], runs of `group` products summed from their first, each run's sum added to the
// accumulator.
TEST_CASE(
    "a float32 MXU: runs of products summed in order, each run added to the accumulator, every op rounded") {
  // Products 1, 2^-24, 2^-24, 2^-24, ... in PE[0][0]: grouped they survive, added one by one to 1 they vanish
  std::vector<uint32_t> w(R * R, bits(1.0f));
  std::vector<std::vector<uint32_t>> act(size_t(R), std::vector<uint32_t>(size_t(R), bits(0x1p-24f)));
  act[0] = std::vector<uint32_t>(size_t(R), bits(1.0f));
  w[1] = bits(-0.0f);                        // column 1 of step 0: -0 * 1
  act[1][2] = fp32::kCanonicalNaN | 0x1234;  // a NaN operand in row 2, step 1
  const std::string data = words_data(w, act);
  TensorCoreConfig f32;
  f32.mxu_dtype = 2;
  for (int group : {0, 1, 2, R}) {
    INFO("group " << group);
    const std::vector<Tile> got = matrix_after(data, os_float(R, group), f32);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < R; ++c) {
        uint32_t acc = 0, run = 0;  // a clearing start: +0
        for (int j = 0; j < R; ++j) {
          const uint32_t p = fp32::mul(act[size_t(j)][size_t(r)], w[size_t(j * R + c)]);
          run = group != 0 && j % group == 0 ? p : j == 0 ? p : fp32::add(run, p);
          if (group != 0 && ((j + 1) % group == 0 || j == R - 1)) acc = fp32::add(acc, run);
        }
        CHECK(uint32_t(got[size_t(r)][size_t(c)]) == acc);  // group 0: the run never ends, the sum stays +0
      }
  }
}

TEST_CASE("a float32 MXU: a run left open goes on in the next dispatch, and grouping changes the sum") {
  std::vector<uint32_t> w(R * R, bits(1.0f));
  std::vector<std::vector<uint32_t>> act(size_t(R), std::vector<uint32_t>(size_t(R), bits(0x1p-24f)));
  act[0] = std::vector<uint32_t>(size_t(R), bits(1.0f));
  const std::string data = words_data(w, act);
  TensorCoreConfig f32;
  f32.mxu_dtype = 2;
  // the accumulator holds 1, then R - 1 products of 2^-24: added one by one each rounds away, as a run they
  // count
  auto rest = [](int group) {
    return "MXU_OS_FLOAT_ACCUMULATE WMEM[0], AMEM[1], k=" + std::to_string(R - 1) +
           ", group=" + std::to_string(group) + "\n";
  };
  const uint32_t one_by_one = uint32_t(matrix_after(data, os_float(1, 1) + rest(1), f32)[0][0]);
  const uint32_t grouped = uint32_t(matrix_after(data, os_float(1, 1) + rest(R - 1), f32)[0][0]);
  CHECK(one_by_one == bits(1.0f));
  CHECK(grouped == fp32::add(bits(1.0f), bits(float(R - 1) * 0x1p-24f)));
  CHECK(grouped != one_by_one);
  // An open run (group 0) continued by an accumulate of the rest: the same as one dispatch of the whole run
  if (R >= 4) {
    const std::string split =
        "MXU_OS_FLOAT WMEM[0], AMEM[0], k=2, group=0\nMXU_OS_FLOAT_ACCUMULATE WMEM[0], AMEM[2], k=2, "
        "group=2\n";
    const std::string whole = os_float(4, 4);
    // AMEM[2..3] as rows 2, 3 of the whole dispatch; its weight rows 2, 3 are the split one's rows 0, 1: all
    // 1
    CHECK(matrix_after(data, split, f32) == matrix_after(data, whole, f32));
  }
}

// bfloat16 operands' products have at most 16 significant bits: exact in float32, as the PE keeps them (not
// rounded to bfloat16, as tinygrad's bfloat16 MUL would: the random operands below make most products
// differ).
TEST_CASE("a bfloat16 MXU: the words' high halves multiplied exactly, float32 sums") {
  std::vector<uint32_t> w(R * R);
  std::vector<std::vector<uint32_t>> act(size_t(R), std::vector<uint32_t>(size_t(R), 0u));
  std::uniform_real_distribution<float> d(-4, 4);
  for (uint32_t& x : w) x = bits(d(rng));  // low halves not zero: the PE ignores them
  for (auto& row : act)
    for (uint32_t& x : row) x = bits(d(rng));
  TensorCoreConfig bf16;
  bf16.mxu_dtype = 1;
  const std::vector<Tile> got = matrix_after(words_data(w, act), os_float(R, 2), bf16);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < R; ++c) {
      uint32_t acc = 0, run = 0;
      for (int j = 0; j < R; ++j) {
        const uint32_t p =
            fp32::mul(act[size_t(j)][size_t(r)] & 0xFFFF0000u, w[size_t(j * R + c)] & 0xFFFF0000u);
        run = j % 2 ? fp32::add(run, p) : p;
        if (j % 2) acc = fp32::add(acc, run);
      }
      CHECK(uint32_t(got[size_t(r)][size_t(c)]) == acc);
    }
}

// The float PEs' pipeline stages (mxu_fp_latency) lengthen a float dispatch's fill and drain, on the
// reference sequence and on the pipelined one; an int8 dispatch on the same core keeps its timing.
TEST_CASE("a float MXU's latency adds to a float dispatch's Done, not to an int8 one's") {
  const std::string data = int8_data();
  for (int latency : {0, 3}) {
    TensorCoreConfig f32;
    f32.mxu_dtype = 2;
    f32.mxu_fp_latency = latency;
    CHECK(test::sxu_cycles(data + os_float(R, R) + "WAIT_MXU", f32) ==
          uint64_t(os_dispatch_interval(R) + latency + 2 + 1));
    CHECK(test::sxu_cycles(data + os(R) + "WAIT_MXU", f32) == uint64_t(os_dispatch_interval(R) + 2 + 1));
    CHECK(test::sxu_cycles(data + os_float(R, R) + "WAIT_MXU", pipelined(2, latency)) ==
          uint64_t(os_pipelined_latency(R) + latency + 2 + 1));
    CHECK(matrix_after(data, os(R), f32) ==
          matrix_after(data, os(R), {}));  // int8 results as the reference's
  }
}

TEST_CASE("a core without a float MXU refuses its records and dispatches by name") {
  const std::string words = "WMEM32[0] =" + std::string(size_t(R * R), ' ') + [] {
    std::string s;
    for (int i = 0; i < R * R; ++i) s += " 1";
    return s;
  }() + "\nHALT\nEND\n";
  CHECK_THROWS_WITH(test::run(words),
                    Catch::Contains("32-bit MXU operand record") && Catch::Contains("mxu_dtype"));
  CHECK_THROWS_WITH(test::run(int8_data() + os_float(1, 1) + "HALT\nEND\n"),
                    Catch::Contains("DISPATCH_MXU_OS_FLOAT needs a float MXU"));
}

namespace {
// The bank read whole after `dispatches`, as rows: row r of the tile LOAD_MXU_BANK writes.
std::vector<Tile> bank_rows(const std::string& data, const std::string& dispatches,
                            const TensorCoreConfig& cfg) {
  const Tile bank =
      test::run(data + dispatches + "LOAD_MXU_BANK v1\nSTORE VMEM[0], v1\nHALT\nOUTPUT_VMEM VMEM[0]\nEND\n",
                cfg)
          .vmem_results.at(0);
  std::vector<Tile> rows(size_t(R), Tile{});
  for (int r = 0; r < R; ++r) std::copy_n(bank.begin() + r * R, R, rows[size_t(r)].begin());
  return rows;  // in matrix_after's shape: PE row r in row 0 of the r-th tile
}
}  // namespace

// docs/model.md "The output bank": a clearing output-stationary dispatch (or a seed) on a pipelined MXU moves
// the accumulators into the bank as it clears them; the bank is read once the dispatches before it have
// drained.
TEST_CASE(
    "a pipelined MXU's output bank: the block before a clearing dispatch, readable while the next one runs") {
  const std::string data = int8_data();
  const std::string block_a = os(R) + os(R, true), block_b = os(2);
  CHECK(bank_rows(data, block_a + block_b, pipelined()) == matrix_after(data, block_a, {}));
  CHECK(matrix_after(data, block_a + block_b, pipelined()) == matrix_after(data, block_b, {}));
  // The bank read fires as block A's last dispatch is Done (EXEC + K' + 2R + 1), as WAIT_MXU would behind A
  const std::string a_last = data + os(R) + os(R, true);
  CHECK(test::sxu_cycles(a_last + os(2) + "LOAD_MXU_BANK v1", pipelined()) ==
        test::sxu_cycles(a_last + "WAIT_MXU", pipelined()));
}

namespace {
// The tests' seed words: distinct floats, element r*R+c for PE row r, column c.
std::vector<uint32_t> seed_words() {
  std::vector<uint32_t> seed(R * R);
  for (int i = 0; i < R * R; ++i) seed[size_t(i)] = bits(float(i) + 0.25f);
  return seed;
}
// Operands whose every product is 0.5 (weights 1, activations 0.5), and the seed words in VMEM[R].
std::string seed_data(const std::vector<uint32_t>& seed) {
  std::vector<uint32_t> w(R * R, bits(1.0f));
  std::vector<std::vector<uint32_t>> act(size_t(R), std::vector<uint32_t>(size_t(R), bits(0.5f)));
  Tile t;
  std::copy(seed.begin(), seed.end(), t.begin());
  return words_data(w, act) + test::vmem_decl(R, t);
}
const std::string kLoadSeed = "LOAD v2, VMEM[" + std::to_string(R) + "]\n";
TensorCoreConfig float32() {
  TensorCoreConfig c;
  c.mxu_dtype = 2;
  return c;
}
}  // namespace

TEST_CASE("a float MXU's seed: the accumulators set to a vreg's words, then summed on") {
  const std::vector<uint32_t> seed = seed_words();
  const std::string data = seed_data(seed);
  for (const TensorCoreConfig& cfg : {pipelined(2), pipelined(2, 2), float32()}) {
    INFO("pipelined " << cfg.mxu_pipelined << " latency " << cfg.mxu_fp_latency);
    const std::vector<Tile> seeded = matrix_after(data, kLoadSeed + "MXU_SEED v2\n", cfg);
    const std::vector<Tile> summed =
        matrix_after(data, kLoadSeed + "MXU_SEED v2\n" + os_float(2, 2, true), cfg);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < R; ++c) {
        const uint32_t s = seed[size_t(r * R + c)];
        CHECK(uint32_t(seeded[size_t(r)][size_t(c)]) == s);
        CHECK(uint32_t(summed[size_t(r)][size_t(c)]) == fp32::add(s, fp32::add(bits(0.5f), bits(0.5f))));
      }
    // timed as an output-stationary dispatch of k = 0, its float latency included
    CHECK(test::sxu_cycles(data + kLoadSeed + "MXU_SEED v2\nWAIT_MXU", cfg) -
              test::sxu_cycles(data + kLoadSeed, cfg) ==
          uint64_t(os_done_cycles(0, true, cfg) + 2));
    // a vreg reader: behind a background VPU op that writes its vreg it waits for the write-back, and takes
    // it
    const std::vector<Tile> after_bg =
        matrix_after(data, kLoadSeed + "VPU_BG v2 = FSUM_REDUCE_TILE(v2)\nMXU_SEED v2\n", cfg);
    CHECK(after_bg == matrix_after(data, kLoadSeed + "VPU v2 = FSUM_REDUCE_TILE(v2)\nMXU_SEED v2\n", cfg));
    CHECK(after_bg != seeded);
  }
}

// docs/model.md "A float MXU": LOAD_MXU_BANK's tile is the seed's operand, so a block read out of the bank
// and seeded back is the block again, and a float sum goes on from it as if never interrupted.
TEST_CASE("a pipelined float MXU: a block read out of the bank and seeded back is restored") {
  const std::string data = seed_data(seed_words());
  const TensorCoreConfig cfg = pipelined(2, 1);
  const std::string block = os_float(R, R) + os_float(3, 1, true);
  const std::string restored = block + os_float(2, 2) + "LOAD_MXU_BANK v3\nMXU_SEED v3\n";
  CHECK(matrix_after(data, restored, cfg) == matrix_after(data, block, cfg));
  const std::string more = os_float(R, 2, true);
  CHECK(matrix_after(data, restored + more, cfg) == matrix_after(data, block + more, cfg));
}

// On a pipelined MXU a seed issued behind a dispatch still reading its operands is queued, and enters when
// that one's reads are done: its words are the vreg's as its EXEC read it, not as later instructions leave
// it.
TEST_CASE("a pipelined float MXU: a seed queued behind a running dispatch takes its vreg as at its EXEC") {
  const std::vector<uint32_t> seed = seed_words();
  const std::string data = seed_data(seed);
  for (bool overlap : {false, true})
    for (int latency : {0, 2}) {
      INFO("overlap " << overlap << " latency " << latency);
      const TensorCoreConfig cfg = pipelined(2, latency, overlap);
      const std::string queued = kLoadSeed + os_float(R, R) + "MXU_SEED v2\nVFILL v2, imm=-7\n";
      const std::vector<Tile> got = matrix_after(data, queued, cfg);
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < R; ++c) CHECK(uint32_t(got[size_t(r)][size_t(c)]) == seed[size_t(r * R + c)]);
      // The seed's EXEC is the K-step dispatch's last read, R after its EXEC (as a dispatch behind it), and
      // it is Done as a lone k = 0 dispatch issued then: one cycle after the dispatch alone would be
      const uint64_t alone = test::sxu_cycles(data + kLoadSeed + os_float(R, R) + "WAIT_MXU", cfg);
      CHECK(test::sxu_cycles(data + queued + "WAIT_MXU", cfg) ==
            alone + uint64_t(R + os_done_cycles(0, true, cfg) - os_done_cycles(R, true, cfg)));
    }
  // The Controller itself: the queued seed's operand is copied at its start, so a later change to the tile
  // the SXU passed (its vreg) does not reach it
  TensorCoreConfig cfg = pipelined(2);
  Controller ctrl;
  ctrl.pipelined = true;
  SystolicArray array;
  WeightSram wsram(cfg);
  ActivationSram asram(cfg);
  PsumBank psum(cfg);
  MxuDispatch os_d;
  os_d.kind = MxuStart::kOSFloat;
  os_d.len = uint8_t(R);
  os_d.group = uint8_t(R);
  os_d.fp = 2;
  MxuDispatch seed_d = os_d;
  seed_d.kind = MxuStart::kSeed;
  seed_d.len = 0;
  Tile words;
  std::copy(seed.begin(), seed.end(), words.begin());
  const Tile expected = words;
  ctrl.start(os_d, array, Tile{});
  while (!ctrl.can_start(MxuStart::kSeed)) ctrl.tick(array, wsram, asram, psum);
  REQUIRE(ctrl.active());  // behind the running dispatch: queued
  ctrl.start(seed_d, array, words);
  REQUIRE(ctrl.queued_valid);
  words.fill(0);
  while (ctrl.active()) ctrl.tick(array, wsram, asram, psum);
  CHECK(array.matrix() == expected);
}
