"""The workloads the benchmark and the design-space search run: the 11 seed kernels (DEFAULT), large kernels
(EXTENDED) and a model's training step (TRAIN), each with numpy's answer and its work, and how one is run on
TINYTPU and counted."""
from __future__ import annotations
import math, time
from dataclasses import dataclass
from typing import Callable
import numpy as np
from tinygrad import Tensor
from tinytpu import device, real

@dataclass(frozen=True)
class Kernel:
  name: str
  expr: Callable[[str], Tensor]        # device -> the tinygrad expression
  expected: Callable[[], np.ndarray]   # numpy's answer
  work: int                            # int32 elements done: inputs, or M*K*N MACs for a GEMM
  floor: int | None = None             # fewest cycles any correct program takes (see DEFAULT)
  reference: int | None = None         # the TinyTPU project's cycles (its README)
  rtol: float = 1e-5                   # float results: numpy's allclose tolerance
  atol: float | None = None            # and its absolute one (None: rtol / 100)
  warm: bool = True                    # counted on a second call (False: the first, for workloads of seconds)

def i32(a, device: str) -> Tensor: return Tensor(np.asarray(a, dtype=np.int32), device=device)
def ar(n: int) -> np.ndarray: return np.arange(n, dtype=np.int32)

# The floors are issue 5's, which counted every VPU op at DISPATCH_VPU's 3 cycles, less one cycle for each
# combinational VPU op of the floor program: dispatched in the background (VPU_BG) it takes 2, its write-back
# landing in the next instruction's FETCH (hardware.md §2.7). Geomean 0.904 (issue 5's: 0.875).
DEFAULT = [
  Kernel("add_16", lambda d: i32(ar(16), d) + i32(ar(16) + 1, d), lambda: ar(16) + ar(16) + 1, 16, 32, 33),
  Kernel("add_256", lambda d: i32(ar(256), d) + i32(ar(256) + 1, d), lambda: ar(256) + ar(256) + 1, 256, 407, 423),
  Kernel("relu_64", lambda d: i32(ar(64) - 32, d).relu(), lambda: np.maximum(ar(64) - 32, 0), 64, 79, 83),
  Kernel("reshape_64", lambda d: i32(ar(64), d).reshape(8, 8), lambda: ar(64).reshape(8, 8), 64, 27, 63),
  Kernel("sum_16_scalar", lambda d: i32(ar(16), d).sum(), lambda: ar(16).sum(), 16, 25, 26),
  Kernel("sum_256_scalar", lambda d: i32(ar(256), d).sum(), lambda: ar(256).sum(), 256, 190, 281),
  Kernel("rowsum_8x8", lambda d: i32(ar(64).reshape(8, 8), d).sum(axis=1), lambda: ar(64).reshape(8, 8).sum(axis=1), 64, 62, 79),
  Kernel("colsum_8x8", lambda d: i32(ar(64).reshape(8, 8), d).sum(axis=0), lambda: ar(64).reshape(8, 8).sum(axis=0), 64, 62, 79),
  Kernel("gemm_1x4x4", lambda d: i32([[1, 2, 3, 4]], d) @ i32(np.eye(4), d), lambda: np.array([[1, 2, 3, 4]]), 16, 24, 37),
  Kernel("gemm_4x4x4", lambda d: i32(ar(16).reshape(4, 4), d) @ i32(np.eye(4), d), lambda: ar(16).reshape(4, 4), 64, 81, 121),
  Kernel("gemm_4x8x4", lambda d: i32(ar(32).reshape(4, 8), d) @ i32(np.ones((8, 4)), d),
         lambda: ar(32).reshape(4, 8) @ np.ones((8, 4), dtype=np.int32), 128, 113, 227),
]

def _rng(seed: int) -> np.random.Generator: return np.random.default_rng(seed)
def _i8(shape, seed: int) -> np.ndarray: return _rng(seed).integers(-128, 128, shape).astype(np.int32)
_A20, _X4096 = _rng(1).integers(-1000, 1000, 1 << 20).astype(np.int32), _rng(2).standard_normal(4096).astype(np.float32)
_M256 = (_i8((256, 256), 3), _i8((256, 256), 4))
_IMG, _CONV_W = _i8((1, 1, 28, 28), 5), _i8((8, 1, 3, 3), 6)
_MNIST = (_i8((32, 784), 7), _i8((784, 128), 8), _i8((128, 10), 9))

