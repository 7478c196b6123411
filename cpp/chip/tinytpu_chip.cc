#include "chip/tinytpu_chip.h"

#include <string>

#include "base/errors.h"

namespace tinytpu {

TensorCoreConfig TinyTpuChip::tc0_config() {
  TensorCoreConfig cfg;
  cfg.depth = 16;
  cfg.check();
  return cfg;
}

TinyTpuChip::TinyTpuChip() : tc0_(tc0_config()), sc_(kTableDepth, kEmbWidth, kBagSize), noc_(kNocNodes) {}

int TinyTpuChip::host_field(int v, const char* what) {
  if (v < 0 || v > 15)
    throw SimError(std::string("TinyTPUChip ") + what + " " + std::to_string(v) + " outside its 4 bits");
  return v;
}

void TinyTpuChip::load_tc0_weights(int addr, const I8Tile& data) {
  if (weights_) throw SimError("TinyTPUChip loadTC0Weights called twice in one cycle");
  weights_ = {host_field(addr, "weight address"), data};
}
void TinyTpuChip::load_tc0_activations(int addr, const I8Row& data) {
  if (activations_) throw SimError("TinyTPUChip loadTC0Activations called twice in one cycle");
  activations_ = {host_field(addr, "activation address"), data};
}
void TinyTpuChip::load_tc0_program(int pc, const Instr& instr) {
  if (instr_) throw SimError("TinyTPUChip loadTC0Program called twice in one cycle");
  instr_ = {host_field(pc, "pc"), instr};
}
void TinyTpuChip::start_tc0(int len) {
  host_field(len, "program length");
  if (!can_start_tc0())
    throw SimError("TinyTPUChip startTC0 while TC0 runs (its guard): the caller would wait");
  start_ = true;
}

Row TinyTpuChip::tc0_result() const {
  if (!tc0_.ctrl.is_done())
    throw SimError("TinyTPUChip getTC0Result before TC0's MXU is Done (its guard): the caller would wait");
  return tc0_.ctrl.output_buf;
}

void TinyTpuChip::forward_tc0_result_to_sc(int lane) {
  if (lane < 0 || lane >= kRows)
    throw SimError("TinyTPUChip forwardTC0ResultToSC: lane " + std::to_string(lane));
  if (!can_forward())
    throw SimError(sc_submitted_
                       ? "TinyTPUChip forwardTC0ResultToSC a second time (one-shot): the caller would wait"
                       : "TinyTPUChip forwardTC0ResultToSC before TC0's MXU is Done or while the "
                         "SparseCore is busy (its guard): the caller would wait");
  const int index = int(uint32_t(tc0_.ctrl.output_buf[size_t(lane)]) & 31u);  // truncate to UInt#(5)
  sc_.submit_bag({index}, 1);
  forwarded_ = true;
}

void TinyTpuChip::load_sc_embedding(int idx, const Row& emb) {
  sc_.load_embedding(idx, SparseCore::Embedding(emb.begin(), emb.end()));
}

void TinyTpuChip::tick() {
  // TC0's rules read the cycle's start; its methods' writes land after them (RegFile upd, the SXU's start)
  tc0_.tick<false>();
  if (weights_) tc0_.wsram.mem[size_t(weights_->first)] = weights_->second;
  if (activations_) tc0_.asram.mem[size_t(activations_->first)] = activations_->second;
  if (instr_) {
    tc0_.sxu.prog[size_t(instr_->first)] = instr_->second;
    tc0_.sxu.loaded.set(size_t(instr_->first));
  }
  if (start_) tc0_.sxu.start();
  sc_.tick();
  noc_.tick();
  if (forwarded_) sc_submitted_ = true;
  weights_.reset();
  activations_.reset();
  instr_.reset();
  start_ = forwarded_ = false;
  ++cycle_;
}

}  // namespace tinytpu
