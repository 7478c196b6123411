#include "chip/hbm_model.h"

#include <string>

#include "base/errors.h"
#include "sim/memories.h"

namespace tinytpu {

HbmModel::HbmModel(int depth, int latency) {
  if (depth < 1 || latency < 1)
    throw SimError("HBMModel#(" + std::to_string(depth) + ", latency " + std::to_string(latency) +
                   "): depth and latency at least 1");
  Tile uninit;
  uninit.fill(kUninitWord);
  mem_.assign(size_t(1) << index_bits(depth), uninit);
  pipeline_.resize(size_t(latency));
}

int HbmModel::index(int addr, const char* what) const {
  if (addr < 0 || addr >= entries())
    throw SimError(std::string("HBMModel ") + what + ": address " + std::to_string(addr) + " outside its " +
                   std::to_string(entries()) + " entries");
  return addr;
}

void HbmModel::write(int addr, const Tile& data) {
  if (wrote_) throw SimError("HBMModel write called twice in one cycle");
  write_addr_ = index(addr, "write");
  write_data_ = data;
  wrote_ = true;
}

void HbmModel::read_req(int addr) {
  if (requested_) throw SimError("HBMModel readReq called twice in one cycle");
  requested_tile_ = mem_[size_t(index(addr, "readReq"))];  // sampled now, before this cycle's write
  requested_ = true;
}

void HbmModel::tick() {
  for (size_t i = pipeline_.size() - 1; i > 0; --i) pipeline_[i] = pipeline_[i - 1];
  pipeline_[0].valid = requested_;
  if (requested_) pipeline_[0].tile = requested_tile_;  // a bubble keeps stage 0's old tile, as the reference
  if (wrote_) mem_[size_t(write_addr_)] = write_data_;
  wrote_ = requested_ = false;
}

}  // namespace tinytpu
