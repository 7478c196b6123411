#include "compiler/mxu_fills.h"

#include <algorithm>
#include <map>

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
  for (int r = 0; r < k; ++r)
    for (int i = 0; i < kRows; ++i) rows[r][i] = block[r * kRows + i];
  std::map<int, MxuFill*> act;  // address -> row
  for (MxuFill& f : fills)
    if (!f.weight) act[f.addr] = &f;
  for (const auto& [addr, fill] : act) {
    bool match = true;
    for (int r = 0; r < k && match; ++r)
      match = act.count(addr + r) && act[addr + r]->words == words &&
              choices.canonical(act[addr + r]->data) == choices.canonical(rows[r]);
    if (!match) continue;
    for (int r = 0; r < k; ++r) read_by(*act[addr + r], chains);
    return addr;
  }
  int base = int(act.size());
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