def _conv_ref() -> np.ndarray:
  out = np.zeros((1, 8, 26, 26), dtype=np.int32)
  for ky in range(3):
    for kx in range(3): out[0] += _CONV_W[:, 0, ky, kx, None, None] * _IMG[0, 0, ky:ky + 26, kx:kx + 26]
  return out

def _softmax_ref() -> np.ndarray:
  e = np.exp(_X4096 - _X4096.max())
  return e / e.sum()

def _mlp_step(device: str) -> Tensor:
  """One SGD step of a two-layer float32 MLP on fixed random data (forward, cross-entropy, gradients, update):
  the updated weights, flattened."""
  x, y = Tensor(_MLP[0], device=device), Tensor(_MLP[1], device=device)
  w1, w2 = Tensor(_MLP[2], device=device), Tensor(_MLP[3], device=device)
  loss = (x @ w1).relu().matmul(w2).sparse_categorical_crossentropy(y)
  g1, g2 = loss.gradient(w1, w2)
  return (w1 - 0.1 * g1).flatten().cat((w2 - 0.1 * g2).flatten())
_MLP = (_rng(10).standard_normal((8, 32)).astype(np.float32), _rng(11).integers(0, 4, 8).astype(np.int32),
        (_rng(12).standard_normal((32, 16)) * 0.2).astype(np.float32), (_rng(13).standard_normal((16, 4)) * 0.2).astype(np.float32))

# A model's training step: its work is the MACs of the forward pass and the two backward matmuls.
TRAIN = [Kernel("mlp_step", _mlp_step, lambda: _mlp_step("CPU").numpy(), 3 * 8 * (32 * 16 + 16 * 4), rtol=1e-4)]

EXTENDED = [
  Kernel("add_1M", lambda d: i32(_A20, d) + i32(_A20[::-1].copy(), d), lambda: _A20 + _A20[::-1], 1 << 20),
  Kernel("sum_1M", lambda d: i32(_A20, d).sum(), lambda: _A20.sum(dtype=np.int32), 1 << 20),
  Kernel("matmul_int8_256", lambda d: i32(_M256[0], d) @ i32(_M256[1], d), lambda: _M256[0] @ _M256[1], 256 ** 3),
  Kernel("conv2d_28x28", lambda d: i32(_IMG, d).conv2d(i32(_CONV_W, d)), _conv_ref, 8 * 26 * 26 * 9),
  Kernel("softmax_4096", lambda d: Tensor(_X4096, device=d).softmax(), _softmax_ref, 4096),
  Kernel("mnist_mlp_b32", lambda d: (i32(_MNIST[0], d) @ i32(_MNIST[1], d)).relu() @ i32(_MNIST[2], d),
         lambda: np.maximum(_MNIST[0] @ _MNIST[1], 0) @ _MNIST[2], 32 * (784 * 128 + 128 * 10)),
]

class WrongResult(Exception): pass

def check(k: Kernel, got: np.ndarray) -> None:
  want = np.asarray(k.expected())
  atol = k.rtol * 1e-2 if k.atol is None else k.atol
  ok = got.shape == want.shape and (np.allclose(got, want, rtol=k.rtol, atol=atol) if got.dtype.kind == "f" else (got == want).all())
  if not ok: raise WrongResult(f"{k.name}: wrong result on TINYTPU\n  got  {got.ravel()[:8]}...\n  want {want.ravel()[:8]}...")


def timed(k: Kernel, device: str) -> tuple[np.ndarray, float]:
  t0 = time.perf_counter()
  out = k.expr(device).numpy()
  return out, (time.perf_counter() - t0) * 1e3

