"""A TensorCore configuration other than the reference: kernels compile for the device's config and run on it.
Results equal tinygrad's CPU device; a smaller core takes more launches."""
import numpy as np
import pytest
import tinytpu
from tinytpu import configs
from tinygrad import Tensor, Device

# Devices of their own, so their kernels are compiled for their config only. The config is set before a device's
# first kernel: a kernel keeps the config it was made with.
CORES = {"TINYTPU:7": dict(depth=8, vregs=8, psum_buckets=4, prog_depth=64, loop_depth=2, max_outputs=6),
         # exact float division and exp hold more values at once than 8 vregs: only the program memory shrinks
         "TINYTPU:8": dict(psum_buckets=4, prog_depth=128, loop_depth=2)}

@pytest.fixture(scope="module")
def cores():
  for dev, sizes in CORES.items():
    for k, v in sizes.items(): setattr(Device[dev].config, k, v)
  return list(CORES)

def test_device_default_is_reference():
  cfg = Device["TINYTPU"].config
  assert (cfg.depth, cfg.vregs, cfg.psum_buckets, cfg.prog_depth, cfg.loop_depth, cfg.max_outputs) == (32, 16, 8, 256, 4, 31)

def test_bad_config_is_a_value_error_where_it_enters():
  cfg = tinytpu.Config()
  with pytest.raises(ValueError, match="vregs = 12: must be a power of two"): cfg.vregs = 12
  with pytest.raises(ValueError, match="record_cycles = 3"): cfg.record_cycles = 3
  with pytest.raises(ValueError, match="dma_overlap = 2"): cfg.dma_overlap = 2
  assert (cfg.vregs, cfg.record_cycles, cfg.dma_overlap) == (16, 2, False)  # a refused value leaves the field
  cfg.check()

def test_every_config_field_reaches_python_and_the_search():
  from tinytpu import _core, explore
  names = [f["name"] for f in _core.config_fields()]
  assert names == [k for k in configs.fields(tinytpu.Config()) if k != "rows"]
  for f in _core.config_fields():
    assert getattr(tinytpu.Config(), f["name"]) == f["default"] and f["doc"]
    assert explore.SPACE.get(f["name"], []) == f["explore"]
  assert repr(tinytpu.Config()) == " ".join(f"{f['name']}={f['default']}" for f in _core.config_fields())

def int8_core_cost(config) -> tuple[int, int, int]:
  """The cost proxy of a core with the reference's MXU (int8 PEs, not pipelined), written out as it stood before the
  MXU had datatypes: PEs, SRAM bytes and ports. A chip counts each core's."""
  f = configs.fields(config)
  rows, banks = f["rows"], 2 if f["prefetch_launches"] else 1
  tile = rows * rows * 4
  sram = f["depth"] * (banks * tile + 2 * rows * rows + 2 * rows) + (f["vregs"] + f["psum_buckets"]) * tile + banks * f["prog_depth"] * 8
  ports = (2 * f["fetch_overlap"] + (f["record_cycles"] == 1) + 2 * f["dma_overlap"] + f["resident_program"] + f["hbm_channels"]
           + 2 * f["sparse_core"])
  return f["cores"] * rows * rows, f["cores"] * sram, f["cores"] * ports

def test_an_int8_mxus_variants_cost_what_they_cost_before_datatypes():
  int8 = [n for n in configs.named() if n["mxu"] == {"dtype": "int8", "pipelined": False}]
  assert {"reference", "all", "chip4", "8x8-all", "16x16-hbm"} <= {n["name"] for n in int8}
  for n in int8:
    pes, sram, ports = int8_core_cost(configs.from_spec(n["name"]))
    assert (n["pes"], n["pe_area"], n["sram_bytes"], n["ports"]) == (pes, 1, sram, ports), n["name"]
    assert n["area"] == pes + sram / 256 + ports

# [H] Horowitz, ISSCC 2014 (45 nm): the C++ core's arithmetic table, which the area proxy and tinytpu.energy read
def arithmetic(field: str) -> dict[str, float]: return {name: unit[field] for name, unit in tinytpu._core.arithmetic().items()}

