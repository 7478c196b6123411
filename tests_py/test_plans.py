"""Compile once, run many: a kernel is compiled into a plan on its first call and later calls only run it.
The choices that depend on the data (MXU or VPU by the operands' int8 range, one load for operands with
equal values) are made per call between compiled plans, so every call computes what a fresh compile would,
in the same cycles."""
import numpy as np
import tinytpu
from tinygrad import Tensor

def matmul_call(a: np.ndarray, b: np.ndarray, ta: Tensor, tb: Tensor) -> tuple[np.ndarray, int]:
  ta.assign(Tensor(a, device="TINYTPU")).realize()
  tb.assign(Tensor(b, device="TINYTPU")).realize()
  tinytpu.reset_counters()
  out = (ta @ tb).numpy()
  return out, tinytpu.counters()["cycles"]

def test_one_kernel_many_data_same_results_and_cycles_as_first_seen():
  rng = np.random.default_rng(1)
  data = {
    "int8 range": (rng.integers(-128, 128, (8, 12)), rng.integers(-128, 128, (12, 8))),
    "out of int8 range": (rng.integers(-128, 128, (8, 12)) * 300, rng.integers(-128, 128, (12, 8))),
    "ones (equal operand tiles)": (np.ones((8, 12)), np.ones((12, 8))),
  }
  ta, tb = Tensor.zeros(8, 12, dtype="int32", device="TINYTPU").contiguous().realize(), \
           Tensor.zeros(12, 8, dtype="int32", device="TINYTPU").contiguous().realize()
  first_cycles = {}
  for name in [*data, *data, "int8 range"]:
    a, b = (x.astype(np.int32) for x in data[name])
    out, cycles = matmul_call(a, b, ta, tb)
    np.testing.assert_array_equal(out, a @ b, err_msg=name)
    assert first_cycles.setdefault(name, cycles) == cycles, name
  # the MXU runs the int8 data, the VPU the wide data (more cycles); equal tiles load once (fewer)
  assert first_cycles["out of int8 range"] > first_cycles["int8 range"] > first_cycles["ones (equal operand tiles)"]
