// The compiler's text IR parser on malformed input: every missing, non-numeric or out-of-range word is a
// std::invalid_argument naming the line (Python: ValueError), never a wrapped value, a default of 0 or a
// huge allocation. The inputs that once crashed it are in fuzz/corpus/ir too.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "compiler/ir.h"
#include "helpers.h"

using namespace tinytpu::compiler;
using Catch::Matchers::Contains;

namespace {
void check_malformed(const std::string& ir, const std::string& what) {
  INFO(ir);
  CHECK_THROWS_AS(parse_kernel(ir), std::invalid_argument);
  CHECK_THROWS_WITH(parse_kernel(ir), Contains("malformed kernel IR line") && Contains(what));
}
}  // namespace

TEST_CASE("IR parser: counts, sources and arguments are checked words, not stream defaults") {
  // A source count of 2^31 - 1 once resized the source list before reading it (out of memory).
  check_malformed("KERNEL k\nCONST i32 0 1\nADD i32 2147483647 0 0\n", "line 3: source '' is not an integer");
  check_malformed("KERNEL k\nADD i32 -1\n", "source count '-1' is not an integer in 0..2147483647");
  check_malformed("KERNEL k\nADD i32 4294967298 0 0\n", "source count '4294967298'");
  check_malformed("KERNEL k\nSINK void\n", "source count ''");
  check_malformed("KERNEL k\nSINK\n", "line 2: no dtype");
  // Sources are earlier nodes; 2^32 once wrapped to node 0.
  check_malformed("KERNEL k\nCONST i32 0 1\nNEG i32 1 4294967296\n", "source '4294967296'");
  check_malformed("KERNEL k\nCONST i32 0 1\nNEG i32 1 x\n", "source 'x'");
  // An integer CONST out of int64 once threw std::out_of_range (Python: IndexError); junk once parsed as 0.
  check_malformed("KERNEL k\nCONST i32 0 99999999999999999999\n", "integer constant '99999999999999999999'");
  check_malformed("KERNEL k\nCONST i32 0 1x\n", "integer constant '1x'");
  check_malformed("KERNEL k\nCONST i32 0\n", "integer constant ''");
  check_malformed("KERNEL k\nCONST f32 0 0x1.8p+1junk\n", "float constant '0x1.8p+1junk'");
  check_malformed("KERNEL k\nCONST idx 0 8\nPARAM i32 1 0 -1 GLOBAL\n", "parameter slot '-1'");
  check_malformed("KERNEL k\nCONST idx 0 8\nPARAM i32 1 0\n", "parameter slot ''");
  check_malformed("KERNEL k\nCONST idx 0 8\nRANGE i32 1 0 4294967296 LOOP\n", "range axis '4294967296'");
}

TEST_CASE("IR parser: the renderer's spellings parse to their values") {
  Kernel k = parse_kernel(
      "KERNEL E_3 fastmath\r\n"
      "CONST i32 0 -2147483648\nCONST f32 0 0x1.8p+1\nCONST f32 0 -inf\nCONST idx 0 9223372036854775807\n"
      "PARAM f32 0 2 GLOBAL 0 0\nPARAM i32 0 1 DEFINE_VAR 1 8\nRANGE idx 1 3 7 REDUCE\n\n   \nEND void 2 6 "
      "6\n");
  CHECK(k.name == "E_3");
  CHECK(k.fast_math);
  CHECK(!k.dots_on_mxu);
  REQUIRE(k.nodes.size() == 8);
  CHECK(k.nodes[0].ivalue == INT32_MIN);
  float three = 3.0f;
  CHECK(std::memcmp(&k.nodes[1].fbits, &three, 4) == 0);
  CHECK(k.nodes[2].fbits == 0xff800000u);
  CHECK(k.nodes[3].ivalue == INT64_MAX);
  CHECK((k.nodes[4].ivalue == 2 && k.nodes[4].global));
  CHECK((k.nodes[5].ivalue == 1 && !k.nodes[5].global));
  CHECK((k.nodes[6].src == std::vector<int>{3} && k.nodes[6].ivalue == 7 && k.nodes[6].reduce));
}

TEST_CASE("IR parser: the kernel's flags, each known, in any order") {
  const std::string body = "\nCONST i32 0 1\n";
  const Kernel both = parse_kernel("KERNEL k dots=mxu fastmath" + body);
  CHECK((both.fast_math && both.dots_on_mxu));
  const Kernel none = parse_kernel("KERNEL k" + body);
  CHECK((!none.fast_math && !none.dots_on_mxu));
  check_malformed("KERNEL k dots=vpu" + body, "line 1: unknown kernel flag 'dots=vpu' (fastmath, dots=mxu)");
}

TEST_CASE("IR parser: an ADD or MUL from a REDUCE says so, and no other word is taken") {
  const std::string head = "KERNEL k\nCONST f32 0 0x1p+0\nCONST f32 0 0x1p+1\n";
  const Kernel k = parse_kernel(head + "ADD f32 2 0 1 reduce\nMUL f32 2 2 1 reduce\nADD f32 2 3 0\n");
  CHECK((k.nodes[2].reassociable && k.nodes[3].reassociable && !k.nodes[4].reassociable));
  check_malformed(head + "ADD f32 2 0 1 reduced\n", "line 4: ADD takes no word but 'reduce', not 'reduced'");
}

TEST_CASE("IR parser: blocks are well formed before any pass walks them") {
  const std::string head = "KERNEL k\nCONST i32 0 4\nRANGE i32 1 0 0 LOOP\nCONST bool 0 1\nIF void 1 2\n";
  CHECK(parse_kernel(head + "ENDIF void 1 3\nEND void 2 4 1\n").nodes.size() == 6);
  // A stray ENDIF once emptied the tracer's gate stack (heap overflow when a STORE followed).
  check_malformed("KERNEL k\nCONST bool 0 1\nENDIF void 1 0\n",
                  "line 3: ENDIF of node 0, not the innermost open IF");
  check_malformed("KERNEL k\nENDIF void 0\n", "ENDIF needs 1 sources");
  check_malformed(head + "ENDIF void 1 3\nEND void 2 4 0\n", "END of node 0, not an open RANGE");
  check_malformed(head + "ENDIF void 1 3\nEND void 2 4 1\nEND void 2 5 1\n", "line 8: END of node 1");
  // A RANGE without END once sent the tracer's skip of an empty loop past the last node.
  CHECK_THROWS_WITH(parse_kernel(head + "ENDIF void 1 3\n"), Contains("RANGE node 1 is never closed"));
  CHECK_THROWS_WITH(parse_kernel("KERNEL k\nCONST bool 0 1\nIF void 1 0\n"),
                    Contains("IF node 1 is never closed"));
}

TEST_CASE("IR parser: the IR of real tinygrad kernels (the fuzzer's seeds) parses") {
  int kernels = 0;
  for (const auto& f :
       std::filesystem::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/../fuzz/corpus/ir")) {
    if (f.path().filename().string().rfind("regress_", 0) == 0) continue;  // inputs that must be rejected
    INFO(f.path());
    CHECK_NOTHROW(parse_kernel(tinytpu::test::read_file(f.path())));
    ++kernels;
  }
  CHECK(kernels >= 10);
}
