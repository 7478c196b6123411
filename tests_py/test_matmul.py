"""Matrix multiply against tinygrad's CPU device: integer products run on the MXU when every operand fits
int8 at launch time and on the VPU otherwise, exact either way; float32 runs on the VPU."""
import itertools
import zlib
import numpy as np
import pytest
from helpers import decision_log_of, tasm_of
import tinytpu
from tinygrad import Tensor, dtypes

SIZES = [1, 3, 4, 5, 8, 17, 64]

def operands(m, k, n, dtype, lo, hi, seed):
  rng = np.random.default_rng(seed)
  np_dt = np.dtype(dtype.fmt) if dtype != dtypes.float32 else np.float32
  return rng.integers(lo, hi + 1, (m, k)).astype(np_dt), rng.integers(lo, hi + 1, (k, n)).astype(np_dt)

def matmul_on(device, a, b, dtype):
  return (Tensor(a, device=device, dtype=dtype) @ Tensor(b, device=device, dtype=dtype)).numpy()

@pytest.mark.parametrize("m,k,n", list(itertools.product(SIZES, SIZES, SIZES))[::7] + [(64, 64, 64), (4, 64, 4), (1, 17, 64)])
@pytest.mark.parametrize("dtype,lo,hi", [(dtypes.int8, -128, 127), (dtypes.int32, -128, 127), (dtypes.int32, -1000, 1000),
                                         (dtypes.int16, -300, 300)])
def test_integer_matmul_exact(m, k, n, dtype, lo, hi):
  a, b = operands(m, k, n, dtype, lo, hi, zlib.crc32(f"{m},{k},{n},{dtype},{lo}".encode()))
  np.testing.assert_array_equal(matmul_on("TINYTPU", a, b, dtype), matmul_on("CPU", a, b, dtype))

def test_in_range_int8_matmul_dispatches_to_the_mxu_and_out_of_range_does_not():
  in_range = tasm_of("Tensor(np.arange(32).reshape(4, 8) - 16, device='TINYTPU', dtype=dtypes.int32) @ "
                     "Tensor(np.ones((8, 4)), device='TINYTPU', dtype=dtypes.int32)")
  out_of_range = tasm_of("Tensor(np.arange(32).reshape(4, 8) * 100, device='TINYTPU', dtype=dtypes.int32) @ "
                         "Tensor(np.ones((8, 4)), device='TINYTPU', dtype=dtypes.int32)")
  assert "MXU_OS WMEM[" in in_range and "= MUL(" not in in_range  # an MXU dispatch (OS: two K-slices)
  assert "WMEM[" not in out_of_range and "= MUL(" in out_of_range

@pytest.mark.parametrize("name,a,b,reference_cycles", [
  ("gemm_1x4x4", np.arange(4).reshape(1, 4), np.eye(4), 37),
  ("gemm_4x4x4", np.arange(16).reshape(4, 4), np.eye(4), 121),
  ("gemm_4x8x4", np.arange(32).reshape(4, 8), np.ones((8, 4)), 227)])
def test_seed_matmuls_take_no_more_cycles_than_the_reference(name, a, b, reference_cycles):
  # The reference backend's cycles for these kernels (hardware.md §7); ours must not be worse.
  ta, tb = Tensor(a, device="TINYTPU", dtype=dtypes.int32).realize(), Tensor(b, device="TINYTPU", dtype=dtypes.int32).realize()
  tinytpu.reset_counters()
  out = (ta @ tb).numpy()
  np.testing.assert_array_equal(out, (a @ b).astype(np.int32))
  assert tinytpu.counters()["cycles"] <= reference_cycles

@pytest.mark.parametrize("dtype", [dtypes.int8, dtypes.int32])
def test_matmul_with_epilogue_and_batch(dtype):
  a, b = operands(3 * 5, 6, 7, dtype, -100, 100, 1)
  bias = np.arange(7).astype(np.dtype(dtype.fmt))
  def f(device):
    x = Tensor(a.reshape(3, 5, 6), device=device, dtype=dtype)
    w = Tensor(b, device=device, dtype=dtype)
    return ((x @ w) + Tensor(bias, device=device, dtype=dtype)).relu().numpy()
  np.testing.assert_array_equal(f("TINYTPU"), f("CPU"))

