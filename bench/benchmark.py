"""The TinyTPU benchmark: elements per cycle of 11 small int32 kernels on TINYTPU, counted the way the
reference testbench counts (2 cycles per bundle record, SXU cycles to HALT, one per output, 4; summed
over a kernel's launches), each result checked against numpy. `--suite extended` runs large kernels with
simulator speed and host time next to tinygrad's CPU and PYTHON devices.

  python bench/benchmark.py [--config NAME] [--filter SUBSTR] [--json | --csv] [--record [--note TEXT]]
  python bench/benchmark.py --suite extended [--devices TINYTPU,CPU,PYTHON]

--config runs TINYTPU on a TensorCore variant (`python -m tinytpu configs`; NAME,field=value,... changes
fields); its cycles are that core's count, loading at its record_cycles per record.
"""
from __future__ import annotations
import argparse, csv, datetime, io, json, math, os, subprocess, sys, time
from dataclasses import dataclass
from typing import Callable
import numpy as np
import tinytpu
from tinytpu import configs
from tinygrad import Tensor, dtypes

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORY = os.path.join(HERE, "history.tsv")
HISTORY_FIELDS = ["date", "commit", "geomean_elems_per_cycle", "geomean_compute_elems_per_cycle", "note"]
REFERENCE_GEOMEAN = 0.663  # the TinyTPU project's README

@dataclass(frozen=True)
class Kernel:
  name: str
  expr: Callable[[str], Tensor]        # device -> the tinygrad expression
  expected: Callable[[], np.ndarray]   # numpy's answer
  work: int                            # int32 elements done: inputs, or M*K*N MACs for a GEMM
  floor: int | None = None             # fewest cycles any correct program takes (issue 5)
  reference: int | None = None         # the TinyTPU project's cycles (its README)

def i32(a, device: str) -> Tensor: return Tensor(np.asarray(a, dtype=np.int32), device=device)
def ar(n: int) -> np.ndarray: return np.arange(n, dtype=np.int32)

