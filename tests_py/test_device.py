"""The TINYTPU device against tinygrad's CPU device: same expression, same inputs, results compared
exactly for integers and within float32 tolerance for floats."""
import functools
import zlib
import numpy as np
import pytest
import tinytpu
from helpers import tasm_of
from tinygrad import Tensor, dtypes

INT_DTYPES = [dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8, dtypes.uint16, dtypes.uint32]
rng = np.random.default_rng(0)

@pytest.fixture(autouse=True)
def _seed_per_test(request):  # the same data for a test however xdist distributes them
  global rng
  rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))

def data(shape, dtype, lo=-100, hi=100):
  if dtypes.is_float(dtype): return rng.uniform(lo, hi, size=shape).astype(np.float32)
  if dtype == dtypes.bool: return rng.integers(0, 2, size=shape).astype(np.bool_)
  info = np.iinfo(dtypes.as_numpy_dtype(dtype) if hasattr(dtypes, "as_numpy_dtype") else np.dtype(dtype.fmt))
  return rng.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(np.dtype(dtype.fmt))

def both(fn, *arrays, dtype=None):
  outs = []
  for dev in ("TINYTPU", "CPU"):
    ts = [Tensor(a, device=dev, dtype=dtype) if dtype is not None else Tensor(a, device=dev) for a in arrays]
    outs.append(fn(*ts).numpy())
  return outs

def check(fn, *arrays, dtype=None, atol=1e-6, rtol=1e-6):
  got, want = both(fn, *arrays, dtype=dtype)
  assert got.dtype == want.dtype and got.shape == want.shape
  if np.issubdtype(got.dtype, np.floating): np.testing.assert_allclose(got, want, atol=atol, rtol=rtol, equal_nan=True)
  else: np.testing.assert_array_equal(got, want)

BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "max": lambda a, b: a.maximum(b), "min": lambda a, b: a.minimum(b), "lt": lambda a, b: a < b,
          "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b}

@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.float32, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint32])
def test_binary(op, dtype):
  check(BINARY[op], data((7, 5), dtype), data((7, 5), dtype), dtype=dtype)

@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.int16, dtypes.int8])
def test_int_division_and_mod(dtype):
  a, b = data((40,), dtype), data((40,), dtype)
  b[b == 0] = 3
  check(lambda x, y: x // y, a, b, dtype=dtype)
  check(lambda x, y: x % y, a, b, dtype=dtype)

@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.uint8, dtypes.int16])
def test_bitwise_and_shifts(dtype):
  a, b = data((33,), dtype, 0, 100), data((33,), dtype, 0, 100)
  check(lambda x, y: (x & y) | (x ^ 5), a, b, dtype=dtype)
  check(lambda x: (x << 2) + (x >> 1), a, dtype=dtype)

def test_int_wraparound():
  a = np.array([2**31 - 1, -2**31, 12345678, -7], dtype=np.int32)
  check(lambda x: x * 3 + 7, a)
  check(lambda x: x.cast(dtypes.int8) * 3, a)
  check(lambda x: x.cast(dtypes.uint16) + 65535, a)

# Every float32 elementwise Tensor method, on inputs inside its domain. Tolerances are tinygrad's usual ones:
# these are tinygrad's decompositions over the TensorCore's exact add/mul/compare, FDIV and the 32-bit sine.
FLOAT_UNARY = {m: (lambda m: lambda x: getattr(x, m)())(m) for m in (
  "neg", "abs", "relu", "exp", "exp2", "sigmoid", "hardsigmoid", "tanh", "sinh", "cosh", "asinh", "atan", "erf", "gelu",
  "quick_gelu", "silu", "swish", "relu6", "hardswish", "hardtanh", "elu", "celu", "selu", "leaky_relu", "softplus",
  "mish", "softsign", "sign", "reciprocal", "square", "trunc", "floor", "ceil", "round", "isinf", "isnan",
  "isfinite", "logical_not", "logsigmoid", "sin", "cos", "tan")}
FLOAT_UNARY.update({"div": lambda x: x / 3.0, "log": lambda x: x.abs().log(), "log2": lambda x: x.abs().log2(),
                    "sqrt": lambda x: x.abs().sqrt(), "rsqrt": lambda x: x.abs().rsqrt(), "asin": lambda x: (x / 5).asin(),
                    "acos": lambda x: (x / 5).acos(), "atanh": lambda x: (x / 5).atanh(), "acosh": lambda x: x.abs().acosh()})

