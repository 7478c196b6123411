#pragma once
#include <array>
#include <cstring>

#include "sim/tile.h"

namespace tinytpu {

// Memories built with mkRegFileFull/mkRegU have no defined reset value; Bluesim fills them with a
// 0xAA pattern (hardware.md §2.1). The model does the same so that a program reading memory it never
// wrote sees what the reference would, not a convenient zero.
constexpr uint8_t kUninitByte = 0xAA;
template <class T>
void fill_uninit(T& storage) {
  std::memset(static_cast<void*>(&storage), kUninitByte, sizeof(storage));
}

inline int wrap_addr(int a) { return a & (TensorCoreConfig::kDepth - 1); }  // 5-bit addresses

// VMEM#(32,4,4): one write port, readReq latches into a response register (1-cycle latency),
// combinational peek for the testbench (hardware.md §2.1).
struct Vmem {
  std::array<Tile, TensorCoreConfig::kDepth> mem;
  Tile resp;
  Vmem() {
    fill_uninit(mem);
    fill_uninit(resp);
  }
};

// VRegFile#(16,4,4): sixteen registers reset to zero, combinational read.
struct VRegFile {
  std::array<Tile, TensorCoreConfig::kVregs> v{};
};

// WeightSRAMDB / ActivationSRAMDB as the runtime uses them: only the active bank is ever written or
// read, so each behaves as a single bank (hardware.md §1 "What the testbench uses").
struct WeightSram {
  std::array<I8Tile, TensorCoreConfig::kDepth> mem;
  I8Tile resp;
  WeightSram() {
    fill_uninit(mem);
    fill_uninit(resp);
  }
};
struct ActivationSram {
  std::array<I8Row, TensorCoreConfig::kDepth> mem;
  I8Row resp;
  ActivationSram() {
    fill_uninit(mem);
    fill_uninit(resp);
  }
};

// PSUMBank#(8,4,4): eight Int32 tiles behind one RegFile write port; readReq has 1-cycle latency.
struct PsumBank {
  std::array<Tile, TensorCoreConfig::kPsumBuckets> mem;
  Tile resp;
  PsumBank() {
    fill_uninit(mem);
    fill_uninit(resp);
  }
  static int bucket(int a) { return a & (TensorCoreConfig::kPsumBuckets - 1); }
  void accumulate_row(int b, int row, const Row& data) {
    for (int c = 0; c < kRows; ++c) mem[b][row * kRows + c] = wrap_add(mem[b][row * kRows + c], data[c]);
  }
};

}  // namespace tinytpu
