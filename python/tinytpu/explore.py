"""Design-space search over TensorCore configurations: run a workload set on each, print a table, draw performance
against the cost proxy with the Pareto front (PNG, and the data as JSON beside it); with a budget, search for the
best configuration whose area fits it.

Performance is the geomean of elements (or MACs) per cycle over the set's workloads, each result checked against
numpy. Cost is the core's area proxy (`python -m tinytpu configs` says how it is counted). Each configuration
runs in its own process: a device's core is chosen when it opens (TINYTPU_CONFIG)."""
from __future__ import annotations
import itertools, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from tinytpu import _core, configs
from tinytpu.workloads import SETS, geomean

# The fields a search may change, and the values it tries by default (--grid FIELD=... tries others): each
# configuration field's row says its values (the C++ core's config_fields.def); `rows` is the tile geometry, one
# extension module per geometry built (configs.CORES). Exact float division needs more than 8 vregs or 8 VMEM tiles
# in one launch, so smaller cores fail the training step: try them with --grid depth=8 or vregs=8.
SPACE = {"rows": sorted(core.TensorCoreConfig.ROWS for core in configs.CORES),
         **{f["name"]: f["explore"] for f in _core.config_fields() if f["explore"]}}
REFERENCE = _core.TensorCoreConfig()

def spec_of(base: str, changes: dict[str, int]) -> str:
  """The shortest spec: the base name and the fields that differ from it."""
  have = configs.fields(configs.from_spec(base))
  return ",".join([base] + [f"{k}={v}" for k, v in sorted(changes.items()) if have[k] != v])

def measure(spec: str, sets: list[str]) -> dict:
  """One configuration on the sets, in a fresh process. A configuration that cannot run a workload (too small a
  core, a wrong result) is reported with its error, not left out silently."""
  config = configs.from_spec(spec)
  row = {"spec": spec, **configs.cost(config), "fields": configs.fields(config)}
  env = {**os.environ, configs.ENV: spec}
  p = subprocess.run([sys.executable, "-m", "tinytpu.workloads", ",".join(sets)], capture_output=True, text=True, env=env)
  if p.returncode != 0:
    last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
    return {**row, "error": last.removeprefix("tinytpu._core.").split(" than an empty launch")[0]}
  runs = json.loads(p.stdout)
  per = lambda rs: geomean([r["elems_per_cycle"] for r in rs])
  return {**row, "perf": per(runs), "cycles": sum(r["cycles"] for r in runs),
          "by_set": {s: per([r for r in runs if r["set"] == s]) for s in sets},
          "workloads": {r["name"]: r["cycles"] for r in runs}}

def pareto(rows: list[dict]) -> list[dict]:
  """The rows no other row beats on both cost (lower area) and performance (higher), by area."""
  ok = sorted((r for r in rows if "perf" in r), key=lambda r: (r["area"], -r["perf"]))
  front, best = [], -1.0
  for r in ok:
    if r["perf"] > best: front, best = front + [r], r["perf"]
  return front

def grid(space: dict[str, list[int]]) -> list[str]:
  """The named configurations and every combination of the space's values, each once."""
  specs = [n["name"] for n in configs.named()]
  specs += [spec_of("reference", dict(zip(space, values))) for values in itertools.product(*space.values())]
  seen, out = set(), []
  for s in specs:
    key = tuple(configs.fields(configs.from_spec(s)).items())
    if key not in seen: seen.add(key); out.append(s)
  return out

def run_all(specs: list[str], sets: list[str], jobs: int, progress=None) -> list[dict]:
  with ThreadPoolExecutor(jobs) as pool:
    rows = []
    for r in pool.map(lambda s: measure(s, sets), specs):
      rows.append(r)
      if progress: progress(r)
  return rows

EXHAUSTIVE = 256  # a space with this many configurations within the budget is measured whole

def search(sets: list[str], budget: float, jobs: int, space: dict[str, list[int]], progress=None) -> tuple[dict, list[dict]]:
  """The best configuration whose area fits the budget, and every configuration measured. Up to EXHAUSTIVE
  configurations of the space (and the named ones) within the budget are all measured, so the proposal is the best
  of them. A larger space is searched by coordinate ascent from the reference: every configuration one field away,
  move to the best, stop when none is better (which can stop short of the best)."""
  perf = lambda r: r.get("perf", 0)
  area = lambda spec: configs.cost(configs.from_spec(spec))["area"]
  if area("reference") > budget: raise ValueError(f"budget {budget}: the reference core alone needs area {area('reference')}")
  fits = [s for s in grid(space) if area(s) <= budget]
  if len(fits) <= EXHAUSTIVE:
    rows = run_all(fits, sets, jobs, progress)
    return max(rows, key=perf), rows
  cache: dict[str, dict] = {}
  def run(specs):
    for r in run_all([s for s in dict.fromkeys(specs) if s not in cache], sets, jobs, progress): cache[r["spec"]] = r
  current = {k: configs.fields(REFERENCE)[k] for k in space}
  run([spec_of("reference", current)])
  best = cache[spec_of("reference", current)]
  while True:
    cands = [spec_of("reference", {**current, k: v}) for k in space for v in space[k] if v != current[k]]
    cands = [c for c in cands if area(c) <= budget]
    run(cands)
    step = max((cache[c] for c in cands), key=perf, default=None)
    if step is None or perf(step) <= perf(best): return best, list(cache.values())
    best, current = step, {k: step["fields"][k] for k in space}

