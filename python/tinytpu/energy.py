"""Time and energy of a run on a TensorCore configuration, from the counters the model keeps (tinytpu.counters()).

Time is cycles at the configuration's clock (its clock_mhz field; a chip's elapsed cycles, chip_cycles). Energy is
dynamic energy: each action the launches did (the counters of device.ACTIVITY, hbm_bytes, noc_bytes) times its energy
below. What moves into and out of the core is charged as HBM traffic: HBM's bytes on a core fed from HBM, and on a
core the testbench loads the bytes of its records and output lines, which a host's memory would supply. Leakage is
not modelled: the sources give no figure for this core, and it would add a term proportional to area x time, which the
search reports beside energy anyway.

The energies are 45 nm figures, from two measurements and one model:

- [H] M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014 (45 nm, 0.9 V):
  8-bit integer multiply 0.2 pJ, 32-bit integer add 0.1 pJ and multiply 3.1 pJ, 32-bit float add 0.9 pJ and
  multiply 3.7 pJ, a 64-bit read of an 8 KB SRAM 10 pJ.
- [O] M. O'Connor et al., "Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems", MICRO 2017:
  HBM2 at 3.9 pJ per bit moved.
- [K] S. Keckler et al., "GPUs and the Future of Parallel Computing", IEEE Micro 2011: 26 pJ to move 256 bits 1 mm
  on chip (40 nm).

SRAM energy per byte is [H]'s 8 KB figure (1.25 pJ/B) scaled by the square root of the memory's size, the way
access energy grows with a bank's wordlines and bitlines (CACTI's trend): the 1 KB register file of the reference
core 0.44 pJ/B, its 2 KB VMEM 0.63 pJ/B. A NoC byte is [K]'s wire energy for one hop of 1 mm, twice over for the
router (0.81 pJ/B each): the counter keeps bytes, not hops."""
from __future__ import annotations
import math

# pJ per action: (energy, the source and how it is derived)
OPS = {
  "mxu_mac": (0.2 + 0.1, "[H] 8-bit multiply + 32-bit add (the PE's int32 accumulator)"),
  "vpu_int": (0.1, "[H] 32-bit integer add, per lane (logic, compare, shift, select alike)"),
  "vpu_int_mul": (3.1, "[H] 32-bit integer multiply, per lane"),
  "vpu_fp_add": (0.9, "[H] 32-bit float add, per lane (compares and conversions alike)"),
  "vpu_fp_mul": (3.7, "[H] 32-bit float multiply, per lane (a TranscUnit op: per step)"),
  "xlu_lane": (0.1, "a lane through the XLU's crossbar, taken as an integer add [H]"),
  "hbm_byte": (3.9 * 8, "[O] HBM2, 3.9 pJ/bit"),
  "noc_byte": (2 * 26 / 32, "[K] 26 pJ per 256 bits per mm: a 1 mm hop, and as much again for its router"),
}
SRAM_PJ_PER_BYTE_8KB = 10 / 8  # [H] a 64-bit read of an 8 KB SRAM
INSTRUCTION_BYTES = 8  # a bundle instruction's fields, 57 bits

def sram_pj_per_byte(size_bytes: int) -> float:
  """Energy per byte read or written of an SRAM of `size_bytes`: [H]'s 8 KB figure scaled by sqrt(size / 8 KB)."""
  return SRAM_PJ_PER_BYTE_8KB * math.sqrt(size_bytes / 8192)

def breakdown(c: dict, config) -> dict[str, float]:
  """Joules by unit for counters `c` (tinytpu.counters() of a run) on `config` (its geometry and memory sizes)."""
  rows = type(config).ROWS
  tile = rows * rows * 4  # bytes: a tile of int32 lanes
  lanes = rows * rows
  def sram(reads: int, writes: int, entries: int, entry_bytes: int) -> float:
    return (reads + writes) * entry_bytes * sram_pj_per_byte(entries * entry_bytes)
  pj = {
    "mxu": c["mxu_macs"] * OPS["mxu_mac"][0],
    "vpu": (c["vpu_int_ops"] * OPS["vpu_int"][0] + c["vpu_int_mul_ops"] * OPS["vpu_int_mul"][0] +
            c["vpu_fp_add_ops"] * OPS["vpu_fp_add"][0] + c["vpu_fp_mul_ops"] * OPS["vpu_fp_mul"][0]),
    "xlu": c["xlu_ops"] * lanes * OPS["xlu_lane"][0],
    "vregs": sram(c["vreg_reads"], c["vreg_writes"], config.vregs, tile),
    "vmem": sram(c["vmem_reads"], c["vmem_writes"], config.depth, tile),
    "weight_sram": sram(c["wsram_reads"], c["wsram_writes"], config.depth, rows * rows),
    "act_sram": sram(c["asram_reads"], c["asram_writes"], config.depth, rows),
    "psum": sram(c["psum_accesses"], 0, config.psum_buckets, tile),
    "program": sram(c["instructions"], c["program_writes"], config.prog_depth, INSTRUCTION_BYTES),
    # what moves into and out of the core: HBM's bytes; on a core the testbench loads, the same records and output
    # lines, charged as HBM bytes too (the host's memory stands where HBM would)
    "hbm": (c["hbm_bytes"] if config.hbm_channels else c["data_bytes"] + c["program_bytes"] + c["output_bytes"]) *
           OPS["hbm_byte"][0],
    "noc": c.get("noc_bytes", 0) * OPS["noc_byte"][0],
  }
  return {unit: e * 1e-12 for unit, e in pj.items()}

def energy_j(c: dict, config) -> float:
  """Dynamic energy of a run, in joules."""
  return sum(breakdown(c, config).values())

def time_s(c: dict, config) -> float:
  """Elapsed time of a run at the configuration's clock: its chip's elapsed cycles (a lone core's cycles)."""
  return c.get("chip_cycles", c["cycles"]) / (config.clock_mhz * 1e6)
