// Byte-for-byte agreement with the reference Bluesim testbench on recorded programs
// (kernels/reference/README.md says how they were produced).
#include <catch2/catch.hpp>
#include <filesystem>

#include "helpers.h"

using namespace tinytpu;
namespace fs = std::filesystem;

TEST_CASE("recorded reference runs reproduce exactly") {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(std::string(TINYTPU_KERNELS_DIR) + "/reference")) {
    if (entry.path().extension() != ".bundle") continue;
    fs::path expected = entry.path();
    expected.replace_extension(".expected");
    INFO(entry.path().filename().string());
    CHECK(run_bundle(parse_wire(test::read_file(entry.path()))).output() == test::read_file(expected));
    ++checked;
  }
  CHECK(checked >= 49);
}
