#include "compiler/mxu_fills.h"

#include <algorithm>
#include <map>

namespace tinytpu::compiler {

int MxuMemory::weight(const MxuTile& data, const std::vector<int>& chains) {
  const MxuTile values = choices.canonical(data);
  int used = 0;
  for (MxuFill& f : fills)
    if (f.weight) {
      if (choices.canonical(f.data) == values) {
        read_by(f, chains);
        return f.addr;
      }
      ++used;
    }
  if (used == entries) return -1;
  fills.push_back({true, used, data, chains});
  return used;
}

int MxuMemory::activations(const MxuTile& block, int k, const std::vector<int>& chains) {
  std::vector<MxuTile> rows(k);
  for (int r = 0; r < k; ++r)
    for (int i = 0; i < kRows; ++i) rows[r][i] = block[r * kRows + i];
  std::map<int, MxuFill*> act;  // address -> row
  for (MxuFill& f : fills)
    if (!f.weight) act[f.addr] = &f;
  for (const auto& [addr, fill] : act) {
    bool match = true;
    for (int r = 0; r < k && match; ++r)
      match = act.count(addr + r) && choices.canonical(act[addr + r]->data) == choices.canonical(rows[r]);
    if (!match) continue;
    for (int r = 0; r < k; ++r) read_by(*act[addr + r], chains);
    return addr;
  }
  int base = int(act.size());
  if (base + k > entries) return -1;
  for (int r = 0; r < k; ++r) fills.push_back({false, base + r, rows[r], chains});
  return base;
}

void MxuMemory::read_by(MxuFill& f, const std::vector<int>& chains) {
  if (!record_reads) return;
  for (int chain : chains)
    if (std::find(f.chains.begin(), f.chains.end(), chain) == f.chains.end()) f.chains.push_back(chain);
}

}  // namespace tinytpu::compiler
