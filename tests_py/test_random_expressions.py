"""Hypothesis-generated expressions (random shapes, dtypes, elementwise ops, reductions and movement)
evaluated on TINYTPU and on tinygrad's CPU device."""
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
import tinytpu  # noqa: F401  registers TINYTPU
from tinygrad import Tensor

UNARY_INT = [lambda x: -x, lambda x: x.relu(), lambda x: x.abs(), lambda x: x * 3, lambda x: x + 7, lambda x: x // 3,
             lambda x: x % 5, lambda x: (x > 2).where(x, x * 2), lambda x: x.maximum(1), lambda x: x ^ 0x55]
UNARY_FLOAT = [lambda x: -x, lambda x: x.relu(), lambda x: x * 0.5, lambda x: x + 1.25, lambda x: x / 3,
               lambda x: (x > 0).where(x, x * 0.1), lambda x: x.maximum(0.5), lambda x: x.square(), lambda x: x.sigmoid()]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a.maximum(b),
          lambda a, b: (a < b).where(a, b), lambda a, b: a.minimum(b)]
MOVES = [lambda x: x, lambda x: x.flip(0), lambda x: x.permute(*reversed(range(x.ndim))), lambda x: x.pad(((1, 0),) + ((0, 0),) * (x.ndim - 1)),
         lambda x: x[::2], lambda x: x.reshape(-1)]
REDUCES = [lambda x: x, lambda x: x.sum(axis=0), lambda x: x.max(axis=-1), lambda x: x.sum(), lambda x: x.min(axis=0, keepdim=True)]

@st.composite
def programs(draw):
  shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
  is_float = draw(st.booleans())
  steps = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 99)), min_size=1, max_size=5))
  seed = draw(st.integers(0, 2**31 - 1))
  return shape, is_float, steps, seed

def evaluate(device, shape, is_float, steps, seed):
  rng = np.random.default_rng(seed)
  make = (lambda: rng.uniform(-4, 4, size=shape).astype(np.float32)) if is_float else \
         (lambda: rng.integers(-50, 50, size=shape).astype(np.int32))
  a, b = Tensor(make(), device=device), Tensor(make(), device=device)
  x = a
  unary = UNARY_FLOAT if is_float else UNARY_INT
  for kind, k in steps:
    if kind == 0: x = unary[k % len(unary)](x)
    elif kind == 1: x = BINARY[k % len(BINARY)](x, b if x.shape == b.shape else b.sum())
    else: x = MOVES[k % len(MOVES)](x)
  return REDUCES[seed % len(REDUCES)](x).numpy()

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_expression_matches_cpu(prog):
  got, want = evaluate("TINYTPU", *prog), evaluate("CPU", *prog)
  assert got.shape == want.shape and got.dtype == want.dtype
  if prog[1]: np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  else: np.testing.assert_array_equal(got, want)

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.sampled_from([8, 100, 2**20]), st.booleans(), st.integers(0, 2**31 - 1))
def test_random_matmul_and_gather_match_cpu(m, k, n, span, transpose, seed):
  # int8-range data takes the MXU, wider data the VPU; a random gather of rows follows.
  rng = np.random.default_rng(seed)
  a, b = rng.integers(-span, span, (m, k)).astype(np.int32), rng.integers(-span, span, (n, k) if transpose else (k, n)).astype(np.int32)
  idx = rng.integers(-m, m, 5).astype(np.int32)
  def run(device):
    tb = Tensor(b, device=device)
    out = Tensor(a, device=device) @ (tb.T if transpose else tb)
    return out.numpy(), out[Tensor(idx, device=device)].numpy()
  for got, want in zip(run("TINYTPU"), run("CPU")): np.testing.assert_array_equal(got, want)