DEFAULT = [
  Kernel("add_16", lambda d: i32(ar(16), d) + i32(ar(16) + 1, d), lambda: ar(16) + ar(16) + 1, 16, 33, 33),
  Kernel("add_256", lambda d: i32(ar(256), d) + i32(ar(256) + 1, d), lambda: ar(256) + ar(256) + 1, 256, 423, 423),
  Kernel("relu_64", lambda d: i32(ar(64) - 32, d).relu(), lambda: np.maximum(ar(64) - 32, 0), 64, 83, 83),
  Kernel("reshape_64", lambda d: i32(ar(64), d).reshape(8, 8), lambda: ar(64).reshape(8, 8), 64, 27, 63),
  Kernel("sum_16_scalar", lambda d: i32(ar(16), d).sum(), lambda: ar(16).sum(), 16, 26, 26),
  Kernel("sum_256_scalar", lambda d: i32(ar(256), d).sum(), lambda: ar(256).sum(), 256, 206, 281),
  Kernel("rowsum_8x8", lambda d: i32(ar(64).reshape(8, 8), d).sum(axis=1), lambda: ar(64).reshape(8, 8).sum(axis=1), 64, 66, 79),
  Kernel("colsum_8x8", lambda d: i32(ar(64).reshape(8, 8), d).sum(axis=0), lambda: ar(64).reshape(8, 8).sum(axis=0), 64, 66, 79),
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
  ok = got.shape == want.shape and (np.allclose(got, want, rtol=1e-5, atol=1e-7) if got.dtype.kind == "f" else (got == want).all())
  if not ok: raise WrongResult(f"{k.name}: wrong result on TINYTPU\n  got  {got.ravel()[:8]}...\n  want {want.ravel()[:8]}...")

def timed(k: Kernel, device: str) -> tuple[np.ndarray, float]:
  t0 = time.perf_counter()
  out = k.expr(device).numpy()
  return out, (time.perf_counter() - t0) * 1e3

def run_kernel(k: Kernel, warm_runs: int = 3) -> dict:
  """Runs k on TINYTPU: the first (cold) run is checked and counted, the wall time is the median of
  `warm_runs` more."""
  tinytpu.reset_counters()
  out, cold_ms = timed(k, "TINYTPU")
  c = tinytpu.counters()
  check(k, out)
  walls = [timed(k, "TINYTPU")[1] for _ in range(warm_runs)]
  r = {"name": k.name, "work_elems": k.work, "launches": c["launches"], "kernels": c["kernels"],
       "wall_ms": float(np.median(walls)) if walls else cold_ms, "floor": k.floor, "reference": k.reference}
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

def summarize(results: list[dict]) -> dict:
  counted = [r for r in results if r["cycles"] is not None]
  return {"kernels": results,
          "geomean_elems_per_cycle": geomean([r["elems_per_cycle"] for r in counted]),
          "geomean_compute_elems_per_cycle": geomean([r["compute_elems_per_cycle"] for r in counted]),
          "excluded": [r["name"] for r in results if r["cycles"] is None],
          "reference_geomean_elems_per_cycle": REFERENCE_GEOMEAN}

def _fmt(v, spec: str) -> str: return "-" if v is None else format(v, spec)

def table(summary: dict) -> str:
  rows = [f"{'kernel':16s} {'cycles':>7s} {'sxu':>6s} {'launch':>6s} {'elems/cyc':>9s} {'bytes/cyc':>9s} "
          f"{'wall ms':>8s} {'floor':>5s} {'vs floor':>8s} {'ref':>5s}"]
  for r in summary["kernels"]:
    if r["cycles"] is None:
      rows.append(f"{r['name']:16s} {'no device kernel: left out of the geomean':>60s}")
      continue
    gap = f"{r['cycles'] - r['floor']:+d}" if r["floor"] is not None else "-"
    rows.append(f"{r['name']:16s} {r['cycles']:7d} {r['sxu_cycles']:6d} {r['launches']:6d} {r['elems_per_cycle']:9.3f} "
                f"{r['bytes_per_cycle']:9.2f} {r['wall_ms']:8.2f} {_fmt(r['floor'], '5d')} {gap:>8s} {_fmt(r['reference'], '5d')}")
  rows.append(f"geomean elems/cycle {_fmt(summary['geomean_elems_per_cycle'], '.3f')} "
              f"(compute, SXU cycles only: {_fmt(summary['geomean_compute_elems_per_cycle'], '.3f')}; "
              f"reference {REFERENCE_GEOMEAN})")
  if summary.get("config", "reference") != "reference":
    rows.append(f"on TensorCore config {summary['config']}: {summary['config_fields']} (floor and ref are the reference core's)")
  for name in summary["excluded"]: rows.append(f"note: {name} ran no device kernel and is left out of the geomean")
  return "\n".join(rows)

def to_csv(summary: dict) -> str:
  buf = io.StringIO()
  fields = ["name", "cycles", "sxu_cycles", "launches", "work_elems", "elems_per_cycle", "compute_elems_per_cycle",
            "bytes_per_cycle", "wall_ms", "floor", "reference"]
  w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
  w.writeheader()
  for r in summary["kernels"]: w.writerow(r)
  return buf.getvalue()

def record(summary: dict, note: str, path: str = HISTORY) -> dict:
  def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True).stdout.strip()
  commit = (git("rev-parse", "--short", "HEAD") or "unknown") + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
  row = {"date": datetime.date.today().isoformat(), "commit": commit,
         "geomean_elems_per_cycle": f"{summary['geomean_elems_per_cycle']:.4f}",
         "geomean_compute_elems_per_cycle": f"{summary['geomean_compute_elems_per_cycle']:.4f}", "note": note.replace("\t", " ")}
  fresh = not os.path.exists(path)
  with open(path, "a") as f:
    if fresh: f.write("\t".join(HISTORY_FIELDS) + "\n")
    f.write("\t".join(row[k] for k in HISTORY_FIELDS) + "\n")
  return row

