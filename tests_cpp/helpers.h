#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "isa/tasm.h"
#include "sim/runner.h"

namespace tinytpu::test {

inline RunResult run(const std::string& tasm, TensorCoreConfig cfg = {}) {
  return run_bundle(assemble(tasm), cfg);
}

// P (sxu_cycles) of a program that ends in HALT with no outputs. hardware.md §2.7 gives each
// instruction's cost including its FETCH cycle; HALT costs 1.
inline uint64_t sxu_cycles(const std::string& program, TensorCoreConfig cfg = {}) {
  return run(program + "\nHALT\nEND\n", cfg).sxu_cycles;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// r_16 as the renderer serialises it: buffer 0[0] = the sum of buffer 1's 16 int32 elements, an
// accumulator register over a REDUCE range.
constexpr const char* kSum16Ir =
    "KERNEL r_16\nCONST idx 0 1\nCAST i32 1 0\nPARAM i32 1 1 0 GLOBAL 0 0\nCONST idx 0 16\nCAST i32 1 3\n"
    "PARAM i32 1 4 1 GLOBAL 0 0\nBUFFER i32 1 1 REG\nCONST idx 0 0\nCAST i32 1 7\nINDEX i32 2 6 8\n"
    "STORE void 2 9 8\nRANGE i32 1 4 0 REDUCE\nINDEX i32 2 5 11\nLOAD i32 1 12\nAFTER i32 3 6 10 11\n"
    "INDEX i32 2 14 8\nLOAD i32 1 15\nADD i32 2 16 13\nSTORE void 2 15 17\nEND void 2 18 11\n"
    "AFTER i32 2 6 19\nINDEX i32 2 20 8\nLOAD i32 1 21\nINDEX i32 2 2 8\nSTORE void 2 23 22\nSINK void 1 "
    "24\n";

inline std::string vmem_decl(int addr, const Tile& t) {
  std::string s = "VMEM[" + std::to_string(addr) + "] =";
  for (int v : t) s += " " + std::to_string(v);
  return s + "\n";
}

}  // namespace tinytpu::test