def test_float_matmul_stays_on_the_vpu():
  a, b = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5), np.linspace(-2, 2, 15, dtype=np.float32).reshape(5, 3)
  np.testing.assert_allclose(matmul_on("TINYTPU", a, b, dtypes.float32), matmul_on("CPU", a, b, dtypes.float32), rtol=1e-6)

def sum_in_kernel_order(a: np.ndarray, b: np.ndarray, unroll: int) -> np.ndarray:
  """a @ b in float32, added as docs/accuracy.md says tinygrad's kernel adds it: from 0.0, each `unroll` terms
  summed among themselves left to right, then added to the running sum."""
  acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
  for k0 in range(0, a.shape[1], unroll):
    part = a[:, k0, None] * b[None, k0]
    for k in range(k0 + 1, min(k0 + unroll, a.shape[1])): part = part + a[:, k, None] * b[None, k]
    acc = acc + part
  return acc

@pytest.mark.parametrize("m,k,n,unroll", [(64, 64, 64, 4), (37, 29, 53, 1)])
def test_float_matmul_keeps_the_kernels_order_of_each_sum_under_register_blocking(m, k, n, unroll):
  rng = np.random.default_rng(m)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  a[rng.random(a.shape) < 0.05] = -0.0
  tinytpu.reset_counters()
  got = matmul_on("TINYTPU", a, b, dtypes.float32)
  assert tinytpu.counters()["xlu_ops"] > 0  # the row operand broadcast from a shared source: blocked
  np.testing.assert_array_equal(got.view(np.uint32), sum_in_kernel_order(a, b, unroll).view(np.uint32))

def test_int8_matmul_256():
  a, b = operands(256, 256, 256, dtypes.int8, -128, 127, 256)
  ta, tb = (Tensor(x, device="TINYTPU").cast(dtypes.int32) for x in (a, b))
  np.testing.assert_array_equal((ta @ tb).numpy(), a.astype(np.int32) @ b.astype(np.int32))

