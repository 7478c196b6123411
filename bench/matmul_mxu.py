"""int8 square matmuls on TINYTPU (int32 accumulation): simulated cycles, integer ops per cycle and host
time, each result checked against numpy."""
import sys
import time
import numpy as np
import tinytpu
from tinygrad import Tensor, dtypes

def run(n: int) -> dict:
  rng = np.random.default_rng(n)
  a, b = (rng.integers(-128, 128, (n, n)).astype(np.int8) for _ in range(2))
  ta, tb = Tensor(a, device="TINYTPU").realize(), Tensor(b, device="TINYTPU").realize()
  tinytpu.reset_counters()
  t0 = time.perf_counter()
  out = (ta.cast(dtypes.int32) @ tb.cast(dtypes.int32)).numpy()
  host = time.perf_counter() - t0
  if not (out == a.astype(np.int32) @ b.astype(np.int32)).all(): raise SystemExit(f"wrong result for n={n}")
  c = tinytpu.counters()
  return {"n": n, "host_s": host, "ops_per_cycle": 2 * n**3 / c["cycles"], **c}

if __name__ == "__main__":
  for n in [int(x) for x in sys.argv[1:]] or [64, 128, 256]:
    r = run(n)
    print(f"{r['n']:4d}^3  cycles {r['cycles']:>10d}  launches {r['launches']:>6d}  {r['ops_per_cycle']:.2f} ops/cycle  host {r['host_s']:.2f} s")
