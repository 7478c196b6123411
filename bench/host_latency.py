"""Warm wall time of a 16-element int32 add, `(a + b).numpy()`, on TINYTPU next to tinygrad's CPU and
PYTHON devices, measured in one run (median of 200)."""
import time
import numpy as np
import tinytpu
from tinygrad import Tensor

def median_ms(device: str, n: int = 200) -> float:
  a = Tensor(np.arange(16, dtype=np.int32), device=device).realize()
  b = Tensor(np.arange(16, dtype=np.int32) * 3, device=device).realize()
  for _ in range(5): (a + b).numpy()
  times = []
  for _ in range(n):
    t0 = time.perf_counter()
    (a + b).numpy()
    times.append(time.perf_counter() - t0)
  return float(np.median(times)) * 1e3

if __name__ == "__main__":
  for dev in ("TINYTPU", "CPU", "PYTHON"): print(f"{dev:8s} {median_ms(dev):.3f} ms")
  tinytpu.reset_counters()
  a = Tensor(np.arange(16, dtype=np.int32), device="TINYTPU").realize()
  (a + a).numpy()
  print("TINYTPU simulated:", tinytpu.counters())