@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(op):
  # tan near pi/2 is ill-conditioned: the CPU device and TINYTPU are both ~4.5e-4 (relative) from float64 there
  tol = 1e-3 if op == "tan" else 1e-5
  check(FLOAT_UNARY[op], data((6, 6), dtypes.float32, -5, 5), atol=1e-5, rtol=tol)

FLOAT_BINARY = {"div": lambda a, b: a / b, "pow": lambda a, b: a.abs() ** b, "mod": lambda a, b: a % b,
                "fmod": lambda a, b: a.fmod(b), "copysign": lambda a, b: a.copysign(b), "le": lambda a, b: a <= b,
                "ge": lambda a, b: a >= b, "logaddexp": lambda a, b: a.logaddexp(b), "idiv": lambda a, b: a // b}

@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary(op):
  b = data((6, 6), dtypes.float32, -5, 5)
  b[np.abs(b) < 0.1] = 0.5
  check(FLOAT_BINARY[op], data((6, 6), dtypes.float32, -5, 5), b, atol=1e-5, rtol=1e-5)

TERNARY = {"where": lambda c, a, b: (c > 0).where(a, b), "lerp": lambda c, a, b: a.lerp(b, c),
           "clip": lambda c, a, b: c.clip(a.minimum(b), a.maximum(b)), "mulacc": lambda c, a, b: c * a + b}

# lerp interpolates by a fractional weight: only its float32 cases are generated
@pytest.mark.parametrize("op,dtype", [(op, dtype) for op in sorted(TERNARY) for dtype in
                                      ([dtypes.float32] if op == "lerp" else [dtypes.float32, dtypes.int32, dtypes.int8])])
def test_ternary(op, dtype):
  check(TERNARY[op], data((5, 5), dtype, -9, 9), data((5, 5), dtype, -9, 9), data((5, 5), dtype, -9, 9), dtype=dtype,
        atol=1e-5, rtol=1e-5)

INT_UNARY = {"neg": lambda x: -x, "abs": lambda x: x.abs(), "relu": lambda x: x.relu(), "sign": lambda x: x.sign(),
             "square": lambda x: x.square(), "bitwise_not": lambda x: x.bitwise_not(), "not0": lambda x: x.logical_not()}

@pytest.mark.parametrize("op", sorted(INT_UNARY))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_unary(op, dtype):
  check(INT_UNARY[op], data((37,), dtype, -300, 300), dtype=dtype)

@pytest.mark.parametrize("op", ["lt", "gt", "eq", "ne", "max", "min"])
@pytest.mark.parametrize("dtype", [dtypes.uint16, dtypes.bool])
def test_binary_more_dtypes(op, dtype):
  check(BINARY[op], data((7, 5), dtype, 0, 70000), data((7, 5), dtype, 0, 70000), dtype=dtype)

def test_float_add_mul_bit_exact():
  a, b = data((64,), dtypes.float32, -1e6, 1e6), data((64,), dtypes.float32, -1e-3, 1e-3)
  got, want = both(lambda x, y: x * y + x, a, b)
  np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))

ALL_DTYPES = [dtypes.bool, *INT_DTYPES, dtypes.float32]

@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_casts(src, dst):
  a = data((50,), src, -1000, 1000)
  if src == dtypes.int32: a[:4] = [2**31 - 1, -2**31, 16777217, -16777217]
  if src == dtypes.uint32: a[:3] = [2**32 - 1, 2**31, 16777217]
  if src == dtypes.float32 and dst != dtypes.bool:  # C's float->int is undefined outside the target's range
    info = np.iinfo(np.dtype(dst.fmt)) if dst != dtypes.float32 else None
    a = np.clip(a, info.min, info.max) if info is not None else np.concatenate([a, [np.inf, -0.0, 1e-40]]).astype(np.float32)
  check(lambda x: x.cast(dst), a, dtype=src)

@pytest.mark.parametrize("src,dst", [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.float32), (dtypes.uint32, dtypes.int32),
                                     (dtypes.int16, dtypes.uint16), (dtypes.int8, dtypes.uint8), (dtypes.uint16, dtypes.int16)])
