// ElementMemos (compiler/element_memo.h): a float product's factor computed lane by lane from one element per
// lane is kept per element on a float MXU's core, and read back as a loaded element once an earlier batch
// kept every lane's.
#include <catch2/catch.hpp>

#include "compiler/element_memo.h"

using namespace tinytpu;
using namespace tinytpu::compiler;

namespace {

// relu(x[lane / 2]) * w[lane]: each element of x in two lanes, the factor a MAX of it and +0.0.
struct ReluTimesWeight {
  int factor = -1, product = -1;
};
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
    ElementMemos memos(sizes, {}, keep);
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
