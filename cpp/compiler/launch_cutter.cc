#include "compiler/launch_cutter.h"

#include "isa/instr_builders.h"

namespace tinytpu::compiler {

void LaunchCutter::rollback(const Mark& m) {
  cur_.cut = full_;
  cur_.program.resize(m.program);
  cur_.fills.resize(m.fills);
  cur_.drains.resize(m.drains);
  cur_.mxu_fills.resize(m.mxu_fills);
  spills_.resize(m.spills);
}

void LaunchCutter::spill(int node, int vreg, int slot) {
  cur_.program.push_back(instr::store(slot, vreg));
  cur_.drains.push_back({slot, -1, node});
  spills_.push_back(node);
}

bool LaunchCutter::finish() {
  if (cur_.program.empty() && cur_.drains.empty()) return false;
  for (int n : spills_) spilled_[n] = true;
  spills_.clear();
  cur_.program.push_back(instr::halt());
  launches_.push_back(std::move(cur_));
  cur_ = Launch{};
  const Launch& last = launches_.back();  // as large as the last: a batch's launches are mostly alike
  cur_.program.reserve(last.program.size());
  cur_.fills.reserve(last.fills.size());
  cur_.drains.reserve(last.drains.size());
  return true;
}

}  // namespace tinytpu::compiler
