"""Warm kernel calls on TINYTPU against the raw model, in one process: the effective simulated cycles per host second
of a warm call (its cycles from tinytpu.counters() over its wall time) with in-order runs (the default) and with every
launch ticked (TINYTPU_FUNCTIONAL=0), alternated A B A B, the first as a share of the model's own speed on a long
TASM program, and each call's wall time beside tinygrad's CPU device. Also the host time of one-kernel sums by length."""
import argparse, os, time
import numpy as np
import tinytpu
from tinygrad import Tensor, dtypes
from bench.sim_speed import program

def raw_speed(outer: int = 20) -> float:
  src = program(outer)
  best = min(_timed(lambda: tinytpu.run_tasm(src, max_cycles=10**10)) for _ in range(3))
  return tinytpu.run_tasm(src, max_cycles=10**10).cycles / best

def _timed(f) -> float:
  t0 = time.perf_counter()
  f()
  return time.perf_counter() - t0

rng = np.random.default_rng(0)
WORKLOADS = {
  "add int32 2^20": lambda d: (lambda a, b: lambda: (a + b).realize())(
    *(Tensor(rng.integers(-1000, 1000, 2**20, dtype=np.int32), device=d).realize() for _ in range(2))),
  "sum int32 2^20": lambda d: (lambda a: lambda: a.sum().realize())(
    Tensor(rng.integers(-1000, 1000, 2**20, dtype=np.int32), device=d).realize()),
  "matmul int8-range 128^3": lambda d: (lambda a, b: lambda: (a @ b).realize())(
    *(Tensor(rng.integers(-128, 128, (128, 128), dtype=np.int32), device=d).realize() for _ in range(2))),
  "matmul int8 256^3": lambda d: (lambda a, b: lambda: (a.cast(dtypes.int32) @ b.cast(dtypes.int32)).realize())(
    *(Tensor(rng.integers(-128, 128, (256, 256), dtype=np.int8), device=d).realize() for _ in range(2))),
  "softmax float32 4096": lambda d: (lambda a: lambda: a.softmax().realize())(
    Tensor(rng.standard_normal(4096, dtype=np.float32), device=d).realize()),
  "conv2d float32 32x32x5x5": lambda d: (lambda x, w: lambda: x.conv2d(w).realize())(
    Tensor(rng.standard_normal((1, 32, 24, 24), dtype=np.float32), device=d).realize(),
    Tensor(rng.standard_normal((32, 32, 5, 5), dtype=np.float32), device=d).realize()),
}

def warm(make, device: str, runs: int, modes=("1",)) -> tuple[list[float], int, list[str]]:
  """Per TINYTPU_FUNCTIONAL mode, the best wall time of a warm call, the modes alternated run by run; its simulated
  cycles (0 off TINYTPU), which must not depend on the mode; and per mode its launches run in order, of all."""
  call = make(device)
  call()  # compiles
  best, cycles, saved = [float("inf")] * len(modes), set(), os.environ.get("TINYTPU_FUNCTIONAL")
  in_order = [""] * len(modes)
  for _ in range(runs):
    for i, mode in enumerate(modes):
      os.environ["TINYTPU_FUNCTIONAL"] = mode
      tinytpu.reset_counters()
      best[i] = min(best[i], _timed(call))
      c = tinytpu.counters()
      cycles.add(c["cycles"])
      in_order[i] = f"{c['in_order']}/{c['launches']}"
  if saved is None: os.environ.pop("TINYTPU_FUNCTIONAL")
  else: os.environ["TINYTPU_FUNCTIONAL"] = saved
  assert len(cycles) == 1, f"cycles differ between in-order and ticked runs: {cycles}"
  return best, cycles.pop(), in_order

def sum_time(n: int, dtype) -> float:
  x = Tensor(np.ones(n, dtype=dtype), device="TINYTPU").realize()
  return _timed(lambda: x.sum().realize())

def main():
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--runs", type=int, default=3, help="warm calls per workload; the best is reported")
  ap.add_argument("--no-sums", action="store_true", help="skip the reduction-length scan")
  ap.add_argument("--only", default="", help="only the workloads whose name contains this")
  args = ap.parse_args()
  if not args.no_sums:  # first: every size is a new kernel, compiled in the call (the whole pipeline's host time)
    for dtype in (np.int32, np.float32): sum_time(3, dtype)  # tinygrad's own first-call costs
    for dtype in (np.int32, np.float32):
      times = {n: sum_time(n, dtype) for n in (4099, 16387, 2**20, 2**22)}
      print(f"sum {np.dtype(dtype).name}: " + ", ".join(f"{n}: {t:.3f} s" for n, t in times.items()) +
            f"; 16387/4099 {times[16387] / times[4099]:.1f}x, 2^22/2^20 {times[2**22] / times[2**20]:.1f}x")
  raw = raw_speed()
  print(f"raw model: {raw / 1e6:.1f} M simulated cycles/s")
  print(f"{'workload':26s} {'cycles':>10s} {'TINYTPU s':>10s} {'M cyc/s':>8s} {'of raw':>7s} {'ticked s':>9s} "
        f"{'M cyc/s':>8s} {'speedup':>7s} {'CPU s':>9s} {'x CPU':>7s} {'in order':>11s}")
  for name, make in WORKLOADS.items():
    if args.only not in name: continue
    (t, ticked), cycles, (in_order, _) = warm(make, "TINYTPU", args.runs, modes=("1", "0"))
    (cpu,), _, _ = warm(make, "CPU", args.runs)
    print(f"{name:26s} {cycles:10d} {t:10.4f} {cycles / t / 1e6:8.1f} {cycles / t / raw:7.1%} {ticked:9.4f} "
          f"{cycles / ticked / 1e6:8.1f} {ticked / t:6.2f}x {cpu:9.5f} {t / cpu:7.0f} {in_order:>11s}")

if __name__ == "__main__":
  main()
