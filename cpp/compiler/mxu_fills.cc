#include "compiler/mxu_fills.h"

#include <algorithm>

namespace tinytpu::compiler {

RecordType record_type(const MxuFill& f) {
  if (f.words) return f.weight ? RecordType::kWeightWords : RecordType::kActWords;
  return f.weight ? RecordType::kWeightTile : RecordType::kActTile;
}

int MxuMemory::weight(const MxuTile& data, const std::vector<int>& chains, bool words) {
  const MxuTile values = choices.canonical(data);
  int used = 0;
  for (MxuFill& f : fills)
    if (f.weight) {
      if (f.words == words && choices.canonical(f.data) == values) {
        read_by(f, chains);
        return f.addr;
      }
      ++used;
    }
  if (used == entries) return -1;
  fills.push_back({true, used, data, chains, words});
  return used;
}

int MxuMemory::activations(const MxuTile& block, int k, const std::vector<int>& chains, bool words) {
  std::vector<MxuTile> rows(k);
  std::vector<const MxuTile*> values(k);  // each row's values (Choices::canonical)
  for (int r = 0; r < k; ++r) {
    for (int i = 0; i < kRows; ++i) rows[r][i] = block[r * kRows + i];
    values[r] = &choices.canonical(rows[r]);
  }
  std::vector<MxuFill*> act;  // the rows loaded, by address (an event is called for often: no map)
  int base = 0;
  for (MxuFill& f : fills)
    if (!f.weight) {
      if (f.addr >= int(act.size())) act.resize(size_t(f.addr) + 1, nullptr);
      act[size_t(f.addr)] = &f;
      ++base;
    }
  auto holds = [&](int addr, int r) {
    const MxuFill* f = act[size_t(addr + r)];
    return f && f->words == words && choices.canonical(f->data) == *values[r];
  };
  for (int addr = 0; addr + k <= int(act.size()); ++addr) {
    bool match = true;
    for (int r = 0; r < k && match; ++r) match = holds(addr, r);
    if (!match) continue;
    for (int r = 0; r < k; ++r) read_by(*act[size_t(addr + r)], chains);
    return addr;
  }
  if (base + k > entries) return -1;
  for (int r = 0; r < k; ++r) fills.push_back({false, base + r, rows[r], chains, words});
  return base;
}

void MxuMemory::read_by(MxuFill& f, const std::vector<int>& chains) {
  if (!record_reads) return;
  for (int chain : chains)
    if (std::find(f.chains.begin(), f.chains.end(), chain) == f.chains.end()) f.chains.push_back(chain);
}

}  // namespace tinytpu::compiler
