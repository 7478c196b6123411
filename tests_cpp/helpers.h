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

inline std::string vmem_decl(int addr, const Tile& t) {
  std::string s = "VMEM[" + std::to_string(addr) + "] =";
  for (int v : t) s += " " + std::to_string(v);
  return s + "\n";
}

}  // namespace tinytpu::test