def run_extended(kernels: list[Kernel], devices: list[str]) -> list[dict]:
  """Large kernels: TINYTPU counts and simulator speed, and warm host time on every device (the same
  expression, one warm-up then one timed run each, in this run: compare ratios, not absolute times)."""
  results = []
  for k in kernels:
    print(f"[extended] {k.name} ...", file=sys.stderr, flush=True)
    r = run_kernel(k, warm_runs=0)
    r["sim_cycles_per_host_s"] = r["cycles"] / (r["wall_ms"] / 1e3) if r["cycles"] else None
    for dev in devices:
      if dev != "TINYTPU": timed(k, dev)  # warm-up; TINYTPU's was the counted run above
      out, ms = timed(k, dev)
      if dev == "TINYTPU": check(k, out)
      r[f"wall_ms_{dev}"] = ms
    results.append(r)
  return results

def extended_table(results: list[dict], devices: list[str]) -> str:
  rows = [f"{'kernel':16s} {'cycles':>10s} {'launch':>6s} {'elems/cyc':>9s} {'sim cyc/s':>10s} " +
          " ".join(f"{d + ' ms':>11s}" for d in devices) + " " + " ".join(f"{'/' + d:>8s}" for d in devices if d != "TINYTPU")]
  for r in results:
    walls = " ".join(f"{r[f'wall_ms_{d}']:11.1f}" for d in devices)
    ratios = " ".join(f"{r['wall_ms_TINYTPU'] / r[f'wall_ms_{d}']:8.2f}" for d in devices if d != "TINYTPU") if "TINYTPU" in devices else ""
    rows.append(f"{r['name']:16s} {_fmt(r['cycles'], '10d')} {r['launches']:6d} {_fmt(r['elems_per_cycle'], '9.3f')} "
                f"{_fmt(r['sim_cycles_per_host_s'], '10.3g')} {walls} {ratios}")
  return "\n".join(rows)

def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--suite", choices=["default", "extended"], default="default")
  ap.add_argument("--filter", default="", help="only kernels whose name contains SUBSTR")
  out = ap.add_mutually_exclusive_group()
  out.add_argument("--json", action="store_true")
  out.add_argument("--csv", action="store_true")
  ap.add_argument("--record", action="store_true", help=f"append the geomeans to {os.path.relpath(HISTORY)}")
  ap.add_argument("--note", default="", help="the note of a --record row")
  ap.add_argument("--devices", default="TINYTPU,CPU,PYTHON", help="extended suite: devices timed")
  ap.add_argument("--config", default=os.getenv(configs.ENV, "reference"),
                  help="the TensorCore variant TINYTPU runs (default: TINYTPU_CONFIG, else reference)")
  args = ap.parse_args(argv)
  try: config = configs.from_spec(args.config)
  except ValueError as e: ap.error(str(e))
  os.environ[configs.ENV] = args.config  # read when the device opens, before the first kernel
  kernels = [k for k in (DEFAULT if args.suite == "default" else EXTENDED) if args.filter in k.name]
  if not kernels: ap.error(f"no kernel matches {args.filter!r}")
  if args.record and (args.filter or args.suite != "default"): ap.error("--record takes the whole default suite")
  if args.record and args.config != "reference": ap.error("--record keeps the reference core's history")
  try:
    if args.suite == "extended":
      devices = args.devices.split(",")
      results = run_extended(kernels, devices)
      if args.json: print(json.dumps({"kernels": results}, indent=1))
      else: print(extended_table(results, devices))
      return 0
    results = []
    for i, k in enumerate(kernels):
      print(f"[{i + 1}/{len(kernels)}] {k.name}", file=sys.stderr, flush=True)
      results.append(run_kernel(k))
  except WrongResult as e:
    print(f"FAIL: {e}", file=sys.stderr)
    return 1
  summary = summarize(results)
  summary.update(config=args.config, config_fields=repr(config))
  if args.json: print(json.dumps(summary, indent=1))
  elif args.csv: print(to_csv(summary), end="")
  else: print(table(summary))
  if args.record:
    row = record(summary, args.note)
    print(f"recorded in {HISTORY}: {row}", file=sys.stderr)
  return 0

if __name__ == "__main__":
  sys.exit(main())
