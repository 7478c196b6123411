"""TINYTPU_FAST_MATH's speed and error: exp, log, sqrt, sin and division on float32 tensors, by default (tinygrad's
decompositions over exact ops) and with TINYTPU_FAST_MATH=1 (the TranscUnit's EXP2/LOG2/SIN and FRECIP's
estimate). Each mode runs in its own process (the renderer reads the variable at import). Prints simulated cycles,
their ratio, and the max and median relative error against numpy in float64.
  python bench/fast_math.py [N]      N elements per op (default 4096)"""
import json, os, subprocess, sys
import numpy as np

# op -> (inputs, the op on Tensors or numpy arrays)
OPS = {
  "exp": (lambda rng, n: [rng.uniform(-20, 20, n)], lambda x: x.exp()),
  "log": (lambda rng, n: [rng.uniform(1e-3, 1e3, n)], lambda x: x.log()),
  "sqrt": (lambda rng, n: [rng.uniform(0, 1e4, n)], lambda x: x.sqrt()),
  "sin": (lambda rng, n: [rng.uniform(-100, 100, n)], lambda x: x.sin()),
  "div": (lambda rng, n: [rng.uniform(-100, 100, n), rng.choice([-1, 1], n) * rng.uniform(0.1, 100, n)], lambda a, b: a / b),
}
NUMPY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "div": np.divide}

def inputs(op: str, n: int) -> list[np.ndarray]:
  return [x.astype(np.float32) for x in OPS[op][0](np.random.default_rng(len(op)), n)]

def measure(n: int) -> dict:
  """In this process's mode: per op, cycles and the results."""
  import tinytpu
  from tinygrad import Tensor
  out = {}
  for op, (_, fn) in OPS.items():
    args = [Tensor(x, device="TINYTPU").realize() for x in inputs(op, n)]
    tinytpu.reset_counters()
    result = fn(*args).numpy()
    out[op] = {"cycles": tinytpu.counters()["cycles"], "result": result.tolist()}
  return out

def rel_error(got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
  """Max and median of |got - ref| / |ref|, over the elements whose reference is not tiny (sin near its zeros)."""
  keep = np.abs(ref) > 1e-3
  err = np.abs(got[keep].astype(np.float64) - ref[keep]) / np.abs(ref[keep])
  return float(err.max()), float(np.median(err))

def run_mode(fast: bool, n: int) -> dict:
  p = subprocess.run([sys.executable, __file__, "--child", str(n)], capture_output=True, text=True, check=True,
                     env={**os.environ, "TINYTPU_FAST_MATH": "1" if fast else "0"})
  return json.loads(p.stdout)

def main(n: int) -> None:
  exact, fast = run_mode(False, n), run_mode(True, n)
  print(f"{n} float32 elements per op; relative error against numpy in float64 (max / median)")
  print(f"{'op':<5} {'cycles':>10} {'fast cycles':>12} {'speed-up':>9}   {'error':>19}   {'fast error':>19}")
  for op in OPS:
    ref = NUMPY[op](*(x.astype(np.float64) for x in inputs(op, n)))
    e, f = (rel_error(np.array(m[op]["result"], np.float32), ref) for m in (exact, fast))
    c, fc = exact[op]["cycles"], fast[op]["cycles"]
    print(f"{op:<5} {c:>10,} {fc:>12,} {c / fc:>8.1f}x   {e[0]:>9.1e} / {e[1]:.1e}   {f[0]:>9.1e} / {f[1]:.1e}")

if __name__ == "__main__":
  if sys.argv[1:2] == ["--child"]: print(json.dumps(measure(int(sys.argv[2]))))
  else: main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
