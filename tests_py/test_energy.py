"""Time and energy (tinytpu.energy) from the counters of what the launches did (device.ACTIVITY): the actions counted
for known work, each unit's energy from its action counts, and time at the configuration's clock."""
import json, math, os, subprocess, sys
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor, dtypes
from tinytpu import configs, energy

def counted(fn) -> dict:
  tinytpu.reset_counters()
  fn()
  return tinytpu.counters()

def test_an_int8_matmul_counts_its_macs_and_a_float_add_its_lane_ops():
  rng = np.random.default_rng(0)
  a, b = rng.integers(-128, 128, (16, 64)).astype(np.int8), rng.integers(-128, 128, (64, 64)).astype(np.int8)
  c = counted(lambda: (Tensor(a, device="TINYTPU").cast(dtypes.int32) @ Tensor(b, device="TINYTPU").cast(dtypes.int32)).numpy())
  assert c["mxu_macs"] == 16 * 64 * 64  # every PE product of the output-stationary dispatches is a term
  assert c["wsram_writes"] > 0 and c["asram_writes"] > 0 and c["vpu_fp_add_ops"] == 0
  x = rng.standard_normal(4096).astype(np.float32)
  c = counted(lambda: (Tensor(x, device="TINYTPU") + 1).numpy())
  assert c["vpu_fp_add_ops"] == 4096 and c["mxu_macs"] == 0 and c["vpu_int_mul_ops"] == 0
  assert c["instructions"] == c["program_writes"] > 0 and c["vmem_reads"] > 0 and c["vmem_writes"] > 0

def test_energy_is_each_units_actions_at_their_energies():
  cfg = configs.from_spec("reference")
  c = {k: 0 for k in tinytpu.device.ACTIVITY} | {"cycles": 1000, "hbm_bytes": 0, "noc_bytes": 0}
  assert energy.energy_j(c, cfg) == 0
  c.update(mxu_macs=1000, vpu_fp_mul_ops=10, vmem_reads=2, data_bytes=60, program_bytes=24, output_bytes=16, hbm_bytes=7)
  by = energy.breakdown(c, cfg)
  assert by["mxu"] == pytest.approx(1000 * 0.3e-12) and by["vpu"] == pytest.approx(10 * 3.7e-12)
  # VMEM: 32 tiles of 64 bytes, 2 KB: 1.25 pJ/B x sqrt(2 KB / 8 KB)
  assert by["vmem"] == pytest.approx(2 * 64 * 1.25 * 0.5 * 1e-12)
  # in and out of the core: the testbench's records and output lines, as HBM bytes; from HBM, HBM's bytes
  assert by["hbm"] == pytest.approx(100 * 31.2e-12)
  assert energy.breakdown(c, configs.from_spec("hbm"))["hbm"] == pytest.approx(7 * 31.2e-12)
  assert energy.energy_j(c, cfg) == pytest.approx(sum(by.values()))
  wide = configs.from_spec("16x16")  # a tile of 256 lanes: a VMEM read moves 16 times the bytes
  assert energy.breakdown({**c, "vmem_reads": 2}, wide)["vmem"] > 16 * by["vmem"]

def test_a_float_pes_multiply_add_and_its_32_bit_sram_words_cost_their_arithmetic():
  h = {name: unit["pj"] for name, unit in tinytpu._core.arithmetic().items()}  # [H], as the area proxy reads it
  zero = {k: 0 for k in tinytpu.device.ACTIVITY} | {"cycles": 1000, "hbm_bytes": 0, "noc_bytes": 0}
  int8 = energy.breakdown({**zero, "mxu_macs": 1000}, configs.from_spec("reference"))["mxu"]
  assert int8 == pytest.approx(1000 * (h["int8_mul"] + h["int32_add"]) * 1e-12)
  for name, mul in (("f32", "fp32_mul"), ("bf16", "bf16_mul")):
    cfg = configs.from_spec(name)
    by = energy.breakdown({**zero, "mxu_float_macs": 1000}, cfg)  # float32 accumulation on both
    assert by["mxu"] == pytest.approx(1000 * (h[mul] + h["fp32_add"]) * 1e-12)
    assert by["mxu"] / int8 == pytest.approx((h[mul] + h["fp32_add"]) / (h["int8_mul"] + h["int32_add"]))
    assert energy.breakdown({**zero, "mxu_macs": 1000}, cfg)["mxu"] == pytest.approx(int8)  # the int8 PE beside it
    # WeightSRAM and ActivationSRAM hold 32-bit words: 4 times the bytes, of a memory 4 times the size
    for counter, part in (("wsram_reads", "weight_sram"), ("asram_writes", "act_sram")):
      accesses = {**zero, counter: 10}
      ref = energy.breakdown(accesses, configs.from_spec("reference"))[part]
      assert energy.breakdown(accesses, cfg)[part] == pytest.approx(4 * ref * math.sqrt(4))
  f32, bf16 = (energy.breakdown({**zero, "mxu_float_macs": 1}, configs.from_spec(n))["mxu"] for n in ("f32", "bf16"))
  assert int8 / 1000 < bf16 < f32

def test_time_is_cycles_at_the_clock_which_changes_no_cycle():
  code = ("import tinytpu; from tinygrad import Tensor; from tinytpu import configs, energy\n"
          "(Tensor(list(range(64)), device='TINYTPU') * 3).numpy(); c = tinytpu.counters()\n"
          "import json; print(json.dumps([c['cycles'], energy.time_s(c, configs.from_spec())]))")
  runs = {}
  for spec in ("reference", "reference,clock_mhz=500"):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "TINYTPU_CONFIG": spec})
    assert p.returncode == 0, p.stderr
    runs[spec] = json.loads(p.stdout)
  (cycles, t), (cycles_slow, t_slow) = runs["reference"], runs["reference,clock_mhz=500"]
  assert cycles == cycles_slow and t == pytest.approx(cycles / 1e9) and t_slow == pytest.approx(2 * t)

def test_a_configurations_loader_names_the_counters_of_the_bytes_it_moves():
  names = set(counted(lambda: (Tensor([1, 2, 3], device="TINYTPU") + 1).numpy()))
  for spec in ("reference", "hbm"):
    assert configs.from_spec(spec).loader.moved and set(configs.from_spec(spec).loader.moved) <= names
  assert configs.from_spec("hbm").loader.shares_channels and not configs.from_spec("all").loader.shares_channels
