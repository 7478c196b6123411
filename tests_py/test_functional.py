"""Exact cycles without ticking every launch (executor.h RunMode): the launches of a program that computes in order
(MXU programs included) take the counters of the first, ticked launch of their key and run their instructions in order. Results and counters
must be those of ticking every launch (TINYTPU_FUNCTIONAL=0), and a wrong kept counter must be caught by the sampled
check (the first launch of a key run in order and one in SAMPLE_EVERY after it are ticked as well) and by
TINYTPU_VERIFY=1 (every one is)."""
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor
from tinytpu import _core
from tinytpu.device import TinyTPUProgram

rng = np.random.default_rng(36)
WORKLOADS = {  # the compiler's kinds of program: background VPU ops, synchronous reductions, the TranscUnit, the MXU
  "float conv2d": (lambda x, w: x.conv2d(w), [(1, 3, 9, 9), (4, 3, 3, 3)]),
  "int32 add": (lambda x, y: x + y, [(4099,), (4099,)]),
  "float sum": (lambda x: (x * 2 + 1).sum(axis=1), [(37, 300)]),
  "float softmax": (lambda x: x.softmax(), [(8, 500)]),
  "int8-range matmul": (lambda x, y: (x.cast("int32") @ y.cast("int32")), [(16, 24), (24, 8)]),
}

def arrays(shapes, integer):
  return [rng.integers(-100, 100, s, dtype=np.int32) if integer else rng.standard_normal(s, dtype=np.float32) for s in shapes]

def run(monkeypatch, fn, data, functional: bool, verify: bool = False):
  monkeypatch.setenv("TINYTPU_FUNCTIONAL", "1" if functional else "0")
  monkeypatch.setenv("TINYTPU_VERIFY", "1" if verify else "0")
  tinytpu.reset_counters()
  out = fn(*(Tensor(a, device="TINYTPU") for a in data)).numpy()
  return out, tinytpu.counters()

@pytest.mark.parametrize("name", WORKLOADS)
def test_in_order_launches_give_what_ticking_gives(monkeypatch, name):
  fn, shapes = WORKLOADS[name]
  data = arrays(shapes, integer=name.startswith("int"))
  ticked, tick_counts = run(monkeypatch, fn, data, functional=False)
  for verify in (False, True):
    got, counts = run(monkeypatch, fn, data, functional=True, verify=verify)
    assert got.tobytes() == ticked.tobytes()  # bit for bit
    assert {k: counts[k] for k in ("kernels", "launches", "cycles", "sxu_cycles")} == \
           {k: tick_counts[k] for k in ("kernels", "launches", "cycles", "sxu_cycles")}
    assert counts["checked"] == counts["in_order"] if verify else counts["checked"] <= counts["in_order"]
  assert tick_counts["in_order"] == tick_counts["checked"] == 0
  assert counts["in_order"] > 0  # the MXU's programs too: its dispatches take fixed cycles

def kernel_of(monkeypatch, make):
  """The compiled kernel (C++) a call of make() runs, and a function running it again."""
  calls = []
  call = TinyTPUProgram.__call__
  monkeypatch.setattr(TinyTPUProgram, "__call__", lambda self, *a, **kw: calls.append((self, a, kw)) or call(self, *a, **kw))
  make().realize()
  prg, bufs, kw = calls[-1]
  monkeypatch.setattr(TinyTPUProgram, "__call__", call)
  return prg.kernel, lambda: prg(*bufs, **kw)

@pytest.mark.parametrize("verify", [False, True])
def test_a_wrong_kept_counter_is_caught(monkeypatch, verify):
  monkeypatch.setenv("TINYTPU_FUNCTIONAL", "1")
  monkeypatch.setenv("TINYTPU_VERIFY", "1" if verify else "0")
  # a kernel of its own (tinygrad keeps compiled kernels): its kept counters are corrupted below
  x = Tensor(rng.standard_normal((4 + verify) * 16 * 16 * _core.SAMPLE_EVERY, dtype=np.float32), device="TINYTPU").realize()
  kernel, again = kernel_of(monkeypatch, lambda: x * 3)
  tinytpu.reset_counters()
  again()  # the kept counters are right: every check agrees
  c = tinytpu.counters()
  assert c["launches"] > 2 * _core.SAMPLE_EVERY and c["checked"] >= (c["in_order"] if verify else 2)
  kernel.corrupt_timings_for_test()
  with pytest.raises(tinytpu.SimError, match=r"run in order differs from the same launch ticked: cycles (\d+) kept, (\d+) ticked"):
    again()

def test_launches_run_in_batches_across_chains_of_partial_sums(monkeypatch):
  """A convolution whose partial sums pass from launch to launch (spilled tiles): its launches run in order in
  batches of many (the window runs the chains side by side, each launch reading its chain's tiles from the launch
  that kept them), bit for bit what ticking every launch gives."""
  data = arrays([(1, 8, 12, 12), (8, 8, 5, 5)], integer=False)
  ticked, tick_counts = run(monkeypatch, lambda x, w: x.conv2d(w), data, functional=False)
  got, counts = run(monkeypatch, lambda x, w: x.conv2d(w), data, functional=True, verify=True)
  assert got.tobytes() == ticked.tobytes() and counts["cycles"] == tick_counts["cycles"]
  assert tick_counts["batches"] == 0 and counts["in_order"] >= 8 * counts["batches"] > 0

@pytest.mark.parametrize("functional", [False, True])
def test_independent_runs_run_on_threads_and_as_streams(monkeypatch, functional):
  """A convolution's weight gradient: each output tile's chain of partial sums is a run of launches of its own
  (compiler/independent.h), so a call shares its runs among threads, and each thread interleaves its runs as streams
  whose launches batch together. Bit for bit and counter for counter what one thread running them one after another
  gives, ticked or run in order."""
  data = arrays([(4, 8, 16, 16), (4, 8, 12, 12)], integer=False)  # activations, output gradients
  wgrad = lambda x, g: x.permute(1, 0, 2, 3).conv2d(g.permute(1, 0, 2, 3))  # (8, 8, 5, 5): sums of 4*12*12 products
  got = {}
  # the first call ticks the first launch of each key: the others take its counters
  for threads, streams in ((1, 0), (1, 0), (1, 1), (2, 0), (2, 1)):
    monkeypatch.setenv("TINYTPU_THREADS", str(threads))
    monkeypatch.setenv("TINYTPU_STREAMS", str(streams))
    got[threads, streams] = run(monkeypatch, wgrad, data, functional)
  one, one_counts = got[1, 0]
  same = ("kernels", "launches", "cycles", "sxu_cycles", "in_order")  # (which launches are sampled may differ)
  for mode in ((1, 1), (2, 0), (2, 1)):
    out, counts = got[mode]
    assert out.tobytes() == one.tobytes(), mode
    assert {k: counts[k] for k in same} == {k: one_counts[k] for k in same}, mode
  assert one_counts["threaded"] == 0 and 0 < got[2, 1][1]["threaded"] < got[2, 1][1]["launches"]
  assert (got[2, 1][1]["checked"] > 0) == functional
  assert one_counts["streamed"] == got[2, 0][1]["streamed"] == 0
  assert 0 < got[1, 1][1]["streamed"] <= got[1, 1][1]["launches"] and got[2, 1][1]["streamed"] > 0
