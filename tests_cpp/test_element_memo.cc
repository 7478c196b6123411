// ElementMemos (compiler/element_memo.h): a float product's factor computed lane by lane from one element per
// lane is kept per element on a float MXU's core, and read back as a loaded element once an earlier batch
// kept every lane's; on a bfloat16 MXU's core only a factor whose values are bfloat16s (low_zero_bits).
#include <catch2/catch.hpp>

#include "compiler/element_memo.h"

using namespace tinytpu;
using namespace tinytpu::compiler;

namespace {

// relu(x[lane / 2]) * w[lane]: each element of x in two lanes, the factor a MAX of it and +0.0.
struct ReluTimesWeight {
  int factor = -1, product = -1;
};
int constant(ElementMemos& memos, TileProgram& out, DType dtype, uint32_t bits) {
  TileNode c{Op::LOAD, dtype};
  for (int l = 0; l < kLanes; ++l) out.lanes(c)[l].bits = bits;
  return memos.append(out, c);
}
int op(ElementMemos& memos, TileProgram& out, Op o, DType dtype, int a, int b = -1, int c = -1,
       DType from = DType::kVoid) {
  return memos.append(out, TileNode{o, dtype, from, a, b, c});
}
// A bfloat16 decoded as tinygrad's f2f does, from x[lane] (uint16 in a uint32 lane), times w[lane]:
// bitcast((x & 0x8000) << 16 | (x & 0x7FFF) >> 7 == 0 ? 0 : (x & 0x7FFF) << 16); `shift` 16 makes it a
// bfloat16, 15 not (`one_element`: x[0] in every lane). Returns the product's factor (the decoded value or
// its kept leaf) and the decoded node.
std::pair<int, int> append_decoded_times_weight(ElementMemos& memos, TileProgram& out, uint32_t shift,
                                                bool one_element = false) {
  TileNode x{Op::LOAD, DType::kU32}, w{Op::LOAD, DType::kF32};
  for (int l = 0; l < kLanes; ++l) {
    out.lanes(x)[l] = LeafLane(0, one_element ? 0 : l);
    out.lanes(w)[l] = LeafLane(1, l);
  }
  const int xi = memos.append(out, x), wi = memos.append(out, w);
  const DType u = DType::kU32;
  const int by = constant(memos, out, u, shift), zero = constant(memos, out, u, 0);
  const int sign =
      op(memos, out, Op::SHL, u, op(memos, out, Op::AND, u, xi, constant(memos, out, u, 0x8000)), by);
  const int nosign = op(memos, out, Op::AND, u, xi, constant(memos, out, u, 0x7FFF));
  const int exp = op(memos, out, Op::SHR, u, nosign, constant(memos, out, u, 7));
  const int is_zero = op(memos, out, Op::CMPEQ, DType::kBool, exp, zero);
  const int value = op(memos, out, Op::WHERE, u, is_zero, zero, op(memos, out, Op::SHL, u, nosign, by));
  const int decoded =
      op(memos, out, Op::BITCAST, DType::kF32, op(memos, out, Op::OR, u, sign, value), -1, -1, u);
  const int mi = op(memos, out, Op::MUL, DType::kF32, decoded, wi);
  return {out.nodes[size_t(mi)].a, decoded};
}
ReluTimesWeight append_relu_times_weight(ElementMemos& memos, TileProgram& out, int64_t first) {
  TileNode x{Op::LOAD, DType::kF32}, w{Op::LOAD, DType::kF32}, zero{Op::LOAD, DType::kF32};
  for (int l = 0; l < kLanes; ++l) {
    out.lanes(x)[l] = LeafLane(0, first + l / 2);
    out.lanes(w)[l] = LeafLane(1, l);
  }
  const int xi = memos.append(out, x), zi = memos.append(out, zero), wi = memos.append(out, w);
  TileNode relu{Op::MAX, DType::kF32, DType::kVoid, zi, xi};
  const int ri = memos.append(out, relu);
  TileNode mul{Op::MUL, DType::kF32, DType::kVoid, ri, wi};
  const int mi = memos.append(out, mul);
  return {ri, out.nodes[size_t(mi)].a};
}

}  // namespace

TEST_CASE("element memo: a float MXU's computed factor is kept per lane's element, read back once kept") {
  const std::vector<int64_t> sizes{kLanes, kLanes};  // x, w
  for (KeepDotOperands keep : {KeepDotOperands::kNo, KeepDotOperands::kYes}) {
    INFO("keep " << int(keep));
    ElementMemos memos(sizes, {}, keep, DotFactors::kFloat32);
    TileProgram out;
    // batch 1: x[0..kLanes/2) computed, and (kept) each element stored once, from its first lane
    ReluTimesWeight a = append_relu_times_weight(memos, out, 0);
    CHECK(a.product == a.factor);  // computed here
    if (keep == KeepDotOperands::kNo) {
      CHECK(out.stores.empty());
      CHECK(memos.memo_sizes().empty());
      continue;
    }
    REQUIRE(out.stores.size() == 1);
    const TileStore& st = out.stores[0];
    CHECK(st.buf == memo_slot(sizes, 0));
    CHECK(st.value == a.factor);
    for (int l = 0; l < kLanes; ++l) {
      CHECK(st.active[l] == (l % 2 == 0));
      CHECK(st.index[l] == l / 2);
    }
    CHECK(memos.memo_sizes() == std::vector<int64_t>{kLanes});
    // the same elements again in this batch: computed again (kept by this batch only), stored once
    ReluTimesWeight again = append_relu_times_weight(memos, out, 0);
    CHECK(again.product == again.factor);
    CHECK(out.stores.size() == 1);
    memos.batch_compiled();
    out.clear();
    // batch 2: every lane's element kept: one gather of the memo buffer; half of them kept: computed
    ReluTimesWeight kept = append_relu_times_weight(memos, out, 0);
    const TileNode& leaf = out.nodes[size_t(kept.product)];
    CHECK(leaf.op == Op::LOAD);
    for (int l = 0; l < kLanes; ++l) CHECK(out.lanes(leaf)[l] == LeafLane(memo_slot(sizes, 0), l / 2));
    ReluTimesWeight half = append_relu_times_weight(memos, out, kLanes / 4);
    CHECK(half.product == half.factor);
    REQUIRE(out.stores.size() == 1);  // the elements not kept yet: x[kLanes/2..3 kLanes/4)
    int stored = 0;
    for (int l = 0; l < kLanes; ++l) stored += out.stores[0].active[l];
    CHECK(stored == kLanes / 4);
    CHECK(memos.reads() == 1);
  }
}