def test_bitcasts(src, dst):
  check(lambda x: x.bitcast(dst), data((40,), src, -100, 100), dtype=src)

@pytest.mark.parametrize("src,dst", [(dtypes.int8, dtypes.uint8), (dtypes.uint8, dtypes.int8), (dtypes.int16, dtypes.uint16),
                                     (dtypes.uint16, dtypes.int16)])
def test_bitcast_between_signednesses_then_arithmetic(src, dst):
  # A narrow lane is held sign- or zero-extended as its dtype says: a bitcast to the other signedness extends it
  # the other way before a wider op reads it (int8 -53 is uint8 203, so 203 * 3 + 1 as int32).
  check(lambda x: x.bitcast(dst).cast(dtypes.int32) * 3 + 1, data((40,), src, -100, 100), dtype=src)

def test_bitcast_int8_pairs_to_int16():
  # tinygrad assembles each int16 from two bytes (uint8 lanes, shifted and added in uint16): upstream test_dtype's
  # TestInt8DType.test_bitcast_alt, where a negative low byte was added sign-extended (17867 for 18123).
  got = Tensor(np.array([72, -90, 27, 40, -53, 70, 96, 51], np.int8), device="TINYTPU").bitcast(dtypes.short).tolist()
  assert got == [-22968, 10267, 18123, 13152]

REDUCTION_CASES = [(op, dt) for op in ("sum", "max", "min", "prod", "mean") for dt in (dtypes.int32, dtypes.float32)]

@pytest.mark.parametrize("op,dtype", REDUCTION_CASES)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(op, dtype, axis):
  a = data((5, 9), dtype, -3, 4)
  check(lambda x: getattr(x, op)(axis=axis), a, dtype=dtype, atol=1e-5, rtol=1e-5)
  check(lambda x: getattr(x, op)(axis=axis, keepdim=True) if axis is not None else getattr(x, op)(), a, dtype=dtype,
        atol=1e-5, rtol=1e-5)

@pytest.mark.parametrize("op", ["argmax", "argmin", "any", "all"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.float32])
def test_index_and_bool_reductions(op, axis, keepdim, dtype):
  a = data((3, 5, 7), dtype, -4, 4)  # small range: ties, so argmax/argmin must pick the first
  check(lambda x: getattr(x, op)(axis=axis, keepdim=keepdim), a)

@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.float32, dtypes.uint8])
def test_cumsum(axis, dtype):
  check(lambda x: x.cumsum(axis), data((3, 5, 7), dtype, 0, 9), atol=1e-5)

@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "mean"])
@pytest.mark.parametrize("axis", [(0, 2), 2, -2])
def test_reductions_3d(op, axis):
  check(lambda x: getattr(x, op)(axis=axis, keepdim=True), data((3, 5, 7), dtypes.float32, -2, 2), atol=1e-5, rtol=1e-5)
  check(lambda x: getattr(x, op)(axis=axis), data((3, 5, 7), dtypes.int32, -3, 3))

MOVEMENT = {"reshape": lambda x: x.reshape(4, 6), "permute": lambda x: x.permute(1, 0) + 0,
            "expand": lambda x: x[:, :1].expand(6, 4) + 0, "pad": lambda x: x.pad(((1, 2), (0, 3))),
            "shrink": lambda x: x[1:5, 1:3] + 0, "flip": lambda x: x.flip(0) + 0,
            "cat": lambda x: x.cat(x * 2, dim=1), "stack": lambda x: Tensor.stack(x, x + 1),
            "getitem": lambda x: x[::2, 1] + 0, "where": lambda x: (x > 0).where(x, -x)}

SETITEM = {"index": lambda t, v: t.__setitem__(2, v[0]), "slice": lambda t, v: t.__setitem__(slice(1, 5, 2), v[:2]),
           "2d": lambda t, v: t.reshape(2, 5).__setitem__((1, slice(None, 3)), v[1:4]),
           "tensor_index": lambda t, v: t.__setitem__(Tensor([7, 1, 4], device=t.device), v[:3]),
           "negative": lambda t, v: t.__setitem__(slice(-3, None), v[2:])}

@pytest.mark.parametrize("op", sorted(SETITEM))
def test_setitem(op):
  def fn(t, v):
    t = t.contiguous()
    SETITEM[op](t, v)
    return t
  check(fn, data((10,), dtypes.int32, 0, 9), data((5,), dtypes.int32))

