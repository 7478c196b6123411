"""The TinyTPU benchmark: elements per cycle of 11 small int32 kernels on TINYTPU, counted the way the
reference testbench counts (2 cycles per bundle record, SXU cycles to HALT, one per output, 4; summed
over a kernel's launches) on a kernel's second call, each result checked against numpy. (The reference
keeps nothing between calls: its first call takes the same cycles, the `first` column; a variant with
resident programs loads less on the second.) `--suite extended` runs large kernels with
simulator speed and host time next to tinygrad's CPU and PYTHON devices.

  python bench/benchmark.py [--config NAME] [--filter SUBSTR] [--json | --csv] [--record [--note TEXT]]
  python bench/benchmark.py --suite extended [--devices TINYTPU,CPU,PYTHON]

--config runs TINYTPU on a TensorCore variant (`python -m tinytpu configs`; NAME,field=value,... changes
fields); its cycles are that core's count, loading at its record_cycles per record.
"""
from __future__ import annotations
import argparse, csv, datetime, io, json, os, subprocess, sys
from tinytpu import configs
from tinytpu.workloads import DEFAULT, EXTENDED, Kernel, WrongResult, geomean, run_kernel, timed

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORY = os.path.join(HERE, "history.tsv")
HISTORY_FIELDS = ["date", "commit", "geomean_elems_per_cycle", "geomean_compute_elems_per_cycle", "note"]
REFERENCE_GEOMEAN = 0.663  # the TinyTPU project's README

def summarize(results: list[dict]) -> dict:
  counted = [r for r in results if r["cycles"] is not None]
  return {"kernels": results,
          "geomean_elems_per_cycle": geomean([r["elems_per_cycle"] for r in counted]),
          "geomean_compute_elems_per_cycle": geomean([r["compute_elems_per_cycle"] for r in counted]),
          "excluded": [r["name"] for r in results if r["cycles"] is None],
          "reference_geomean_elems_per_cycle": REFERENCE_GEOMEAN}

def _fmt(v, spec: str) -> str: return "-" if v is None else format(v, spec)

def table(summary: dict) -> str:
  rows = [f"{'kernel':16s} {'cycles':>7s} {'first':>7s} {'sxu':>6s} {'launch':>6s} {'elems/cyc':>9s} {'bytes/cyc':>9s} "
          f"{'wall ms':>8s} {'floor':>5s} {'vs floor':>8s} {'ref':>5s}"]
  for r in summary["kernels"]:
    if r["cycles"] is None:
      rows.append(f"{r['name']:16s} {'no device kernel: left out of the geomean':>60s}")
      continue
    gap = f"{r['cycles'] - r['floor']:+d}" if r["floor"] is not None else "-"
    rows.append(f"{r['name']:16s} {r['cycles']:7d} {r['first_cycles']:7d} {r['sxu_cycles']:6d} {r['launches']:6d} {r['elems_per_cycle']:9.3f} "
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
  fields = ["name", "cycles", "first_cycles", "sxu_cycles", "launches", "work_elems", "elems_per_cycle", "compute_elems_per_cycle",
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
    r = run_kernel(k, warm_runs=0)  # its wall time is its counted (warm) call's
    r["sim_cycles_per_host_s"] = r["cycles"] / (r["wall_ms"] / 1e3) if r["cycles"] else None
    for dev in devices:
      if dev == "TINYTPU":
        r["wall_ms_TINYTPU"] = r["wall_ms"]
        continue
      timed(k, dev)  # warm-up
      r[f"wall_ms_{dev}"] = timed(k, dev)[1]
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
  from tinygrad import Device
  if repr(Device["TINYTPU"].config) != repr(config):
    ap.error(f"--config {args.config}: TINYTPU is already open on another core in this process")
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