def test_bfloat16_multiply_is_float16s_with_an_8_bit_significand_array():
  for field in ("um2", "pj"):
    h = arithmetic(field)  # the 8x8 array is the 8-bit integer multiplier; float16's 11x11 one 121/64 of it
    assert h["bf16_mul"] == pytest.approx(h["fp16_mul"] - h["int8_mul"] * (11 * 11 / (8 * 8) - 1))
    assert h["int8_mul"] < h["bf16_mul"] < h["fp16_mul"] < h["fp32_mul"]

@pytest.mark.parametrize("rows", [4, 8, 16])
def test_a_float_pe_adds_its_arithmetics_area_beside_the_int8_pe(rows):
  h = arithmetic("um2")
  int8_pe = h["int8_mul"] + h["int32_add"]
  ref = configs.cost(configs.from_spec(f"reference,rows={rows}"))
  for name, mul, dtype in (("bf16", "bf16_mul", 1), ("f32", "fp32_mul", 2)):
    config = configs.from_spec(f"{name},rows={rows}")
    c = configs.cost(config)
    assert c["mxu"] == {"dtype": f"int8+{name}", "pipelined": False} and config.mxu_dtype == dtype
    assert c["pe_area"] == pytest.approx(1 + (h[mul] + h["fp32_add"]) / int8_pe)
    # WeightSRAM and ActivationSRAM, two banks each of a tile and a row per entry, hold 32-bit words: 4 times the bytes
    mxu_sram = 2 * config.depth * (rows * rows + rows)
    assert c["sram_bytes"] == ref["sram_bytes"] + 3 * mxu_sram and c["ports"] == ref["ports"]
    assert c["area"] == pytest.approx(ref["area"] + c["pes"] * (c["pe_area"] - 1) + 3 * mxu_sram / 256)
  f32, bf16 = (configs.cost(configs.from_spec(f"{n},rows={rows}"))["pe_area"] for n in ("f32", "bf16"))
  assert f32 - 1 == pytest.approx((h["fp32_mul"] + h["fp32_add"]) / int8_pe) and 1 < bf16 < f32

@pytest.mark.parametrize("dtype", [0, 1, 2])
def test_a_pipelined_mxu_adds_weight_registers_delay_lines_and_a_read_port(dtype):
  rows = 8
  flat, piped = (configs.from_spec(f"reference,rows={rows},mxu_dtype={dtype},mxu_pipelined={p}") for p in (0, 1))
  a, b = configs.cost(flat), configs.cost(piped)
  word = 4 if dtype else 1  # a WeightSRAM or ActivationSRAM element
  # a second weight register per PE (int8, and 32 bits beside a float PE); rows(rows-1)/2 skew registers for the
  # activation rows and as many for the weight columns, a word each
  registers = rows * rows * (1 + (4 if dtype else 0)) + rows * (rows - 1) * word
  assert b["mxu"] == {**a["mxu"], "pipelined": True} and b["pe_area"] == a["pe_area"]
  assert b["sram_bytes"] == a["sram_bytes"] + registers and b["ports"] == a["ports"] + 1
  assert b["area"] == pytest.approx(a["area"] + registers / 256 + 1)

def softmax_input(r): return (r.uniform(-5, 5, (200,)).astype(np.float32),)

WORKLOADS = {  # name: (function, inputs, the core)
  "matmul_int8_range": (lambda a, b: a @ b, lambda r: (r.integers(-128, 128, (12, 20), dtype=np.int32),
                                                        r.integers(-128, 128, (20, 8), dtype=np.int32)), 0),
  "sum_rows": (lambda a: a.sum(axis=1), lambda r: (r.integers(-1000, 1000, (9, 77), dtype=np.int32),), 0),
  "where_max": (lambda a, b: (a > b).where(a, b * 3).max(), lambda r: (r.integers(-99, 99, (50,), dtype=np.int32),
                                                                       r.integers(-99, 99, (50,), dtype=np.int32)), 0),
  "softmax": (lambda a: a.softmax(), softmax_input, 1),
}

