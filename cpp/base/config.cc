#include "base/config.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <type_traits>

namespace tinytpu {

const std::vector<ConfigField>& config_fields() {
  using C = TensorCoreConfig;
  static const std::vector<ConfigField> fields = {
#define X(name, type, default_value, rule, min, max, doc, ...) \
  {#name,                                                      \
   std::is_same_v<type, bool>,                                 \
   int(default_value),                                         \
   ConfigField::Rule::rule,                                    \
   min,                                                        \
   max,                                                        \
   doc,                                                        \
   {__VA_ARGS__},                                              \
   [](const C& c) { return int(c.name); },                     \
   [](C& c, int v) { c.name = type(v); }},
#include "base/config_fields.def"
#undef X
  };
  return fields;
}

void ConfigField::check(int value) const {
  const bool pow2 = value > 0 && (value & (value - 1)) == 0;
  if (value >= min && value <= max && (rule == Rule::kRange || pow2)) return;
  const std::string range = is_bool ? "0 or 1"
                            : rule == Rule::kPowerOfTwo
                                ? "a power of two from " + std::to_string(min) + " to " + std::to_string(max)
                                : "from " + std::to_string(min) + " to " + std::to_string(max);
  throw std::invalid_argument("TensorCoreConfig." + std::string(name) + " = " + std::to_string(value) +
                              ": must be " + range + " (" + doc + ")");
}

void TensorCoreConfig::check() const {
  for (const ConfigField& f : config_fields()) f.check(f.get(*this));
  if (sparse_core && !hbm_channels)
    throw std::invalid_argument(
        "TensorCoreConfig.sparse_core = 1 needs HBM (hbm_channels > 0): "
        "the SparseCore reads its table's rows from HBM");
  if (hbm_shared && !hbm_channels)
    throw std::invalid_argument(
        "TensorCoreConfig.hbm_shared = 1 needs HBM (hbm_channels > 0): the cores share the chip's HBM "
        "channels");
}

std::string TensorCoreConfig::describe() const {
  std::string out;
  for (const ConfigField& f : config_fields())
    out += (out.empty() ? "" : " ") + std::string(f.name) + "=" + std::to_string(f.get(*this));
  return out;
}

void TensorCoreConfig::set(std::string_view field, int value) {
  for (const ConfigField& f : config_fields())
    if (field == f.name) {
      f.check(value);
      return f.put(*this, value);
    }
  std::string known;
  for (const ConfigField& f : config_fields()) known += (known.empty() ? "" : ", ") + std::string(f.name);
  throw std::invalid_argument("TensorCoreConfig has no field '" + std::string(field) + "' (fields: " + known +
                              ")");
}

namespace {

// [H]'s units by name (arithmetic.def)
struct Horowitz45nm {
#define X(name, um2, pj, doc) ArithmeticUnit name{#name, um2, pj, doc};
#include "base/arithmetic.def"
#undef X
};
constexpr Horowitz45nm kH;

// [H] measures no bfloat16 multiplier. bfloat16 keeps 8 significand bits (7 and the hidden one) where float16
// keeps 11, so its multiplier is taken as float16's with the 11x11-bit significand array replaced by an 8x8
// one: an 8x8 array is [H]'s 8-bit integer multiplier, and an array grows with its bits squared (11^2 / 8^2
// of it). The rest, exponent adder, normalisation and rounding, stays float16's (bfloat16's 8-bit exponent
// adds 3 bits to one small adder, left out). A choice between the 8-bit integer multiplier and float16's: [H]
// gives no closer one.
ArithmeticUnit bf16_multiplier() {
  constexpr double fp16_array_in_int8_muls = 11.0 * 11 / (8 * 8);
  const auto less_array = [](double fp16_mul, double int8_mul) {
    return fp16_mul - int8_mul * (fp16_array_in_int8_muls - 1);
  };
  return {"bf16_mul", less_array(kH.fp16_mul.um2, kH.int8_mul.um2),
          less_array(kH.fp16_mul.pj, kH.int8_mul.pj),
          "bfloat16 multiply: the 16-bit float multiplier with an 8x8-bit significand array in place of its "
          "11x11 one (derived)"};
}

}  // namespace

const std::vector<ArithmeticUnit>& arithmetic_units() {
  static const std::vector<ArithmeticUnit> units = {
#define X(name, um2, pj, doc) kH.name,
#include "base/arithmetic.def"
#undef X
      bf16_multiplier()};
  return units;
}

MxuPe mxu_pe(int mxu_dtype) {
  const ArithmeticUnit bf16_mul = bf16_multiplier();
  const auto pe = [](const char* dtype, const ArithmeticUnit& mul, const ArithmeticUnit& add) {
    return MxuPe{dtype, std::string(mul.name) + " + " + add.name, mul.um2 + add.um2, mul.pj + add.pj};
  };
  switch (mxu_dtype) {
    case 0:
      return pe("int8", kH.int8_mul, kH.int32_add);
    case 1:
      return pe("bf16", bf16_mul, kH.fp32_add);
    case 2:
      return pe("f32", kH.fp32_mul, kH.fp32_add);
  }
  throw std::invalid_argument("mxu_dtype " + std::to_string(mxu_dtype) + ": no such PE datatype (0, 1 or 2)");
}

CostProxy cost_proxy(const TensorCoreConfig& c) {
  constexpr int rows = TensorCoreConfig::kRows, tile_elems = TensorCoreConfig::kTileElems;
  CostProxy p;
  p.pes = tile_elems;
  const MxuPe int8_pe = mxu_pe(0);
  p.mxu = int8_pe.dtype;
  if (c.mxu_dtype) {
    const MxuPe float_pe = mxu_pe(c.mxu_dtype);
    p.pe_area += float_pe.um2 / int8_pe.um2;
    p.mxu += "+" + float_pe.dtype;
  }
  const int64_t tile_bytes = int64_t(tile_elems) * 4;
  const int mxu_word_bytes = c.mxu_dtype ? 4 : 1;  // a WeightSRAM or ActivationSRAM element
  // WeightSRAM and ActivationSRAM have two banks already; launch prefetch doubles VMEM and program memory
  const int banks = c.prefetch_launches ? 2 : 1;
  p.sram_bytes = c.depth * (banks * tile_bytes + 2 * mxu_word_bytes * (tile_elems + rows)) +
                 (c.vregs + c.psum_buckets) * tile_bytes + banks * c.prog_depth * 8;
  // a pipelined MXU: each PE's second weight register (an int8 one, and a 32-bit one beside a float PE), and
  // the skew delay lines that feed the array's edges, rows (rows - 1) / 2 words for the activation rows and
  // as many for the weight columns
  if (c.mxu_pipelined)
    p.sram_bytes += tile_elems * (1 + (c.mxu_dtype ? 4 : 0)) + rows * (rows - 1) * mxu_word_bytes;
  // fetch overlap forwards the XLU and the VPU write-backs; a one-beat loader widens its bus by the type;
  // the DMA loader writes VMEM beside the SXU (a second write port) and keeps a ready bit per entry; a
  // resident program needs the loader's path that starts one without writing program memory; an HBM channel
  // its controller's port on the DMA engine; a SparseCore its HBM port and its VMEM write port; a pipelined
  // MXU reads its weight tile and its activation row in one cycle (a second SRAM read port)
  p.ports = (c.fetch_overlap ? 2 : 0) + (c.record_cycles == 1 ? 1 : 0) + (c.dma_overlap ? 2 : 0) +
            (c.resident_program ? 1 : 0) + c.hbm_channels + (c.sparse_core ? 2 : 0) +
            (c.mxu_pipelined ? 1 : 0);
  // a chip of several cores has that many of each
  p.pes *= c.cores;
  p.sram_bytes *= c.cores;
  p.ports *= c.cores;
  p.area = p.pes * p.pe_area + double(p.sram_bytes) / 256 + p.ports;
  return p;
}

const std::vector<NamedConfig>& named_configs() {
  static const std::vector<NamedConfig> configs = [] {
    auto with = [](std::initializer_list<std::pair<const char*, int>> fields) {
      TensorCoreConfig c;
      for (auto [field, value] : fields) c.set(field, value);
      return c;
    };
    const TensorCoreConfig hbm_core = with({{"record_cycles", 1},
                                            {"dma_overlap", 1},
                                            {"fetch_overlap", 1},
                                            {"prefetch_launches", 1},
                                            {"resident_program", 1},
                                            {"hbm_channels", 1}});
    const TensorCoreConfig all_core = with({{"record_cycles", 1},
                                            {"dma_overlap", 1},
                                            {"fetch_overlap", 1},
                                            {"prefetch_launches", 1},
                                            {"resident_program", 1}});
    auto pipelined_all = [&](int mxu_dtype) {
      TensorCoreConfig c = all_core;
      c.mxu_pipelined = true;
      c.mxu_dtype = mxu_dtype;
      return c;
    };
    std::vector<NamedConfig> all{
        {"reference", "TensorCore#(4,4,32) as the reference testbench runs it", {}},
        {"overlap", "the SXU fetches the next instruction during the current one's last EXEC cycle",
         with({{"fetch_overlap", 1}})},
        {"beat", "the loader reads a record's type beside its payload: one cycle per record, not two",
         with({{"record_cycles", 1}})},
        {"overlap-beat", "both: overlapped fetch and a one-beat loader",
         with({{"fetch_overlap", 1}, {"record_cycles", 1}})},
        {"dma", "a DMA loader: program first, then data records stream in one a cycle while the SXU runs",
         with({{"record_cycles", 1}, {"dma_overlap", 1}})},
        {"dma-overlap", "the DMA loader and overlapped fetch",
         with({{"record_cycles", 1}, {"dma_overlap", 1}, {"fetch_overlap", 1}})},
        {"prefetch", "double-banked memories: the next launch's records load while the current one runs",
         with({{"prefetch_launches", 1}})},
        {"resident", "program memory keeps programs: a launch whose program is resident sends only its data",
         with({{"resident_program", 1}})},
        {"all", "every switch: one-beat DMA loader, overlapped fetch, launch prefetch and resident programs",
         all_core},
        {"pipe", "a pipelined MXU: a dispatch's operands are read while the previous one streams",
         with({{"mxu_pipelined", 1}})},
        {"f32", "float32 PEs beside the int8 ones: float matmuls run on the MXU", with({{"mxu_dtype", 2}})},
        {"bf16", "bfloat16 PEs (float32 accumulation) beside the int8 ones", with({{"mxu_dtype", 1}})},
        {"all-pipe", "the all core with a pipelined MXU", pipelined_all(0)},
        {"all-pipe-f32", "the all core with a pipelined float32 MXU", pipelined_all(2)},
        {"all-pipe-bf16", "the all core with a pipelined bfloat16 MXU", pipelined_all(1)},
        {"half", "the reference with half the SRAM depth: VMEM, WeightSRAM and ActivationSRAM of 16 entries",
         with({{"depth", 16}})},
        {"hbm", "the all core fed by a DMA engine from HBM: one channel of 16 bytes a cycle, latency 3",
         hbm_core},
        {"chip4",
         "a chip of four hbm cores, each with a SparseCore, on a ring NoC of 16-byte packets: TINYTPU:0..3",
         [&] {
           TensorCoreConfig c = hbm_core;
           c.cores = 4;
           c.noc_link_bytes = 16;
           c.sparse_core = true;
           return c;
         }()},
    };
    if (TensorCoreConfig::kRows == 4) return all;
    // Another geometry's build: the same variants of TensorCore#(R,R,32), named "RxR" and "RxR-VARIANT"
    const std::string rows = std::to_string(TensorCoreConfig::kRows), geometry = rows + "x" + rows;
    for (NamedConfig& n : all) {
      const bool reference = n.name == "reference";
      n.name = reference ? geometry : geometry + "-" + n.name;
      n.change = reference
                     ? "TensorCore#(" + rows + "," + rows +
                           ",32): the reference design with its MXU, tiles, " + "vregs and VPU at " + geometry
                     : n.change + "; " + geometry + " array and tiles";
    }
    return all;
  }();
  return configs;
}

TensorCoreConfig config_from_spec(std::string_view spec) {
  const size_t comma = spec.find(',');
  const std::string_view name = spec.substr(0, comma);
  const auto& all = named_configs();
  auto it = std::find_if(all.begin(), all.end(), [&](const NamedConfig& n) { return n.name == name; });
  if (it == all.end()) {
    std::string known;
    for (const NamedConfig& n : all) known += (known.empty() ? "" : ", ") + n.name;
    throw std::invalid_argument("no TensorCore configuration named '" + std::string(name) +
                                "' (known: " + known + ")");
  }
  TensorCoreConfig c = it->config;
  for (size_t at = comma; at != std::string_view::npos;) {
    const size_t next = spec.find(',', at + 1);
    const std::string_view item = spec.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    const size_t eq = item.find('=');
    int value = 0;
    const char* end = item.data() + item.size();
    // (a number past int's range once read as 0: from_chars' ptr passes it, its errc says so)
    const auto parsed = eq == std::string_view::npos
                            ? std::from_chars_result{item.data(), std::errc::invalid_argument}
                            : std::from_chars(item.data() + eq + 1, end, value);
    if (parsed.ec != std::errc() || parsed.ptr != end || eq + 1 == item.size())
      throw std::invalid_argument("configuration spec item '" + std::string(item) + "' is not field=integer");
    c.set(item.substr(0, eq), value);  // checked as it is set
    at = next;
  }
  return c;
}

}  // namespace tinytpu
