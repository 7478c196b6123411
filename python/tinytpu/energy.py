"""Time and energy of a run on a TensorCore configuration, from the counters the model keeps (tinytpu.counters()).

Time is cycles at the configuration's clock (its clock_mhz field; a chip's elapsed cycles, chip_cycles). Energy is
dynamic energy: each action the launches did (the counters the counter table gives an energy, cpp/sim/counters.def:
device.ACTIVITY and hbm_bytes; and noc_bytes) times its energy below. What moves into and out of the core is charged
as HBM traffic: HBM's bytes on a core fed from HBM, and on a core the testbench loads the bytes of its records and
output lines, which a host's memory would supply. Leakage is not modelled: the sources give no figure for this core,
and it would add a term proportional to area x time, which the search reports beside energy anyway.

The energies are 45 nm figures, from two measurements and one model:

- [H] M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014 (45 nm, 0.9 V):
  8-bit integer multiply 0.2 pJ, 32-bit integer add 0.1 pJ and multiply 3.1 pJ, 16-bit float multiply 1.1 pJ,
  32-bit float add 0.9 pJ and multiply 3.7 pJ (the C++ core's arithmetic table, `_core.arithmetic()`, which the
  area proxy reads too), a 64-bit read of an 8 KB SRAM 10 pJ.
- [O] M. O'Connor et al., "Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems", MICRO 2017:
  HBM2 at 3.9 pJ per bit moved.
- [K] S. Keckler et al., "GPUs and the Future of Parallel Computing", IEEE Micro 2011: 26 pJ to move 256 bits 1 mm
  on chip (40 nm).

SRAM energy per byte is [H]'s 8 KB figure (1.25 pJ/B) scaled by the square root of the memory's size, the way
access energy grows with a bank's wordlines and bitlines (CACTI's trend): the 1 KB register file of the reference
core 0.44 pJ/B, its 2 KB VMEM 0.63 pJ/B. A NoC byte is [K]'s wire energy for one hop of 1 mm, twice over for the
router (0.81 pJ/B each): the counter keeps bytes, not hops.

A PE's multiply-add is its arithmetic units' energies (`_core.mxu_pes()`): int8 an 8-bit multiply and the int32
accumulator's add (0.3 pJ), float32 a float multiply and add (4.6 pJ). [H] has no bfloat16 multiply: the core derives
it from the 16-bit float one with bfloat16's 8x8-bit significand array in place of its 11x11 one (the 8-bit integer
multiply's array, scaled by the bits squared): 1.1 - 0.2 (121/64 - 1) = 0.92 pJ, and a bfloat16 multiply-add with
float32 accumulation 1.82 pJ. On a float-MXU core WeightSRAM and ActivationSRAM words are 32 bits: an entry moves 4
times the int8 core's bytes."""
from __future__ import annotations
import math
from tinytpu import _core

H = {name: unit["pj"] for name, unit in _core.arithmetic().items()}  # [H]'s arithmetic, pJ per operation
MXU_PES = _core.mxu_pes()  # by mxu_dtype: int8, bf16, f32

# pJ per action: (energy, the source and how it is derived)
OPS = {
  **{f"mxu_{pe['dtype']}_mac": (pe["pj"], f"[H] {pe['units']}") for pe in MXU_PES},
  "vpu_int": (H["int32_add"], "[H] 32-bit integer add, per lane (logic, compare, shift, select alike)"),
  "vpu_int_mul": (H["int32_mul"], "[H] 32-bit integer multiply, per lane"),
  "vpu_fp_add": (H["fp32_add"], "[H] 32-bit float add, per lane (compares and conversions alike)"),
  "vpu_fp_mul": (H["fp32_mul"], "[H] 32-bit float multiply, per lane (a TranscUnit op: per step)"),
  "xlu_lane": (H["int32_add"], "a lane through the XLU's crossbar, taken as an integer add [H]"),
  "hbm_byte": (3.9 * 8, "[O] HBM2, 3.9 pJ/bit"),
  "noc_byte": (2 * 26 / 32, "[K] 26 pJ per 256 bits per mm: a 1 mm hop, and as much again for its router"),
}
SRAM_PJ_PER_BYTE_8KB = 10 / 8  # [H] a 64-bit read of an 8 KB SRAM
INSTRUCTION_BYTES = 8  # a bundle instruction's fields, 57 bits