def table(rows: list[dict], front: list[dict]) -> str:
  on_front = {r["spec"] for r in front}
  sets = next((list(r["by_set"]) for r in rows if "by_set" in r), [])
  w = max(len(r["spec"]) for r in rows)
  out = [f"{'configuration':{w}} {'area':>6} {'SRAM B':>7} {'ports':>5} {'perf':>7} " + " ".join(f"{s:>9}" for s in sets) + "  pareto"]
  for r in sorted(rows, key=lambda r: -r.get("perf", 0)):
    if "error" in r:
      out.append(f"{r['spec']:{w}} {r['area']:6.1f} {r['sram_bytes']:7d} {r['ports']:5d}  failed: {r['error']}")
      continue
    out.append(f"{r['spec']:{w}} {r['area']:6.1f} {r['sram_bytes']:7d} {r['ports']:5d} {r['perf']:7.3f} " +
               " ".join(f"{r['by_set'][s]:9.3f}" for s in sets) + ("  *" if r["spec"] in on_front else ""))
  return "\n".join(out)

def plot(rows: list[dict], front: list[dict], sets: list[str], path: str) -> None:
  try: import matplotlib
  except ImportError: raise ValueError("explore draws its plot with matplotlib: pip install matplotlib") from None
  matplotlib.use("Agg")  # files only, no display
  import matplotlib.pyplot as plt
  ok = [r for r in rows if "perf" in r]
  named = {n["name"] for n in configs.named()}
  fig, ax = plt.subplots(figsize=(8, 5))
  ax.scatter([r["area"] for r in ok], [r["perf"] for r in ok], s=18, color="tab:grey", label="configurations measured")
  ax.plot([r["area"] for r in front], [r["perf"] for r in front], "o-", color="tab:blue", label="Pareto front")
  for r in ok:
    if r["spec"] in named: ax.annotate(r["spec"], (r["area"], r["perf"]), fontsize=7, xytext=(4, 4), textcoords="offset points")
  ref = next((r for r in ok if r["spec"] == "reference"), None)
  if ref: ax.scatter([ref["area"]], [ref["perf"]], s=60, marker="*", color="tab:red", zorder=3, label="reference core")
  ax.set_xscale("log")  # three geometries: 4x4, 8x8 and 16x16 cores are each ~3.5x the area of the last
  ax.set_xlabel("area proxy, log scale (PE equivalents: a PE, 256 SRAM bytes or a port each count 1)")
  ax.set_ylabel(f"geomean elements per cycle ({'+'.join(sets)})")
  ax.set_title("TinyTPU TensorCore variants: performance against cost")
  low, high = min(r["perf"] for r in ok), max(r["perf"] for r in ok)
  ax.set_ylim(low - 0.35 * (high - low or 1), high + 0.1 * (high - low or 1))  # room for the legend below
  ax.legend(loc="lower right", fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)

def main(args) -> None:
  sets = args.set.split(",")
  for s in sets:
    if s not in SETS: raise ValueError(f"--set {s}: no such workload set (known: {', '.join(SETS)})")
  space = dict(SPACE)
  for g in args.grid or []:
    field, _, values = g.partition("=")
    try: space[field] = [int(v) for v in values.split(",")]
    except ValueError: raise ValueError(f"--grid {g}: expected field=v1,v2,...") from None
    for v in space[field]: configs.from_spec(f"reference,{field}={v}")  # an unknown field or a bad value: ValueError
  jobs = args.jobs or os.cpu_count() or 1
  say = lambda r: print(f"  {r['spec']}: " + (f"{r['perf']:.3f}" if "perf" in r else f"failed ({r['error']})"), file=sys.stderr, flush=True)
  if args.budget is not None:
    best, rows = search(sets, args.budget, jobs, space, say)
  else:
    specs = grid(space)
    print(f"explore: {len(specs)} configurations x workload set {'+'.join(sets)}, {jobs} at a time", file=sys.stderr)
    rows = run_all(specs, sets, jobs, say)
  front = pareto(rows)
  print(table(rows, front))
  os.makedirs(args.out, exist_ok=True)
  png, data = os.path.join(args.out, "explore.png"), os.path.join(args.out, "explore.json")
  plot(rows, front, sets, png)
  with open(data, "w") as f: json.dump({"sets": sets, "space": space, "rows": rows, "pareto": [r["spec"] for r in front]}, f, indent=1)
  print("\nPareto front (area -> perf): " + ", ".join(f"{r['spec']} ({r['area']:.1f} -> {r['perf']:.3f})" for r in front))
  if args.budget is not None:
    print(f"proposal for area <= {args.budget}: {best['spec']} (area {best['area']:.1f}, perf {best.get('perf', 0):.3f})")
  print(f"wrote {png} and {data}")

