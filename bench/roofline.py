"""Roofline of kernels on a configuration fed from HBM (hbm_channels > 0): each kernel's operations per HBM byte
(its operational intensity) against its operations per cycle, under the core's roofs: HBM (channels x bytes a
cycle, times the intensity) and compute (the MXU's rows^2 MACs a cycle, the VPU's rows^2 elements a cycle). A
kernel left of a roof's ridge is memory-bound there, right of it compute-bound. Each result is checked against
numpy.

  python -m bench.roofline [--config hbm] [--add-log2 24] [--matmul 512] [--plot docs/roofline.png] [--json]
"""
import argparse
import json
import os
import time
import numpy as np
import tinytpu
from tinytpu import configs
from tinygrad import Tensor, dtypes

def add_f32(n: int):
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
  ta, tb = Tensor(a, device="TINYTPU").realize(), Tensor(b, device="TINYTPU").realize()
  return f"add_f32_2^{n.bit_length() - 1}", "VPU", n, lambda: (ta + tb).numpy(), lambda out: np.array_equal(out, a + b)

def matmul_int8(n: int):
  rng = np.random.default_rng(n)
  a, b = (rng.integers(-128, 128, (n, n)).astype(np.int8) for _ in range(2))
  ta, tb = Tensor(a, device="TINYTPU").realize(), Tensor(b, device="TINYTPU").realize()
  want = a.astype(np.int32) @ b.astype(np.int32)
  return f"matmul_int8_{n}^3", "MXU", n ** 3, lambda: (ta.cast(dtypes.int32) @ tb.cast(dtypes.int32)).numpy(), \
    lambda out: np.array_equal(out, want)

def measure(kernel) -> dict:
  name, unit, ops, run, check = kernel
  tinytpu.reset_counters()
  t0 = time.perf_counter()
  out = run()
  host = time.perf_counter() - t0
  if not check(out): raise SystemExit(f"{name}: wrong result")
  c = tinytpu.counters()
  return {"kernel": name, "unit": unit, "ops": ops, "cycles": c["cycles"], "hbm_bytes": c["hbm_bytes"],
          "mxu_busy": c["mxu_busy"], "host_s": round(host, 2)}

def roofs(config) -> dict:
  rows = type(config).ROWS
  return {"hbm_bytes_per_cycle": config.hbm_channels * config.hbm_bytes_per_cycle, "MXU": rows * rows, "VPU": rows * rows}

def analyse(r: dict, peak: dict) -> dict:
  intensity = r["ops"] / r["hbm_bytes"]
  ridge = peak[r["unit"]] / peak["hbm_bytes_per_cycle"]
  return {**r, "intensity": intensity, "ops_per_cycle": r["ops"] / r["cycles"],
          "hbm_bytes_per_cycle": r["hbm_bytes"] / r["cycles"],
          "of_hbm_peak": r["hbm_bytes"] / r["cycles"] / peak["hbm_bytes_per_cycle"],
          "mxu_busy_frac": r["mxu_busy"] / r["cycles"],
          "bound": "memory" if intensity < ridge else "compute"}

def plot(rows: list[dict], peak: dict, config_name: str, path: str):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(6.4, 4.4))
  xs = np.logspace(-2, 2, 200)
  for top in sorted({peak[r["unit"]] for r in rows}):  # a roof for each compute peak, named by its units
    units = " and ".join(sorted({r["unit"] for r in rows if peak[r["unit"]] == top}))
    ax.plot(xs, np.minimum(top, peak["hbm_bytes_per_cycle"] * xs), "-", color="gray", alpha=0.8)
    ax.annotate(f"{units}: {top} ops/cycle", (xs[-1], top), ha="right", va="bottom", fontsize=8)
  ax.annotate(f"HBM: {peak['hbm_bytes_per_cycle']} B/cycle", (xs[20], peak["hbm_bytes_per_cycle"] * xs[20]), rotation=33,
              va="bottom", fontsize=8)
  for r in rows:
    ax.plot(r["intensity"], r["ops_per_cycle"], "o")
    ax.annotate(f"{r['kernel']}: {r['bound']}-bound\nHBM {100 * r['of_hbm_peak']:.0f}%, MXU busy {100 * r['mxu_busy_frac']:.0f}%",
                (r["intensity"], r["ops_per_cycle"]), textcoords="offset points", xytext=(6, -22), fontsize=8)
  ax.set_xscale("log"); ax.set_yscale("log")
  ax.set_xlabel("operations per HBM byte"); ax.set_ylabel("operations per cycle")
  ax.set_title(f"roofline on {config_name}"); ax.grid(True, which="both", alpha=0.3)
  fig.tight_layout(); fig.savefig(path, dpi=110)

if __name__ == "__main__":
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--config", default="hbm"); p.add_argument("--add-log2", type=int, default=24)
  p.add_argument("--matmul", type=int, default=512); p.add_argument("--plot"); p.add_argument("--json", action="store_true")
  args = p.parse_args()
  os.environ[configs.ENV] = args.config  # before the device opens, at the first tensor
  config = configs.from_spec(args.config)
  if not config.hbm_channels: raise SystemExit(f"{args.config}: no HBM (hbm_channels = 0): nothing to put on a roofline")
  peak = roofs(config)
  rows = [analyse(measure(k), peak) for k in (add_f32(1 << args.add_log2), matmul_int8(args.matmul))]
  if args.json: print(json.dumps({"config": args.config, "peak": peak, "kernels": rows}, indent=1))
  else:
    print(f"{args.config}: HBM {peak['hbm_bytes_per_cycle']} B/cycle, MXU {peak['MXU']} MACs/cycle, VPU {peak['VPU']} elements/cycle")
    for r in rows:
      print(f"{r['kernel']:>18}  {r['cycles']:>11} cycles  {r['hbm_bytes']:>11} HBM bytes  {r['hbm_bytes_per_cycle']:6.2f} B/cycle "
            f"({100 * r['of_hbm_peak']:5.1f}% of HBM)  {r['ops_per_cycle']:6.3f} ops/cycle  MXU busy {100 * r['mxu_busy_frac']:5.1f}%  "
            f"{r['intensity']:8.3f} ops/B  {r['bound']}-bound  host {r['host_s']} s")
  if args.plot: plot(rows, peak, args.config, args.plot)