@pytest.mark.parametrize("batched,transposed", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype,span", [(dtypes.int8, 127), (dtypes.int32, 5000), (dtypes.float32, 3)])
def test_batched_and_transposed(batched, transposed, dtype, span):
  rng = np.random.default_rng(3)
  np_dt = np.float32 if dtype == dtypes.float32 else np.dtype(dtype.fmt)
  a = rng.integers(-span, span + 1, (3, 5, 6) if batched else (5, 6)).astype(np_dt)
  b = rng.integers(-span, span + 1, (3, 7, 6) if transposed else (3, 6, 7)).astype(np_dt)
  f = lambda d: (Tensor(a, device=d) @ (Tensor(b, device=d).transpose(-1, -2) if transposed else Tensor(b, device=d))).numpy()
  np.testing.assert_allclose(f("TINYTPU"), f("CPU"), rtol=1e-6)

CONVS = {"plain": {}, "padding": {"padding": 1}, "stride": {"stride": 2, "padding": 1}, "dilation": {"dilation": 2},
         "groups": {"groups": 2}, "all": {"padding": 2, "stride": 2, "dilation": 2, "groups": 2}}

@pytest.mark.parametrize("kind", sorted(CONVS))
@pytest.mark.parametrize("dtype,span", [(dtypes.int32, 9), (dtypes.int32, 1000), (dtypes.float32, 2)])
def test_conv2d(kind, dtype, span):
  rng = np.random.default_rng(zlib.crc32(kind.encode()))
  np_dt = np.float32 if dtype == dtypes.float32 else np.int32
  x = rng.integers(-span, span + 1, (2, 4, 9, 8)).astype(np_dt)
  w = rng.integers(-span, span + 1, (6, 4 // CONVS[kind].get("groups", 1), 3, 3)).astype(np_dt)
  f = lambda d: Tensor(x, device=d).conv2d(Tensor(w, device=d), **CONVS[kind]).numpy()
  np.testing.assert_allclose(f("TINYTPU"), f("CPU"), rtol=1e-6)

EPILOGUES = {"bias": lambda y, b: y + b, "relu": lambda y, b: y.relu(), "bias_relu": lambda y, b: (y + b).relu(),
             "sub": lambda y, b: y - b, "rsub": lambda y, b: b - y, "mul": lambda y, b: y * b, "residual": lambda y, b: y + y * b}

@pytest.mark.parametrize("name", sorted(EPILOGUES))
@pytest.mark.parametrize("m,k", [(1, 4), (1, 3), (3, 9)])
def test_fused_epilogues_exact(name, m, k):
  rng = np.random.default_rng(zlib.crc32(name.encode()) + m + k)
  a, w = rng.integers(-128, 128, (m, k)).astype(np.int32), rng.integers(-128, 128, (k, 4)).astype(np.int32)
  bias = rng.integers(-2**31, 2**31, 4, dtype=np.int64).astype(np.int32)  # wraps like the VPU
  f = lambda d: EPILOGUES[name](Tensor(a, device=d) @ Tensor(w, device=d), Tensor(bias, device=d)).numpy()
  np.testing.assert_array_equal(f("TINYTPU"), f("CPU"))

def test_bias_add_after_a_single_row_dispatch_uses_the_mxu_epilogue():
  tasm = tasm_of("Tensor([[1, 2, 3, 4]], device='TINYTPU', dtype=dtypes.int32) @ Tensor(np.eye(4), device='TINYTPU', "
                 "dtype=dtypes.int32) + Tensor([5, 6, 7, 8], device='TINYTPU', dtype=dtypes.int32)")
  assert "MXU_VPU_EPILOGUE" in tasm and "OP=ADD" in tasm.upper() and "[[6, 8, 10, 12]]" in tasm

def test_mode_choice_ws_for_one_k_slice_os_for_more():
  # 4x4 output blocks: one K-slice is cheaper weight-stationary, two or more output-stationary.
  one = tasm_of("Tensor(np.arange(16).reshape(4, 4), device='TINYTPU', dtype=dtypes.int32) @ Tensor(np.eye(4), device='TINYTPU', dtype=dtypes.int32)")
  two = tasm_of("Tensor(np.arange(32).reshape(4, 8) - 9, device='TINYTPU', dtype=dtypes.int32) @ "
                "Tensor(np.ones((8, 4)), device='TINYTPU', dtype=dtypes.int32)")
  assert "MXU_OS" not in one and "psum_write" in one
  assert "MXU_OS WMEM" in two and "MXU_OS_ACCUMULATE" in two and "LOAD_MXU_MATRIX_ROW" in two

def test_chains_sharing_activation_rows_share_a_launchs_amem():
  # 16 x 64 @ 64 x 64, which tinygrad makes a kernel of 4 output blocks (4x4) side by side per chunk: each block's
  # sum is two OS blocks of 32 terms. The four blocks of one K-range read the same 32 activation rows: one launch
  # loads them once beside the four runs of 8 weight tiles (WMEM's 32), so a chunk takes 2 launches, not 8.
  rng = np.random.default_rng(5)
  a, b = rng.integers(-128, 128, (16, 64)).astype(np.int8), rng.integers(-128, 128, (64, 64)).astype(np.int8)
  tinytpu.reset_counters()
  got = (Tensor(a, device="TINYTPU").cast(dtypes.int32) @ Tensor(b, device="TINYTPU").cast(dtypes.int32)).numpy()
  np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
  c = tinytpu.counters()
  assert c["mxu_busy"] > 0 and c["launches"] == 16 * 2, c

def test_a_dot_product_of_two_terms_stays_on_the_vpu_where_that_is_cheaper():
  # 64x2 @ 2x64: each output is two products, which the MXU would take as one short dispatch per group of four
  # lanes; the compiler lowers the kernel's first batch both ways and keeps the VPU's (estimated cycles), saying so.
  code = ("import numpy as np, tinytpu; from tinygrad import Tensor, dtypes\n"
          "rng = np.random.default_rng(0)\n"
          "a, b = rng.integers(-128, 128, (64, 2)).astype(np.int8), rng.integers(-128, 128, (2, 64)).astype(np.int8)\n"
          "got = (Tensor(a, device='TINYTPU').cast(dtypes.int32) @ Tensor(b, device='TINYTPU').cast(dtypes.int32)).numpy()\n"
          "assert (got == a.astype(np.int32) @ b.astype(np.int32)).all()\n"
          "print(tinytpu.counters()['mxu_busy'])")
  out, log = decision_log_of(code)
  assert out.split() == ["0"]  # no MXU cycle
  assert "int8 dot products on the VPU: ~" in log and "MXU: 0 of 256 int8 dot-product chains" in log
