"""A chunk too long to trace whole is traced in parts: each part's live values are kept as pinned tiles and the
next part reads them. Results are those of the uncut compile: the same reduction chains in the same order (integers
exactly as tinygrad's CPU device)."""
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor, Context

CUT = "TINYTPU:5"  # its own device: kernels made for it read TINYTPU_CUT_NODES when they are made

def run(fn, arrays, dev):
  tinytpu.reset_counters()
  with Context(SPLIT_REDUCEOP=0), pytest.MonkeyPatch.context() as mp:  # one kernel, one long reduction per output
    if dev == CUT: mp.setenv("TINYTPU_CUT_NODES", "50")
    out = fn(*[Tensor(a, device=dev) for a in arrays]).numpy()
  return out, tinytpu.counters(dev)["launches"]

r = np.random.default_rng(5)
CASES = {
  "float_dot_rows": (lambda a, b: (a * b).sum(axis=1), (r.uniform(-1, 1, (20, 700)).astype(np.float32),
                                                         r.uniform(-1, 1, (20, 700)).astype(np.float32))),
  "int_max_plus_sum": (lambda a: a.max(axis=1) + a.sum(axis=1), (r.integers(-1000, 1000, (18, 500)).astype(np.int32),)),
  "int8_matmul": (lambda a, b: a @ b, (r.integers(-128, 128, (8, 300)).astype(np.int32),
                                       r.integers(-128, 128, (300, 8)).astype(np.int32))),
  "where_in_reduce": (lambda a: (a > 3).where(a * 2, -a).sum(axis=0), (r.integers(-9, 9, (400, 17)).astype(np.int32),)),
}

@pytest.mark.parametrize("name", CASES)
def test_cut_chunks_give_the_uncut_results(name):
  fn, arrays = CASES[name]
  whole, whole_launches = run(fn, arrays, "TINYTPU")
  parts, parts_launches = run(fn, arrays, CUT)
  np.testing.assert_array_equal(parts.view(np.uint32), whole.view(np.uint32))  # bit for bit, floats too
  if not np.issubdtype(whole.dtype, np.floating): np.testing.assert_array_equal(whole, run(fn, arrays, "CPU")[0])
  assert parts_launches > whole_launches  # the cuts happened: kept values cost launches