def sram_pj_per_byte(size_bytes: int) -> float:
  """Energy per byte read or written of an SRAM of `size_bytes`: [H]'s 8 KB figure scaled by sqrt(size / 8 KB)."""
  return SRAM_PJ_PER_BYTE_8KB * math.sqrt(size_bytes / 8192)

# Each counter's energy column (cpp/sim/counters.def) names what one count costs: a price below.
_CHARGED = [(f["name"], f["energy"]) for f in _core.counter_fields() if f["energy"]]

def prices(config) -> dict[str, tuple[str, int, float]]:
  """Per price the counter table names: the part of the breakdown it goes to, and one count's bytes (or lanes) and
  pJ per byte (per lane), on `config` (its geometry and memory sizes). What moves into and out of the core is charged
  as HBM traffic, as its loader counts it (config.loader.moved): HBM's bytes on a core fed from HBM; on a core the
  testbench loads, its records and output lines, which a host's memory would supply (it stands where HBM would)."""
  rows = type(config).ROWS
  tile, lanes = rows * rows * 4, rows * rows  # bytes of a tile of int32 lanes, its lanes
  word = 4 if config.mxu_dtype else 1  # a WeightSRAM or ActivationSRAM element: 32 bits on a float-MXU core
  def sram(entries: int, entry_bytes: int) -> tuple[int, float]: return entry_bytes, sram_pj_per_byte(entries * entry_bytes)
  hbm, moved = OPS["hbm_byte"][0], {price for name, price in _CHARGED if name in config.loader.moved}
  # the float PEs' multiply-add by the core's datatype; an int8 core has none and counts none
  float_mac = OPS[f"mxu_{MXU_PES[config.mxu_dtype]['dtype']}_mac"][0] if config.mxu_dtype else 0.0
  return {
    "mxu_mac": ("mxu", 1, OPS["mxu_int8_mac"][0]),
    "mxu_float_mac": ("mxu", 1, float_mac),
    **{op: ("vpu", 1, OPS[op][0]) for op in ("vpu_int", "vpu_int_mul", "vpu_fp_add", "vpu_fp_mul")},
    "xlu_tile": ("xlu", lanes, OPS["xlu_lane"][0]),
    "vreg_tile": ("vregs", *sram(config.vregs, tile)),
    "vmem_tile": ("vmem", *sram(config.depth, tile)),
    "weight_tile": ("weight_sram", *sram(config.depth, rows * rows * word)),
    "act_row": ("act_sram", *sram(config.depth, rows * word)),
    "psum_tile": ("psum", *sram(config.psum_buckets, tile)),
    "instruction": ("program", *sram(config.prog_depth, INSTRUCTION_BYTES)),
    **{price: ("hbm", 1, hbm if price in moved else 0.0) for price in ("core_byte", "hbm_byte")},
  }

def breakdown(c: dict, config) -> dict[str, float]:
  """Joules by unit for counters `c` (tinytpu.counters() of a run) on `config`: each charged counter's count at its
  price (the counts of one price summed first), and the NoC's bytes."""
  counts: dict[str, int] = {}
  for name, price in _CHARGED: counts[price] = counts.get(price, 0) + c[name]
  table = prices(config)
  pj = dict.fromkeys((part for part, _, _ in table.values()), 0.0)
  for price, n in counts.items():
    part, units, pj_per_unit = table[price]
    pj[part] += n * units * pj_per_unit
  pj["noc"] = c.get("noc_bytes", 0) * OPS["noc_byte"][0]
  return {unit: e * 1e-12 for unit, e in pj.items()}

def energy_j(c: dict, config) -> float:
  """Dynamic energy of a run, in joules."""
  return sum(breakdown(c, config).values())

def time_s(c: dict, config) -> float:
  """Elapsed time of a run at the configuration's clock: its chip's elapsed cycles (a lone core's cycles)."""
  return c.get("chip_cycles", c["cycles"]) / (config.clock_mhz * 1e6)