def test_scatter_and_data_dependent_outputs():
  idx = np.array([[4, 0, 2], [1, 1, 3]], dtype=np.int32)
  check(lambda t, i, v: t.scatter(1, i, v), data((2, 5), dtypes.float32), idx, data((2, 3), dtypes.float32))
  check(lambda t, i, v: t.scatter_reduce(1, i, v, reduce="sum"), data((2, 5), dtypes.float32), idx, data((2, 3), dtypes.float32))
  check(lambda t: t.nonzero(), np.array([0, 3, 0, 0, 5, 1], dtype=np.int32))
  check(lambda t: t.masked_select(t > 0), data((20,), dtypes.int32, -3, 3))
  for op in ("cumprod", "cummax"):
    check(lambda t: getattr(t, op)(0) if op == "cumprod" else t.cummax(0)[0], data((33,), dtypes.float32, 0.5, 1.5), rtol=1e-5)

@pytest.mark.parametrize("op", sorted(MOVEMENT))
def test_movement(op):
  check(MOVEMENT[op], data((6, 4), dtypes.int32))

@pytest.mark.parametrize("n", [1, 17, 1000, 100_003])
def test_sizes(n):
  a, b = data((n,), dtypes.int32), data((n,), dtypes.int32)
  check(lambda x, y: x * 2 + y, a, b)

def test_float_matmul_on_vpu():
  check(lambda x, y: x @ y, data((5, 7), dtypes.float32, -1, 1), data((7, 3), dtypes.float32, -1, 1), atol=1e-5)

def test_counters_and_simulated_time():
  tinytpu.reset_counters()
  a = Tensor(np.arange(16, dtype=np.int32), device="TINYTPU")
  (a + a).realize()
  c = tinytpu.counters()
  assert c["kernels"] >= 1 and c["launches"] >= 1 and c["cycles"] >= c["sxu_cycles"] > 0

def test_unsupported_raises_at_render_time():
  with pytest.raises(NotImplementedError, match="TINYTPU"):
    Tensor([1.5, 2.5], device="TINYTPU", dtype=dtypes.float16).cast(dtypes.float64).realize()

def test_fast_math_is_opt_in():
  import os, subprocess, sys
  code = ("import tinytpu, numpy as np; from tinygrad import Tensor; "
          "t = Tensor(np.array([0.5, 2.0], dtype=np.float32), device='TINYTPU'); print(t.exp2().numpy()[0], (1 / t).numpy()[1])")
  run = lambda fast: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    env={**os.environ, "TINYTPU_FAST_MATH": fast}).stdout.split()
  exact, fast = run("0"), run("1")
  assert abs(float(exact[0]) - 2 ** 0.5) < 1e-6 and float(exact[1]) == 0.5
  # The TranscUnit's EXP2 polynomial (hardware.md §2.5) is visibly approximate; FRECIP is close.
  assert abs(float(fast[0]) - 2 ** 0.5) > 1e-3 and abs(float(fast[1]) - 0.5) < 1e-6

@pytest.mark.parametrize("n", [4096, 4100])
def test_many_outputs_per_launch(n):
  # Launches holding many output tiles must still leave room to spill live values (31-output limit).
  check(lambda x: (x * 2).relu(), data((n,), dtypes.float32))

def test_float_gemm_64():
  check(lambda x, y: x @ y, data((64, 64), dtypes.float32, -1, 1), data((64, 64), dtypes.float32, -1, 1), atol=1e-4)

def test_trunc_division_is_exact():
  x = np.array([5.0, 6, 7, 0, -5, -6, -7], dtype=np.float32)
  check(lambda a, b: a.div(b, rounding_mode="trunc"), x, np.full(7, -3.0, dtype=np.float32))

def test_float_division_rounds_like_ieee():
  # FDIV corrects a * (1/b) by the exact remainder: bit-exact wherever |a/b| and |b| lie within
  # [2^-50, 2^50]; outside, and for the specials, within 2 ulp / IEEE's answer.
  def mk(n, span):
    return (rng.uniform(1, 2, n) * np.exp2(rng.uniform(-span, span, n)) * rng.choice([-1, 1], n)).astype(np.float32)
  a, b = mk(3000, 20), mk(3000, 20)
  got, want = both(lambda x, y: x / y, a, b)
  np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
  got, want = both(lambda y: 1 / y, b)
  np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
  sp = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, 1e-38, 6, -3], dtype=np.float32)
  a, b = mk(1000, 120), mk(1000, 120)
  check(lambda x, y: x / y, np.concatenate([a, np.repeat(sp, 10)]), np.concatenate([b, np.tile(sp, 10)]), atol=0, rtol=3e-7)

