#include "sim/loader.h"

#include <algorithm>

namespace tinytpu {

namespace {

// Calls send(i, starts) for each record the loader sends, in its order; `starts`: the SXU's start waits for
// the record (every record but the data that dma_overlap streams in during the run).
template <class Send>
void for_each_sent(const Bundle& bundle, const TensorCoreConfig& cfg, bool resident, Send send) {
  for (int pass = 0; pass < (cfg.dma_overlap ? 2 : 1); ++pass)
    for (size_t i = 0; i < bundle.records.size(); ++i) {
      const bool data = is_data(bundle.records[i]);
      if ((resident && !data) || (cfg.dma_overlap && data != (pass == 1))) continue;
      send(i, pass == 0);
    }
}

// The one place a configuration's loader is chosen.
bool fed_from_hbm(const TensorCoreConfig& cfg) { return cfg.hbm_channels > 0; }

}  // namespace

uint64_t TestbenchLoader::load(const Bundle& bundle, std::vector<uint64_t>* done) {
  const uint64_t records = bundle.records.size();
  if (!done && !cfg_.dma_overlap && !launch_.resident) return earlier(cfg_.record_cycles * records + 3, 1);
  if (done) done->assign(records, 0);
  uint64_t c = 1, sxu_ready = c;  // the cycle the last record is applied in; the last the SXU starts on
  for_each_sent(bundle, cfg_, launch_.resident, [&](size_t i, bool starts) {
    c += cfg_.record_cycles;
    if (done) (*done)[i] = earlier(c, 0);
    if (starts) sxu_ready = c;
  });
  return earlier(sxu_ready + 2, 1);  // END, do_start
}

uint64_t TestbenchLoader::earlier(uint64_t at, uint64_t least) const {
  return at > launch_.ahead + least ? at - launch_.ahead : least;
}

DmaLoader::DmaLoader(const TensorCoreConfig& cfg, const LaunchLoad& launch)
    : cfg_(cfg), launch_(launch), dma_(cfg, int64_t(launch.writes_before)), sparse_(cfg) {}

uint64_t DmaLoader::load(const Bundle& bundle, std::vector<uint64_t>* done) {
  if (done) done->assign(bundle.records.size(), 0);
  looked_up_.assign(cfg_.sparse_core ? bundle.records.size() : 0, false);
  int64_t issue = 1 - int64_t(launch_.ahead), sxu_ready = issue;  // the SXU's records are in
  for_each_sent(bundle, cfg_, launch_.resident, [&](size_t i, bool starts) {
    const int bytes = record_bytes(bundle.records[i]);
    const bool to_sparse =
        table_row(i) && sparse_.would_look_up(bytes, issue) < dma_.would_read(bytes, issue);
    const int64_t at = to_sparse ? sparse_.look_up(bytes, issue++) : dma_.read(bytes, issue++);
    if (to_sparse) looked_up_[i] = true;
    if (done) (*done)[i] = uint64_t(std::max<int64_t>(at, 0));
    if (starts) sxu_ready = std::max(sxu_ready, at);
  });
  return uint64_t(std::max<int64_t>(sxu_ready + 2, 1));  // END, do_start
}

int64_t DmaLoader::load_cycles(const Bundle& bundle, size_t i) const {
  const int bytes = record_bytes(bundle.records[i]);
  return looked_up(i) ? sparse_.lookup_cycles(bytes) : dma_.read_cycles(bytes);
}

uint64_t DmaLoader::output(RecordType type, uint64_t cycle) {
  return uint64_t(dma_.write(output_bytes(type), int64_t(cycle)));
}

bool DmaLoader::table_row(size_t i) const {
  return cfg_.sparse_core && launch_.table_rows && i < launch_.table_rows->size() && (*launch_.table_rows)[i];
}

LaunchLoader::LaunchLoader(const TensorCoreConfig& cfg, const LaunchLoad& launch)
    : held_(fed_from_hbm(cfg) ? decltype(held_)(std::in_place_type<DmaLoader>, cfg, launch)
                              : decltype(held_)(std::in_place_type<TestbenchLoader>, cfg, launch)),
      loader_(std::visit([](Loader& l) { return &l; }, held_)) {}

const LoaderFacts& loader_facts(const TensorCoreConfig& cfg) {
  static const LoaderFacts kTestbench{false, {"data_bytes", "program_bytes", "output_bytes"}};
  static const LoaderFacts kDma{true, {"hbm_bytes"}};
  return fed_from_hbm(cfg) ? kDma : kTestbench;
}

}  // namespace tinytpu