@pytest.mark.parametrize("name", WORKLOADS)
def test_smaller_core_same_results_more_launches(cores, name):
  fn, make, core = WORKLOADS[name]
  small = cores[core]
  arrays = make(np.random.default_rng(len(name)))
  out, launches = {}, {}
  for dev in ("CPU", "TINYTPU", small):
    tinytpu.reset_counters()
    out[dev] = fn(*[Tensor(a, device=dev) for a in arrays]).numpy()
    launches[dev] = tinytpu.counters(dev)["launches"]
  for dev in ("TINYTPU", small):
    if out[dev].dtype == np.float32: np.testing.assert_allclose(out[dev], out["CPU"], rtol=1e-6, atol=1e-7)
    else: np.testing.assert_array_equal(out[dev], out["CPU"])
  assert launches[small] > launches["TINYTPU"] > 0

def test_an_op_too_big_for_the_core_names_itself_and_the_core(cores):
  with pytest.raises(NotImplementedError, match=r"needs more .* than an empty launch of a TensorCore with depth=8 vregs=8"):
    Tensor(softmax_input(np.random.default_rng(0))[0], device=cores[0]).softmax().numpy()

# TensorCore variants: named configurations that change timing only. Each gets a device of its own.
# The reference core gets a device of its own too: TINYTPU itself is whatever TINYTPU_CONFIG names.
# A chip of several cores (chip4) is its cores TINYTPU:0..3 only: test_chip.py runs it. (Devices 60 on: other
# modules' devices keep the geometry they were given, test_geometry's TINYTPU:30.. wider ones.)
REFERENCE = "TINYTPU:19"
VARIANTS = {f"TINYTPU:{60 + i}": n.name for i, n in enumerate(tinytpu._core.named_configs())
            if n.name != "reference" and n.config.cores == 1}

@pytest.fixture(scope="module")
def variants():
  for dev, name in {REFERENCE: "reference", **VARIANTS}.items(): Device[dev].config = tinytpu._core.config_from_spec(name)
  return VARIANTS

@pytest.mark.parametrize("name", WORKLOADS)
def test_variants_give_the_reference_cores_results(variants, name):
  """Bit for bit the reference core's results; a variant with the reference's memories in no more cycles. (Its
  launches may differ: the compiler weighs its choices by the variant's own timing, compiler/cost.h.)"""
  fn, make, _ = WORKLOADS[name]
  arrays = make(np.random.default_rng(len(name)))
  runs = {}
  for dev in [REFERENCE, *variants]:
    tinytpu.reset_counters()
    out = fn(*[Tensor(a, device=dev) for a in arrays]).numpy()
    runs[dev] = (out.tobytes(), tinytpu.counters(dev))
  ref_out, ref = runs[REFERENCE]
  for dev, (out, c) in runs.items():
    assert out == ref_out, f"{variants.get(dev)}: results differ from the reference core's"
    cfg = Device[dev].config
    if (cfg.depth, cfg.vregs) == (32, 16):
      assert c["cycles"] <= ref["cycles"], variants.get(dev)

def test_resident_programs_are_kept_per_device_between_calls():
  """On a core with resident programs a kernel's second call sends no program: fewer cycles, the same
  result. What a device keeps is its own, and a new configuration starts with nothing resident."""
  dev, other = "TINYTPU:40", "TINYTPU:41"
  for d in (dev, other): Device[d].config = tinytpu._core.config_from_spec("resident")
  a = np.arange(64, dtype=np.int32)
  def call(d):
    tinytpu.reset_counters(d)
    np.testing.assert_array_equal((Tensor(a, device=d) * 7 - 3).numpy(), a * 7 - 3)
    return tinytpu.counters(d)["cycles"]
  first, second = call(dev), call(dev)
  assert second < first
  assert call(other) == first  # the other device's core has nothing resident yet
  Device[dev].config = tinytpu._core.config_from_spec("resident")
  assert call(dev) == first