def test_sin_cos_tan_small_and_huge_arguments():
  # Cody-Waite below 30, the 32-bit Payne-Hanek reduction above (up to float32's max), NaN for inf/NaN.
  x = np.concatenate([data((200,), dtypes.float32, -40, 40), data((100,), dtypes.float32, -1e6, 1e6),
                      np.array([0, -0.0, 1e-30, 29.99, 30, 1e30, -3.4e38, np.inf, -np.inf, np.nan], dtype=np.float32)])
  # (the CPU device's clang contracts the Cody-Waite steps into FMAs, so the two differ by an ulp or two)
  for fn in (lambda t: t.sin(), lambda t: t.cos()): check(fn, x, atol=2e-6, rtol=2e-5)
  check(lambda t: t.tan(), x[:200], atol=1e-5, rtol=1e-3)  # ill-conditioned near the poles on both devices

def test_float_max_keeps_nan_like_cpu():
  x = np.array([np.nan, 1.0, -0.0, 0.0, np.inf, np.nan], dtype=np.float32)
  y = np.array([1.0, np.nan, 0.0, -0.0, np.nan, np.nan], dtype=np.float32)
  got, want = both(lambda a, b: a.maximum(b), x, y)
  np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
  check(lambda a: a.clip(-1, 1), x)
  check(lambda a: a.max(), x)

def test_float_max_reductions_keep_order_bit_for_bit():
  # lanes fold runs of terms (lane_pack.cc emit_ordered): signed zeros and NaN-hidden groups come out as
  # in the CPU device's sequential loop, for one output and for a few (column and row reduces)
  rng = np.random.default_rng(5)
  for rows, n in ((1, 1024), (2, 257), (4, 1024), (5, 64), (8, 300)):
    zeros = rng.choice(np.array([-1.0, -0.0, 0.0], dtype=np.float32), size=(rows, n))
    zeros[:, :n // 3], zeros[:, n // 3] = -1.0, 0.0
    nans = rng.standard_normal((rows, n)).astype(np.float32)
    nans[rng.random((rows, n)) < 0.1] = np.nan
    nans[:, 1::4] *= 1e20
    for x in (zeros, nans):
      for axis in (1, 0):
        got, want = both(lambda a: a.max(axis=axis), x)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=f"{rows}x{n} axis {axis}")

def _chain_terms(n: int, op: str) -> list[np.ndarray]:
  """n float32 tensors of n elements whose chain, in tinygrad's order, any reassociation changes. A sum: element j
  starts at 1 + 2j·2^-23 (an even last bit), each later term is half its ulp, so each add rounds back to it (ties
  to even); any two later terms added first make a whole ulp, and the sum moves. A product: factors drawn from
  [0.5, 2), whose roundings differ by order in some element."""
  if op == "add":
    first = (1 + 2 * np.arange(n) * 2.0**-23).astype(np.float32)
    return [first] + [np.full(n, 2.0**-24, np.float32)] * (n - 1)
  rng = np.random.default_rng(n)
  return [rng.uniform(0.5, 2, n).astype(np.float32) for _ in range(n)]

@pytest.mark.parametrize("op", ["add", "mul"])
def test_elementwise_float_chains_keep_tinygrads_order_at_every_size(op):
  # only a REDUCE's sum may be reassociated (docs/accuracy.md); ((a+b)+c)+d the user wrote is IEEE in tinygrad's
  # order (lane_pack.h): n terms of n elements, n = 1..33, bit for bit against PYTHON and numpy's in-order float32
  for n in range(1, 34):
    terms = _chain_terms(n, op)
    def chain(device):
      ts = [Tensor(t, device=device) for t in terms]
      return functools.reduce(lambda a, b: a + b if op == "add" else a * b, ts).numpy()
    want = functools.reduce(lambda a, b: a + b if op == "add" else a * b, terms)
    strict, got = chain("PYTHON"), chain("TINYTPU")
    np.testing.assert_array_equal(strict.view(np.int32), want.view(np.int32), err_msg=f"PYTHON, {n} terms")
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=f"{op} chain of {n} terms")

