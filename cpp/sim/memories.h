#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "base/tile.h"

namespace tinytpu {

// Memories built with mkRegFileFull/mkRegU have no defined reset value; Bluesim fills them with a
// 0xAA pattern (hardware.md §2.1). The model does the same so that a program reading memory it never
// wrote sees what the reference would, not a convenient zero.
constexpr uint8_t kUninitByte = 0xAA;
constexpr int32_t kUninitWord = int32_t(0x01010101u * kUninitByte);  // an Int#(32) element of such a memory
template <class T>
void fill_uninit(T& storage) {
  std::memset(static_cast<void*>(&storage), kUninitByte, sizeof(storage));
}

// Storage for the largest configuration an instruction can address; a configuration uses the first
// `depth` entries (the others are never read: an address keeps its low bits, as the hardware's narrower
// address does).
template <class Entry, int kMax>
struct Memory {
  std::array<Entry, kMax> mem;
  Entry resp;
  int mask;  // entries - 1
  explicit Memory(int entries) : mask(entries - 1) {
    std::memset(static_cast<void*>(mem.data()), kUninitByte, sizeof(Entry) * size_t(entries));
    fill_uninit(resp);
  }
  // A copy is of the entries used (a batch copies an MXU's memories per launch: 32 of 256 on the reference)
  Memory(const Memory& o) : mask(o.mask) { copy_used(o); }
  Memory& operator=(const Memory& o) {
    mask = o.mask;
    copy_used(o);
    return *this;
  }
  void copy_used(const Memory& o) {
    std::copy_n(o.mem.begin(), mask + 1, mem.begin());
    resp = o.resp;
  }
  int wrap(int a) const { return a & mask; }
};

// VMEM#(32,4,4) in the reference: one write port, readReq latches into a response register (1-cycle
// latency), combinational peek for the testbench (hardware.md §2.1).
struct Vmem : Memory<Tile, TensorCoreConfig::kMaxDepth> {
  explicit Vmem(const TensorCoreConfig& cfg) : Memory(cfg.depth) {}
};

// VRegFile#(16,4,4) in the reference: registers reset to zero, combinational read.
struct VRegFile {
  std::array<Tile, TensorCoreConfig::kMaxVregs> v{};
  int mask;
  explicit VRegFile(const TensorCoreConfig& cfg) : mask(cfg.vregs - 1) {}
  Tile& operator[](int r) { return v[r & mask]; }
};

// WeightSRAMDB / ActivationSRAMDB as the runtime uses them: only the active bank is ever written or
// read, so each behaves as a single bank (hardware.md §1 "What the testbench uses"). On a core with a float
// MXU (config mxu_dtype) a word is 32 bits: `words` holds them and `mem` their low bytes, which is what an
// int8 dispatch reads; an int8 record's value is stored sign-extended. An int8 core has no `words`.
template <class I8Entry, class Word>
struct MxuSram : Memory<I8Entry, TensorCoreConfig::kMaxDepth> {
  std::vector<Word> words;
  explicit MxuSram(const TensorCoreConfig& cfg) : Memory<I8Entry, TensorCoreConfig::kMaxDepth>(cfg.depth) {
    Word uninit;
    fill_uninit(uninit);  // 0xAA bytes: its low byte is the int8 entry's
    if (cfg.mxu_dtype != 0) words.assign(size_t(cfg.depth), uninit);
  }
  // An int8 entry was written at `addr`: its 32-bit words follow.
  void widen(int addr) {
    if (words.empty()) return;
    for (size_t k = 0; k < words[addr].size(); ++k) words[addr][k] = this->mem[addr][k];
  }
  // A 32-bit record (WMEM32, AMEM32) at `addr`.
  void write_words(int addr, const Word& w) {
    words[addr] = w;
    for (size_t k = 0; k < w.size(); ++k) this->mem[addr][k] = int8_t(w[k]);
  }
};
using WeightSram = MxuSram<I8Tile, Tile>;
using ActivationSram = MxuSram<I8Row, Row>;

// PSUMBank#(8,4,4) in the reference: Int32 tiles behind one RegFile write port; readReq has 1-cycle
// latency.
struct PsumBank : Memory<Tile, TensorCoreConfig::kMaxPsumBuckets> {
  explicit PsumBank(const TensorCoreConfig& cfg) : Memory(cfg.psum_buckets) {}
  int buckets() const { return mask + 1; }
  int bucket(int a) const { return wrap(a); }
  void accumulate_row(int b, int row, const Row& data) { accumulate_into_row(mem[b], row, data); }
  static void accumulate_into_row(Tile& bucket, int row, const Row& data) {
    for (int c = 0; c < kRows; ++c) bucket[row * kRows + c] = wrap_add(bucket[row * kRows + c], data[c]);
  }
};

}  // namespace tinytpu
