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