def test_a_reduce_of_the_same_terms_is_still_packed_and_reassociated():
  # the other side of the chain test: the same terms summed by .sum() may be added in another order, and are
  # (lane_pack.cc packs a REDUCE's chain into lanes): one output of 8 terms sums the small ones first
  x = np.stack(_chain_terms(8, "add"), axis=1)
  got = Tensor(x, device="TINYTPU").sum(axis=1).numpy()
  assert (got > x[:, 0]).all(), "the reduce's terms were added in tinygrad's order: its chain is no longer packed"

def test_gather_by_tensor_indices():
  w, idx = data((10, 4), dtypes.float32), np.array([3, 0, 9, 3, 7], dtype=np.int32)
  check(lambda t, i: t[i], w, idx)
  check(lambda t, i: t[i, 2] + t[i, 0], w, idx)
  check(lambda t, i: t.gather(0, i.reshape(5, 1).expand(5, 4)), w, idx)

def test_gather_whose_indices_are_one_element_each_read_by_the_loader():
  # a few indices, each replicated over a tile's lanes: the loader reads them from VMEM as they are, not as a
  # broadcast of a shared source (random program seed 194 read element 0 instead)
  table, idx = (np.arange(1, 129) * 2 - 1).astype(np.uint8), np.array([31, 115], dtype=np.int32)
  check(lambda t, i: t.gather(0, i).mean().relu().sin(), table, idx)

def test_cross_entropy_with_class_indices():
  logits, target = data((6, 10), dtypes.float32, -3, 3), np.array([1, 0, 9, 4, 4, 2], dtype=np.int32)
  check(lambda x, y: x.sparse_categorical_crossentropy(y), logits, target, atol=1e-5, rtol=1e-5)

