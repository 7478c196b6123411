"""Values replicated across lanes (a row operand broadcast along a tile, a scalar per output row) are computed once
per lane group and copied back with XLU broadcasts (compiler/lane_pack.h). Every lane does the same ops on the
same values, so results are bit for bit those of the unfused computation, and integers equal tinygrad's CPU."""
import numpy as np
import pytest
from tinygrad import Tensor

r = np.random.default_rng(11)
INT_CASES = {
  # lanes along n share x[m]: a tile-replicated tree per output row
  "row_scalar_tree": (lambda x, y: ((x[:, None] * x[:, None] - 7) >> 1) * y[None, :],
                      (r.integers(-3000, 3000, (9,)).astype(np.int32), r.integers(-3000, 3000, (37,)).astype(np.int32))),
  # a matmul's row operand under a prologue, values past int8 (VPU): rows of 4x4 output blocks share it
  "prologue_matmul": (lambda a, b: (a * 3 + 1) @ b, (r.integers(-900, 900, (12, 40)).astype(np.int32),
                                                     r.integers(-900, 900, (40, 10)).astype(np.int32))),
  "prologue_dot": (lambda a, b: ((a * a + 1)[:, None, :] * b[None]).sum(-1),
                   (r.integers(-50, 50, (6, 33)).astype(np.int32), r.integers(-50, 50, (5, 33)).astype(np.int32))),
}

@pytest.mark.parametrize("name", INT_CASES)
def test_replicated_integer_trees_equal_cpu(name):
  fn, arrays = INT_CASES[name]
  got = fn(*[Tensor(a, device="TINYTPU") for a in arrays]).numpy()
  np.testing.assert_array_equal(got, fn(*[Tensor(a, device="CPU") for a in arrays]).numpy())

def test_replicated_float_tree_is_bit_identical_to_computing_it_first():
  x, y = r.uniform(-3, 3, (7,)).astype(np.float32), r.uniform(-2, 2, (50,)).astype(np.float32)
  tx, ty = Tensor(x, device="TINYTPU"), Tensor(y, device="TINYTPU")
  fused = (tx.gelu()[:, None] * ty[None, :]).numpy()
  first = (tx.gelu().realize()[:, None] * ty[None, :]).numpy()
  np.testing.assert_array_equal(fused.view(np.uint32), first.view(np.uint32))
  np.testing.assert_allclose(fused, (Tensor(x).gelu()[:, None] * Tensor(y)[None, :]).numpy(), rtol=1e-5, atol=1e-6)

def test_gelu_matmul_matches_cpu():
  x, w = r.uniform(-1, 1, (8, 96)).astype(np.float32), r.uniform(-1, 1, (96, 24)).astype(np.float32)
  got = (Tensor(x, device="TINYTPU").gelu() @ Tensor(w, device="TINYTPU")).numpy()
  np.testing.assert_allclose(got, (Tensor(x, device="CPU").gelu() @ Tensor(w, device="CPU")).numpy(), rtol=1e-4, atol=1e-5)

def test_prologue_on_either_operand_is_bit_identical_to_computing_it_first():
  # the compiler picks the chunk layout by which operand carries the prologue; either way each output's
  # chain of terms is the same, so the results are those of the unfused matmul bit for bit
  a, b = r.uniform(-1, 1, (24, 40)).astype(np.float32), r.uniform(-1, 1, (40, 36)).astype(np.float32)
  ta, tb = Tensor(a, device="TINYTPU"), Tensor(b, device="TINYTPU")
  for fused, first in (((ta * 2 - 1) @ tb, (ta * 2 - 1).realize() @ tb), (ta @ (tb * 2 - 1), ta @ (tb * 2 - 1).realize()),
                       (ta.gelu() @ tb, ta.gelu().realize() @ tb)):
    np.testing.assert_array_equal(fused.numpy().view(np.uint32), first.numpy().view(np.uint32))

from hypothesis import given, settings, strategies as st, HealthCheck

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 9), st.integers(2, 40), st.sampled_from(["sum", "max", "prod"]), st.integers(0, 2**31 - 1))
def test_few_output_reductions_equal_cpu(outputs, terms, op, seed):
  # up to eight outputs of one store take two lanes each (a rotate finishes them); more take row groups
  x = np.random.default_rng(seed).integers(-9, 9, (outputs, terms)).astype(np.int32)
  got, want = (getattr(Tensor(x, device=d), op)(axis=1).numpy() for d in ("TINYTPU", "CPU"))
  np.testing.assert_array_equal(got, want)

@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 20), st.integers(1, 30), st.integers(1, 20), st.booleans(), st.integers(0, 2**31 - 1))
def test_float_matmul_with_a_prologue_is_bit_identical_to_the_unfused_one(m, k, n, on_rows, seed):
  rng = np.random.default_rng(seed)
  a, b = (Tensor(rng.uniform(-2, 2, shape).astype(np.float32), device="TINYTPU") for shape in ((m, k), (k, n)))
  pro = lambda t: (t * 3 + 0.5).relu()
  fused, first = ((pro(a) @ b, pro(a).realize() @ b) if on_rows else (a @ pro(b), a @ pro(b).realize()))
  np.testing.assert_array_equal(fused.numpy().view(np.uint32), first.numpy().view(np.uint32))