def _counted_call(k: Kernel) -> tuple[dict, float]:
  """One call of k on TINYTPU, its result checked: its counters and wall ms."""
  device.reset_counters()
  out, ms = timed(k, "TINYTPU")
  c = device.counters()
  check(k, out)
  return c, ms

def run_kernel(k: Kernel, warm_runs: int = 3) -> dict:
  """Runs k on TINYTPU twice, each result checked: the second (warm) call is counted, the first's cycles are
  `first_cycles`. A core that keeps something between calls (resident programs) loads less on the second
  (and on the first, what earlier kernels left resident); the reference keeps nothing, so its two calls take
  the same cycles. The wall time is the median of `warm_runs` more calls."""
  first, first_ms = _counted_call(k)
  c, warm_ms = _counted_call(k) if k.warm else (first, first_ms)
  walls = [timed(k, "TINYTPU")[1] for _ in range(warm_runs)]
  r = {"name": k.name, "work_elems": k.work, "launches": c["launches"], "kernels": c["kernels"], "first_cycles": first["cycles"],
       "wall_ms": float(np.median(walls)) if walls else warm_ms, "floor": k.floor, "reference": k.reference, "checked": True,
       "counters": c}
  if c["kernels"] == 0:  # tinygrad ran no device kernel: nothing to count
    r.update(cycles=None, sxu_cycles=None, elems_per_cycle=None, compute_elems_per_cycle=None, bytes_per_cycle=None)
  else:
    r.update(cycles=c["cycles"], sxu_cycles=c["sxu_cycles"], elems_per_cycle=k.work / c["cycles"],
             compute_elems_per_cycle=k.work / max(c["sxu_cycles"], 1), bytes_per_cycle=4 * k.work / c["cycles"])
  return r

def geomean(values: list[float]) -> float | None:
  """Geometric mean of positive values; None for none (never a zero or an infinity)."""
  if any(v <= 0 for v in values): raise ValueError(f"geomean of a non-positive value: {values}")
  return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

def _on_cpu(fn: Callable[[str], Tensor]) -> Callable[[], np.ndarray]: return lambda: fn("CPU").numpy()

# Workloads from real programs (tinytpu.real), each checked against tinygrad's CPU device: float32 within a tolerance
# for sums taken in another order, int8 logits and decoded tokens exactly. Work is their MACs.
REAL = [
  Kernel("mnist_step", real.mnist_step, _on_cpu(real.mnist_step), 3 * real.MNIST_MACS, rtol=1e-3, atol=1e-4, warm=False),
  Kernel("attention", real.attention, _on_cpu(real.attention), real.ATTENTION_MACS, rtol=1e-4, warm=False),
  Kernel("int8_digits", real.int8_digits, _on_cpu(real.int8_digits), real.DIGITS_MACS, rtol=0, atol=0, warm=False),
  Kernel("gpt2_decode", real.gpt2_decode, _on_cpu(real.gpt2_decode), real.GPT2_MACS, warm=False),
]

SETS = {"kernels": DEFAULT, "extended": EXTENDED, "train": TRAIN, "real": REAL}

def run_set(names: list[str]) -> list[dict]:
  """Every workload of the named sets on TINYTPU (as TINYTPU_CONFIG selects it), each checked and counted once. A
  workload whose result is wrong is a row with checked False; one that cannot run on the core (too small a core) a
  row with its error; one that needs what this machine lacks a row saying so."""
  rows = []
  for name in names:
    for k in SETS[name]:
      try: rows.append(dict(run_kernel(k, warm_runs=0), set=name))
      except real.Unavailable as e: rows.append({"name": k.name, "set": name, "checked": False, "unavailable": str(e)})
      except WrongResult as e: rows.append({"name": k.name, "set": name, "checked": False, "error": str(e).splitlines()[0]})
      except (ValueError, RuntimeError, NotImplementedError) as e:
        rows.append({"name": k.name, "set": name, "checked": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"})
  return rows

if __name__ == "__main__":  # python -m tinytpu.workloads SET[,SET...]: one JSON list (explore runs it per configuration)
  import json, sys
  print(json.dumps(run_set(sys.argv[1].split(","))))