TEST_CASE("low_zero_bits: the low bits every lane's value has zero, by its operations and constants") {
  ElementMemos memos({kLanes, kLanes}, {}, KeepDotOperands::kNo, DotFactors::kFloat32);
  TileProgram out;
  const auto [factor16, decoded16] = append_decoded_times_weight(memos, out, 16);
  CHECK(low_zero_bits(out, decoded16) == 16);
  const auto [factor15, decoded15] = append_decoded_times_weight(memos, out, 15);
  CHECK(low_zero_bits(out, decoded15) == 15);
  const DType u = DType::kU32;
  const int c = constant(memos, out, u, 0x00F0'0000u);  // 20 low zeros
  const int x = out.nodes[size_t(decoded16)].a;         // the OR: 16
  CHECK(low_zero_bits(out, c) == 20);
  CHECK(low_zero_bits(out, op(memos, out, Op::AND, u, x, c)) == 20);  // the larger
  CHECK(low_zero_bits(out, op(memos, out, Op::ADD, u, x, c)) == 16);  // the smaller
  CHECK(low_zero_bits(out, op(memos, out, Op::MUL, u, x, c)) == 32);  // their sum, at most 32
  CHECK(low_zero_bits(out, constant(memos, out, u, 0)) == 32);
  CHECK(low_zero_bits(out, op(memos, out, Op::NEG, DType::kF32, decoded16)) == 16);  // the sign bit flipped
  // a float operation's result may have any bits
  CHECK(low_zero_bits(out, op(memos, out, Op::MUL, DType::kF32, decoded16, decoded16)) == 0);
  CHECK(low_zero_bits(out, op(memos, out, Op::SHR, u, x, constant(memos, out, u, 1))) == 0);
}

TEST_CASE("element memo: in a kernel of bfloat16 tensors only factors whose values are bfloat16s are kept") {
  const std::vector<int64_t> sizes{kLanes, kLanes};  // x, w
  ElementMemos memos(sizes, {}, KeepDotOperands::kYes, DotFactors::kBfloat16);
  TileProgram out;
  // a ReLU's value may have any low bits: never kept, however often its elements are seen
  for (int batch = 0; batch < 2; ++batch) {
    ReluTimesWeight relu = append_relu_times_weight(memos, out, 0);
    CHECK(relu.product == relu.factor);
    CHECK(out.stores.empty());
    memos.batch_compiled();
    out.clear();
  }
  const auto [not_kept, decoded15] = append_decoded_times_weight(memos, out, 15);
  CHECK(not_kept == decoded15);
  CHECK(out.stores.empty());
  // a decoded bfloat16: stored by its first batch into a slot marked as bfloat16s, read from it by the next
  const auto [computed, decoded] = append_decoded_times_weight(memos, out, 16);
  CHECK(computed == decoded);
  REQUIRE(out.stores.size() == 1);
  const int slot = out.stores[0].buf;
  CHECK(slot == memo_slot(sizes, 0));
  REQUIRE(memos.bfloat16_slots().size() == size_t(slot) + 1);
  CHECK(memos.bfloat16_slots()[size_t(slot)]);
  CHECK_FALSE(memos.bfloat16_slots()[0]);  // x itself: a buffer may hold anything
  memos.batch_compiled();
  out.clear();
  const auto [kept, recomputed] = append_decoded_times_weight(memos, out, 16);
  REQUIRE(kept != recomputed);
  for (int l = 0; l < kLanes; ++l) CHECK(out.lanes(out.nodes[size_t(kept)])[l] == LeafLane(slot, l));
  // one element in every lane (element 0, kept above): read from the slot at once, in every lane
  const auto [element, decoded_again] = append_decoded_times_weight(memos, out, 16, true);
  REQUIRE(element != decoded_again);
  for (int l = 0; l < kLanes; ++l) CHECK(out.lanes(out.nodes[size_t(element)])[l] == LeafLane(slot, 0));
}

TEST_CASE("element memo: a bfloat16 factor of one element in every lane is kept from its first sight") {
  const std::vector<int64_t> sizes{kLanes, kLanes};
  for (DotFactors factors : {DotFactors::kFloat32, DotFactors::kBfloat16}) {
    INFO("bfloat16 factors " << (factors == DotFactors::kBfloat16));
    ElementMemos memos(sizes, {}, KeepDotOperands::kYes, factors);
    TileProgram out;
    append_decoded_times_weight(memos, out, 16, true);
    // kept per element (float32 factors: not a float32's, and seen once, not worth a memo yet)
    CHECK(out.stores.size() == (factors == DotFactors::kBfloat16 ? 1u : 0u));
  }
}