def test_uint32_division_and_mod():
  a = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
  b = rng.integers(1, 2**32, 300, dtype=np.uint64).astype(np.uint32)
  b[:100] = rng.integers(1, 50, 100).astype(np.uint32)
  a[:5], b[100:105] = 2**32 - 1, 2**31 + 7  # largest dividend, divisors >= 2^31
  check(lambda x, y: x // y, a, b, dtype=dtypes.uint32)
  check(lambda x, y: x % y, a, b, dtype=dtypes.uint32)

def test_whole_tensor_reduce_broadcast_back():
  # The reduce runs before the lane-parallel loop: traced once, its value pinned for every chunk.
  x = data((37, 45), dtypes.float32, -3, 3)
  check(lambda t: t - t.mean(), x, atol=1e-5)
  check(lambda t: (t * t.sum()).relu(), data((9, 70), dtypes.int32, -5, 5), dtype=dtypes.int32)
  def std_grad(t):
    t = t.contiguous()
    return Tensor.stack(*t.std_mean()).sum().gradient(t)[0]
  check(std_grad, data((5, 6, 7), dtypes.float32, -2, 2), atol=1e-5, rtol=1e-4)

# Reductions and small stores packed across lanes (compiler/lane_pack.h): bit-exact with CPU, including
# -0.0 sums, narrow-int MAX (padding holds the dtype's least value), products and a bias after a sum.
PACKED = {
  "negzero_add": lambda d: Tensor(np.array([-0.0, -0.0], np.float32), device=d) + Tensor(np.array([-0.0, 1.0], np.float32), device=d),
  "fsum_7": lambda d: (Tensor(np.arange(7, dtype=np.float32), device=d) / 3).sum(),
  "negzero_sum": lambda d: Tensor(np.array([-0.0] * 5, np.float32), device=d).sum(),
  "i8_max": lambda d: Tensor(np.array([-100, -5, -7, -128, -3, -9, -1], np.int8), device=d).max(),
  "i8_rowmax": lambda d: Tensor(np.array([[-100, -5, -7], [-128, -3, -9]], np.int8), device=d).max(axis=1),
  "u8_max": lambda d: Tensor(np.array([200, 5, 255, 3], np.uint8), device=d).max(),
  "i32_prod": lambda d: Tensor(np.arange(1, 14, dtype=np.int32), device=d).prod(),
  "i8_sum_wraps": lambda d: Tensor(np.arange(100, dtype=np.int8), device=d).sum(dtype=dtypes.int8),
  "sum_plus_bias": lambda d: (Tensor(np.arange(7, dtype=np.int32), device=d) ** 2 + 1).sum() + 3,
  "rowsum_computed": lambda d: (Tensor(np.arange(15, dtype=np.int32).reshape(3, 5), device=d) * 3 - 1).sum(axis=1),
  "colmax_6x10": lambda d: Tensor(np.arange(-30, 30, dtype=np.int32).reshape(6, 10), device=d).max(axis=0),
  "mean_rows": lambda d: Tensor(np.arange(9, dtype=np.float32).reshape(3, 3), device=d).mean(axis=1),
  "copy_reshape": lambda d: Tensor(np.arange(64, dtype=np.int32), device=d).reshape(8, 8).contiguous() + 0,
}

@pytest.mark.parametrize("name", list(PACKED))
def test_packed_reductions_bit_exact(name):
  got, want = (np.atleast_1d(PACKED[name](d).numpy()) for d in ("TINYTPU", "CPU"))
  assert got.dtype == want.dtype and got.shape == want.shape
  assert got.tobytes() == want.tobytes(), f"{name}: {got} != {want}"

def test_small_reductions_reduce_across_lanes():
  # a 16-element sum to a scalar: one tile and one whole-tile reduce instead of a chain of 15 adds; an
  # 8x8 row sum: two lanes an output, finished by a rotate and an add; 4 rows: a row reduce; a copy: the
  # gathered tiles go out as they came in
  assert "SUM_REDUCE_TILE" in tasm_of("Tensor(np.arange(16, dtype=np.int32), device='TINYTPU').sum()")
  rows8 = tasm_of("Tensor(np.arange(64, dtype=np.int32).reshape(8, 8), device='TINYTPU').sum(axis=1)")
  assert "ROTATE" in rows8 and "SELECT" not in rows8
  assert "SUM_REDUCE" in tasm_of("Tensor(np.arange(32, dtype=np.int32).reshape(4, 8), device='TINYTPU').sum(axis=1)")
  copy = tasm_of("Tensor(np.arange(64, dtype=np.int32), device='TINYTPU').reshape(8, 8)")
  copy = copy[copy.index("launch 0"):]
  assert "OUTPUT_VMEM" in copy and "LOAD v" not in copy and "STORE VMEM" not in copy

def test_single_mxu_dispatch_result_goes_straight_to_its_output_slot():
  # a 1x4 @ 4x4 int8-range matmul: one weight-stationary MXU_VPU_EPILOGUE writes the column sums into the
  # output tile (no LOAD_MXU_RESULT, no STORE), and the result is right
  src = "(Tensor([[1, 2, 3, 4]], dtype=dtypes.int32, device='TINYTPU') @ Tensor(np.eye(4, dtype=np.int32), device='TINYTPU'))"
  tasm = tasm_of(src)
  tasm = tasm[tasm.index("launch 0"):]
  assert "MXU_VPU_EPILOGUE" in tasm and "DST_VMEM" in tasm
  assert "STORE VMEM" not in tasm and "LOAD_MXU_RESULT" not in tasm
  assert "[1, 2, 3, 4]" in tasm

def test_padded_reductions_and_strided_conv_gradients():
  """Reductions whose terms are zero outside an index test (padding, a strided convolution's input gradient):
  the tracer drops a term that fails in every lane of a chunk, and the results stay those of CPU."""
  r = np.random.default_rng(7)
  v = r.standard_normal(6).astype(np.float32)
  got, want = both(lambda t: t.reshape(6, 1, 1).expand(6, 7, 7).pad(((0, 0), (1, 1), (1, 1))).sum(axis=0), v)
  np.testing.assert_array_equal(got, want)  # each sum adds the same values in the same order: bit for bit
  check(lambda t: t.pad(((2, 2), (3, 3))).sum(axis=1), r.integers(-9, 9, (5, 6), dtype=np.int32))
  x, w = r.standard_normal((1, 3, 9, 9)).astype(np.float32), r.standard_normal((4, 3, 3, 3)).astype(np.float32)
  check(lambda x, w: x.conv2d(w, padding=1, stride=2).sum().gradient(x)[0], x, w, atol=1e-5, rtol=1e-5)
