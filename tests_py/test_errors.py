"""Unsupported dtypes are refused where the user made the tensor, with what to do instead."""
import os, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
import tinytpu

HINT = "make it float32 before it reaches TINYTPU: Tensor(x, dtype=dtypes.float32) or Tensor(x.astype(np.float32))"

def test_float64_numpy_array_is_refused_at_the_constructor_naming_its_shape():
  with pytest.raises(tinytpu.UnsupportedDType, match=r"TINYTPU has no float64 lanes: a float64 tensor of shape \(3, 3\)") as e:
    Tensor(np.random.randn(3, 3), device="TINYTPU")
  assert HINT in str(e.value) and ".float() on a tensor not yet on TINYTPU" in str(e.value)
  assert isinstance(e.value, TypeError) and isinstance(e.value, NotImplementedError)
  assert e.traceback[-1].frame.f_globals["__name__"] == "tinytpu.renderer"  # raised in the constructor, not a kernel
  assert len(e.traceback) <= 3

@pytest.mark.parametrize("make", [
  lambda: Tensor(np.ones((2, 5))).to("TINYTPU"),
  lambda: Tensor([1.5, 2.5], device="TINYTPU", dtype=dtypes.float64),
  lambda: Tensor.ones(2, 5, device="TINYTPU", dtype=dtypes.float64),
  lambda: Tensor.ones(2, 5, device="TINYTPU").cast(dtypes.float64),
])
def test_every_way_to_a_float64_tensor_is_refused(make):
  with pytest.raises(tinytpu.UnsupportedDType, match="TINYTPU has no float64 lanes: a float64 tensor of shape"):
    make()

def test_the_float32_ways_work():
  x = np.random.randn(3, 3)
  for t in (Tensor(x, device="TINYTPU", dtype=dtypes.float32), Tensor(x.astype(np.float32), device="TINYTPU"),
            Tensor(x).float().to("TINYTPU")):
    np.testing.assert_allclose((t * 2).numpy(), (x * 2).astype(np.float32), rtol=1e-6)
  assert Tensor(x).numpy().dtype == np.float64  # other devices keep float64

def test_float64_kernel_without_import_is_refused_at_render():
  # DEV=TINYTPU without `import tinytpu`: tinytpu loads when tinygrad opens the device, after the tensor was made.
  code = "import numpy as np; from tinygrad import Tensor; (Tensor(np.arange(6.0)) + 1).realize()"
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "DEV": "TINYTPU"})
  assert p.returncode == 1 and "UnsupportedDType: TINYTPU has no float64 lanes" in p.stderr and HINT in p.stderr

def test_the_renderer_refuses_a_float64_kernel():
  from tinytpu.renderer import check_dtypes
  from tinygrad.uop.ops import UOp
  with pytest.raises(tinytpu.UnsupportedDType, match="kernel E_4 has a float64 CAST; make it float32"):
    check_dtypes([UOp.const(1, dtypes.int32).cast(dtypes.float64)], "E_4")
  check_dtypes([UOp.const(1, dtypes.int32).cast(dtypes.float32)], "E_4")

@pytest.mark.parametrize("dt", [dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16])
def test_emulated_dtypes_compute(dt):
  # tinygrad emulates these over 32-bit lanes: nothing to refuse.
  t = Tensor([1, 2, 3], device="TINYTPU", dtype=dt)
  assert (t * 3 + t).float().numpy().tolist() == [4.0, 8.0, 12.0]
