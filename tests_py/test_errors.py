"""Unsupported dtypes are refused where a kernel would compute in them, naming the user's lines, with what to do instead."""
import multiprocessing, os, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
import tinytpu

HINT = "make it float32 before it reaches TINYTPU: Tensor(x, dtype=dtypes.float32) or Tensor(x.astype(np.float32))"
def here(ahead: int = 0) -> str: return f"{__file__}:{sys._getframe(1).f_lineno + ahead}"  # a line as a refusal names it

def test_a_float64_tensor_is_made_and_read_without_a_kernel():
  # as on tinygrad's devices without float64: only a kernel needs float64 lanes (upstream test_tensor's dtype tests)
  x = np.random.randn(3, 3)
  t = Tensor(x, device="TINYTPU")
  assert t.dtype == dtypes.float64 and t.shape == (3, 3) and t.element_size() == 8
  assert Tensor.randn(3, dtype=dtypes.float64, device="TINYTPU").element_size() == 8
  assert Tensor(np.array([1]), dtype=dtypes.float64, device="TINYTPU").dtype == dtypes.float64
  np.testing.assert_equal(t.numpy(), x)  # copied in and out, bytes as they were

def test_computing_in_float64_is_refused_naming_the_users_lines():
  t = Tensor(np.random.randn(3, 3), device="TINYTPU"); made = here()
  with pytest.raises(tinytpu.UnsupportedDType) as e:
    computed = here(1)
    (t * 2).numpy()
  msg = str(e.value)
  assert msg.startswith("TINYTPU has no float64 lanes: kernel E_9 has a float64 buffer of 9 elements; " + HINT), msg
  assert f" Computed for {computed} ((t * 2).numpy())." in msg, msg
  assert f" Its float64 tensor was made at {made} (t = Tensor(np.random.randn(3, 3), device=\"TINYTPU\"); made = here())." in msg
  assert isinstance(e.value, TypeError) and isinstance(e.value, NotImplementedError)

MADE = [
  lambda: Tensor(np.ones((2, 5))).to("TINYTPU"),
  lambda: Tensor([1.5, 2.5], device="TINYTPU", dtype=dtypes.float64),
  lambda: Tensor.ones(2, 5, device="TINYTPU", dtype=dtypes.float64),
  lambda: Tensor.ones(2, 5, device="TINYTPU").cast(dtypes.float64),
]
@pytest.mark.parametrize("make", MADE)
def test_every_way_to_a_float64_tensor_is_refused_once_computed(make):
  t = make()
  assert t.dtype == dtypes.float64
  with pytest.raises(tinytpu.UnsupportedDType, match="TINYTPU has no float64 lanes: kernel ") as e:
    computed = here(1)
    (t + 1).realize()
  assert f" Computed for {computed} (" in str(e.value) and f"made at {__file__}:{make.__code__.co_firstlineno} (" in str(e.value)

def test_kernels_compiled_in_worker_processes_name_the_users_lines():
  # several kernels compile at once in tinygrad's worker processes, far from the user's stack
  a, b = [Tensor(np.random.randn(16, 16), device="TINYTPU") for _ in range(2)]; made = here()
  with pytest.raises(tinytpu.UnsupportedDType) as e:
    computed = here(1)
    Tensor.realize((a @ b).sum(0), (a + b).max(1), (a * b).exp())
  assert multiprocessing.active_children(), "the kernels compiled in the user's process: this test no longer tests workers"
  assert f" Computed for {computed} (" in str(e.value) and f" Its float64 tensor was made at {made} (" in str(e.value)

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
  assert "Computed for <string>:1." in p.stderr  # tinytpu loaded inside that realize: its line is found at render

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
