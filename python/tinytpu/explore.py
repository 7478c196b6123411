"""Design-space search over TensorCore configurations: run workload sets on each, report time, energy and area per
configuration and workload, plot the Pareto front of two objectives (PNG, and the data as JSON beside it), and search
a space too large to measure whole with Optuna.

A configuration's measurement is `measure()`: its workloads in a process of their own (a device's core is chosen
when it opens, TINYTPU_CONFIG), every result checked against tinygrad's CPU device (numpy for the kernels), its
counters turned into time and energy (tinytpu.energy). Measurements run on a dask.distributed cluster: a LocalCluster
of worker processes on this host by default, or the cluster whose scheduler `scheduler` names. They are functions of
the configuration alone (cycles and counters, never wall time), so a cluster gives what a serial run gives.

Objectives (OBJECTIVES): time, energy and energy-delay of the workloads, area, and performance (the geomean of
elements or MACs per cycle) and performance per area. The search (`optuna_search`) is an Optuna study over the
space's fields, multi-objective (NSGA-II) for two or more objectives and TPE for one, persisted in its storage
(SQLite by default) so that a study stopped midway resumes without measuring a configuration again; a grid keeps its
rows as it measures them (OUT/measured.jsonl), and resumes likewise on the same build."""
from __future__ import annotations
import contextlib, hashlib, itertools, json, math, os, subprocess, sys
from typing import Callable
from tinytpu import _core, configs, energy
from tinytpu.workloads import SETS, geomean

# The fields a search may change, and the values it tries by default (--grid FIELD=... tries others): each
# configuration field's row says its values (the C++ core's config_fields.def); `rows` is the tile geometry, one
# extension module per geometry built (configs.CORES). Exact float division needs more than 8 vregs or 8 VMEM tiles
# in one launch, so smaller cores fail the training step: try them with --grid depth=8 or vregs=8.
SPACE = {"rows": sorted(core.TensorCoreConfig.ROWS for core in configs.CORES),
         **{f["name"]: f["explore"] for f in _core.config_fields() if f["explore"]}}
REFERENCE = _core.TensorCoreConfig()

# name -> (the row's value, whether larger is better, its label)
OBJECTIVES: dict[str, tuple[Callable[[dict], float], bool, str]] = {
  "time": (lambda r: r["time_s"], False, "time of the workloads, s (at each core's clock)"),
  "energy": (lambda r: r["energy_j"], False, "dynamic energy of the workloads, J"),
  "edp": (lambda r: r["energy_j"] * r["time_s"], False, "energy x delay, J s"),
  "area": (lambda r: r["area"], False, "area proxy (PE equivalents)"),
  "perf": (lambda r: r["perf"], True, "geomean elements per cycle"),
  "perf_per_area": (lambda r: r["perf"] / r["area"], True, "geomean elements per cycle per area"),
}

def objectives_of(text: str) -> list[str]:
  names = [n.strip() for n in text.split(",")]
  for n in names:
    if n not in OBJECTIVES: raise ValueError(f"--objectives {n}: no such objective (known: {', '.join(OBJECTIVES)})")
  return names

def spec_of(base: str, changes: dict[str, int]) -> str:
  """The shortest spec: the base name and the fields that differ from it."""
  have = configs.fields(configs.from_spec(base))
  return ",".join([base] + [f"{k}={v}" for k, v in sorted(changes.items()) if have[k] != v])

def area_of(spec: str) -> float: return configs.cost(configs.from_spec(spec))["area"]

def _row(spec: str) -> dict:
  """A configuration's row before its measurement: its spec, cost and fields."""
  config = configs.from_spec(spec)
  return {"spec": spec, **configs.cost(config), "fields": configs.fields(config)}

def measure(spec: str, sets: list[str]) -> dict:
  """One configuration on the sets, in a fresh process: a row with its cost, each workload's cycles, time, energy
  and check, and their totals. A workload the core cannot run (too small a core) or gets wrong is in the row with
  its error, and so is the configuration's first error: nothing is left out silently."""
  config = configs.from_spec(spec)
  row = _row(spec)
  env = {**os.environ, configs.ENV: spec}
  p = subprocess.run([sys.executable, "-m", "tinytpu.workloads", ",".join(sets)], capture_output=True, text=True, env=env)
  if p.returncode != 0:
    last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
    return {**row, "error": last.removeprefix("tinytpu._core.").split(" than an empty launch")[0], "workloads": []}
  runs = []
  for r in json.loads(p.stdout):
    w = {"workload": r["name"], "set": r["set"], "checked": r["checked"]}
    if "unavailable" in r: w["unavailable"] = r["unavailable"]
    elif "error" in r: w["error"] = r["error"]
    elif r.get("cycles") is not None:
      c = r["counters"]
      w.update(cycles=r["cycles"], sxu_cycles=c["sxu_cycles"], mxu_busy=c["mxu_busy"], vpu_busy=c["vpu_busy"],
               elems_per_cycle=r["elems_per_cycle"], time_s=energy.time_s(c, config),
               energy_j=energy.energy_j(c, config), energy_by_unit=energy.breakdown(c, config))
    runs.append(w)
  row["workloads"] = runs
  # a workload this machine cannot run (no tinygrad checkout for gpt2) is left out of the totals, its row says why
  failed = next((w for w in runs if "error" in w or (not w["checked"] and "unavailable" not in w)), None)
  if failed: return {**row, "error": f"{failed['workload']}: {failed.get('error', 'wrong result')}"}
  counted = [w for w in runs if "cycles" in w]
  per = lambda ws: geomean([w["elems_per_cycle"] for w in ws])
  return {**row, "perf": per(counted), "cycles": sum(w["cycles"] for w in counted),
          "time_s": sum(w["time_s"] for w in counted), "energy_j": sum(w["energy_j"] for w in counted),
          "by_set": {s: per([w for w in counted if w["set"] == s]) for s in sets}}

def workload_rows(rows: list[dict]) -> list[dict]:
  """A row per configuration and workload: `explore --json`."""
  out = []
  for r in rows:
    for w in r.get("workloads", []):
      out.append({"config": r["spec"], "workload": w["workload"], "set": w["set"], "area": r["area"],
                  "checked": w["checked"], **{k: w[k] for k in ("cycles", "time_s", "energy_j", "error", "unavailable") if k in w}})
  return out

SCHEDULER_TIMEOUT_S = 10  # for a --scheduler to answer: a running one answers at once

@contextlib.contextmanager
def measurer(sets: list[str], jobs: int, scheduler: str | None = None, progress=None):
  """A function measuring a list of specs, in order, for the block's duration: on the dask.distributed cluster whose
  scheduler is `scheduler` (tcp://HOST:PORT), else on a LocalCluster of `jobs` worker processes (one thread each),
  else (jobs 0) here, one after another. A worker lost mid-measurement costs that configuration's row (its error),
  not the run."""
  if jobs == 0 and scheduler is None:
    def serial(specs: list[str]) -> list[dict]:
      rows = []
      for s in specs:
        rows.append(measure(s, sets))
        if progress: progress(rows[-1])
      return rows
    yield serial
    return
  from dask.distributed import Client, LocalCluster, as_completed
  cluster = None if scheduler else LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                                dashboard_address=None)
  try:
    try: client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S) if scheduler else Client(cluster)
    except OSError as e:  # (TimeoutError too)
      raise ValueError(f"--scheduler {scheduler}: no Dask scheduler answered there in {SCHEDULER_TIMEOUT_S} s ({e}); "
                       "expected tcp://HOST:PORT of a running `dask scheduler`") from None
    with client:
      def on_cluster(specs: list[str]) -> list[dict]:
        futures = {client.submit(measure, s, sets, pure=False): s for s in specs}
        done = {}
        for f in as_completed(futures):
          try: done[f] = f.result()
          except Exception as e:  # the worker died (a crash, a kill): this configuration's row says so
            done[f] = {**_row(futures[f]), "workloads": [], "error": f"{type(e).__name__}: {e}"}
          if progress: progress(done[f])
        return [done[f] for f in futures]
      yield on_cluster
  finally:
    if cluster: cluster.close()

def evaluate(specs: list[str], sets: list[str], jobs: int, scheduler: str | None = None, progress=None) -> list[dict]:
  """measure() of each spec, in order (measurer's ways)."""
  with measurer(sets, jobs, scheduler, progress) as run: return run(specs)

def build_id() -> str:
  """A digest of the installed package's files (its Python and its C++ core): measurements taken by one build are
  that build's."""
  root, h = os.path.dirname(os.path.abspath(__file__)), hashlib.sha256()
  for dirpath, dirnames, files in sorted(os.walk(root)):
    dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
    for name in sorted(files):
      h.update(name.encode())
      with open(os.path.join(dirpath, name), "rb") as f: h.update(f.read())
  return h.hexdigest()[:16]

def evaluate_kept(specs: list[str], sets: list[str], jobs: int, scheduler: str | None, kept: str,
                  progress=None) -> tuple[list[dict], int]:
  """evaluate(), keeping each configuration's row in the file `kept` (a JSON line each) as it is measured: a grid
  stopped midway (Ctrl-C, a killed job) and run again measures only what it had not, as long as the package is the
  same build (build_id) and the sets the same. A row with an error is measured again. The rows, and how many were
  measured."""
  build, done = build_id(), {}
  if os.path.exists(kept):
    with open(kept) as f:
      for line in f:
        try: k = json.loads(line)
        except json.JSONDecodeError: continue  # a line cut short by a stop
        if k.get("build") == build and k.get("sets") == sets and "error" not in k["row"]: done[k["row"]["spec"]] = k["row"]
  for s in specs:
    if s in done and progress: progress(done[s])
  def keep(row: dict) -> None:
    with open(kept, "a") as f: f.write(json.dumps({"build": build, "sets": sets, "row": row}) + "\n")
    if progress: progress(row)
  todo = [s for s in specs if s not in done]
  done.update(zip(todo, evaluate(todo, sets, jobs, scheduler, keep) if todo else []))
  return [done[s] for s in specs], len(todo)

def pareto(rows: list[dict], objectives: list[str]) -> list[dict]:
  """The rows no other row beats on every objective (at least as good on all, better on one), sorted by the last."""
  ok = [r for r in rows if "error" not in r]
  score = lambda r: [OBJECTIVES[o][0](r) * (-1 if OBJECTIVES[o][1] else 1) for o in objectives]  # smaller is better
  def beaten(r):
    s = score(r)
    return any(all(a <= b for a, b in zip(score(o), s)) and score(o) != s for o in ok)
  return sorted((r for r in ok if not beaten(r)), key=lambda r: score(r)[::-1])

def grid(space: dict[str, list[int]]) -> list[str]:
  """The named configurations and every combination of the space's values, each once."""
  specs = [n["name"] for n in configs.named()]
  specs += [spec_of("reference", dict(zip(space, values))) for values in itertools.product(*space.values())]
  return _distinct(specs)

def _distinct(specs: list[str]) -> list[str]:
  seen, out = set(), []
  for s in specs:
    key = configs.key(configs.from_spec(s))
    if key not in seen: seen.add(key); out.append(s)
  return out

EXHAUSTIVE = 256  # a space with this many configurations within the budget is measured whole

def best_within(rows: list[dict], objective: str, budget: float | None) -> dict | None:
  fn, larger, _ = OBJECTIVES[objective]
  ok = [r for r in rows if "error" not in r and (budget is None or r["area"] <= budget)]
  return (max if larger else min)(ok, key=fn, default=None)

def check_storage(url: str) -> None:
  """ValueError, before anything runs, for a study storage explore cannot use: a SQLite file in no directory or in
  one it cannot write, or a file that is not a SQLite database or holds something other than Optuna's tables. Such a
  file is never opened for writing. (Another database URL is Optuna's to judge.)"""
  if not url.startswith("sqlite:///"): return
  path = url.removeprefix("sqlite:///")
  where = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(where): raise ValueError(f"--storage {url}: {where} is not a directory")
  if not os.access(where, os.W_OK) or (os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK)):
    raise ValueError(f"--storage {url}: {path} cannot be written (the study's database needs it)")
  if not os.path.exists(path) or os.path.getsize(path) == 0: return
  with open(path, "rb") as f: head = f.read(16)
  if head != b"SQLite format 3\x00":
    raise ValueError(f"--storage {url}: {path} is not a SQLite database (an Optuna study's storage); it is left as it is")
  import sqlite3
  try:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
      tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
  except sqlite3.OperationalError as e:
    if "locked" not in str(e): raise ValueError(f"--storage {url}: {path} cannot be read ({e})") from None
    raise ValueError(f"--storage {url}: {path} is locked ({e}): is another run writing it?") from None
  except sqlite3.DatabaseError as e:
    raise ValueError(f"--storage {url}: {path} cannot be read as a SQLite database ({e}); it is left as it is") from None
  if tables and "studies" not in tables:
    raise ValueError(f"--storage {url}: {path} holds tables of something else ({', '.join(sorted(tables)[:4])}), not an "
                     "Optuna study; it is left as it is (give another --storage)")

def optuna_search(sets: list[str], space: dict[str, list[int]], objectives: list[str], trials: int, seed: int,
                  budget: float | None, storage: str, study_name: str, run: Callable[[list[str]], list[dict]],
                  batch: int = 1, progress=None) -> tuple[list[dict], int]:
  """An Optuna study over the space (a categorical parameter per field) that measures at most `trials`
  configurations: NSGA-II for two or more objectives, TPE for one, seeded. `run` measures a batch of specs (ask a
  batch, measure it at once, tell in ask order: the same seed gives the same study). A configuration over the area
  budget is pruned unmeasured, one asked again takes its earlier measurement, and a study found in `storage` goes
  on from its trials (each keeps its measurement): none is measured twice. Returns every configuration measured in
  the study (resumed ones too) and how many this call measured."""
  import optuna
  optuna.logging.set_verbosity(optuna.logging.WARNING)
  directions = ["maximize" if OBJECTIVES[o][1] else "minimize" for o in objectives]
  sampler = optuna.samplers.NSGAIISampler(seed=seed) if len(objectives) > 1 else optuna.samplers.TPESampler(seed=seed)
  try:
    study = optuna.create_study(study_name=study_name, storage=storage, directions=directions, sampler=sampler,
                                load_if_exists=True)
  except Exception as e:  # sqlalchemy's OperationalError ("database is locked"), a bad URL, a server that refuses
    raise ValueError(f"--storage {storage}: the study's database cannot be opened ({type(e).__name__}: "
                     f"{str(e).splitlines()[0]}): is another run writing it?") from None
  ended = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)  # a failed core is measured, too
  known = {t.user_attrs["spec"]: t.user_attrs["row"] for t in study.trials if t.state in ended and "row" in t.user_attrs}
  measured = asks = 0
  values = lambda row: [OBJECTIVES[o][0](row) for o in objectives]
  while len(known) < trials and asks < 50 * trials:  # a sampler that keeps asking for measured cores stops here
    pending: list[tuple[object, str]] = []
    while len(pending) < batch and len(known) + len({s for _, s in pending}) < trials and asks < 50 * trials:
      t = study.ask()
      asks += 1
      spec = spec_of("reference", {k: t.suggest_categorical(k, v) for k, v in space.items()})
      if budget is not None and area_of(spec) > budget:
        study.tell(t, state=optuna.trial.TrialState.PRUNED)
      elif spec in known:
        t.set_user_attr("spec", spec)
        t.set_user_attr("row", known[spec])
        study.tell(t, values(known[spec]) if "error" not in known[spec] else None,
                   state=None if "error" not in known[spec] else optuna.trial.TrialState.FAIL)
      else:
        pending.append((t, spec))
    specs = list(dict.fromkeys(s for _, s in pending))
    rows = dict(zip(specs, run(specs)))
    measured += len(specs)
    for t, spec in pending:
      row = rows[spec]
      known[spec] = row
      t.set_user_attr("spec", spec)
      t.set_user_attr("row", row)
      if "error" in row: study.tell(t, state=optuna.trial.TrialState.FAIL)
      else: study.tell(t, values(row))
      if progress: progress(row, len(known), trials)
  return list(known.values()), measured

def table(rows: list[dict], front: list[dict]) -> str:
  on_front = {r["spec"] for r in front}
  sets = next((list(r["by_set"]) for r in rows if "by_set" in r), [])
  w = max(len(r["spec"]) for r in rows)
  out = [f"{'configuration':{w}} {'area':>6} {'SRAM B':>7} {'ports':>5} {'time s':>10} {'energy J':>10} {'perf':>7} " +
         " ".join(f"{s:>9}" for s in sets) + "  pareto"]
  for r in sorted(rows, key=lambda r: r.get("time_s", math.inf)):
    if "error" in r:
      out.append(f"{r['spec']:{w}} {r['area']:6.1f} {r['sram_bytes']:7d} {r['ports']:5d}  failed: {r['error']}")
      continue
    out.append(f"{r['spec']:{w}} {r['area']:6.1f} {r['sram_bytes']:7d} {r['ports']:5d} {r['time_s']:10.4g} "
               f"{r['energy_j']:10.4g} {r['perf']:7.3f} " + " ".join(f"{r['by_set'][s]:9.3f}" for s in sets) +
               ("  *" if r["spec"] in on_front else ""))
  return "\n".join(out)

def plot(rows: list[dict], front: list[dict], x: str, y: str, title: str, path: str) -> None:
  """y against x for every configuration measured, the Pareto front of the two, the named configurations labelled."""
  try: import matplotlib
  except ImportError: raise ValueError("explore draws its plot with matplotlib: pip install matplotlib") from None
  matplotlib.use("Agg")  # files only, no display
  import matplotlib.pyplot as plt
  ok = [r for r in rows if "error" not in r]
  fx, fy = OBJECTIVES[x][0], OBJECTIVES[y][0]
  named = {n["name"] for n in configs.named()}
  fig, ax = plt.subplots(figsize=(8, 5))
  ax.scatter([fx(r) for r in ok], [fy(r) for r in ok], s=18, color="tab:grey", label="configurations measured")
  ax.plot([fx(r) for r in front], [fy(r) for r in front], "o-", color="tab:blue", label="Pareto front")
  # named points that overlap on the plot (the same value to 3 digits, within half again along x: configurations that
  # differ where these workloads do not) share a label
  groups: list[list[dict]] = []
  for r in sorted((r for r in ok if r["spec"] in named), key=lambda r: (f"{fy(r):.3g}", fx(r))):
    g = groups[-1] if groups else None
    if g and f"{fy(g[0]):.3g}" == f"{fy(r):.3g}" and fx(r) <= 1.5 * fx(g[0]): g.append(r)
    else: groups.append([r])
  for group in groups:
    names = [r["spec"] for r in group]
    label = ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:2])} and {len(names) - 2} more"
    ax.annotate(label, (fx(group[0]), fy(group[0])), fontsize=7, xytext=(4, 4), textcoords="offset points")
  ref = next((r for r in ok if r["spec"] == "reference"), None)
  if ref: ax.scatter([fx(ref)], [fy(ref)], s=60, marker="*", color="tab:red", zorder=3, label="reference core")
  for axis, name in (("x", x), ("y", y)):
    values = [OBJECTIVES[name][0](r) for r in ok]
    if values and min(values) > 0 and max(values) / min(values) > 20: getattr(ax, f"set_{axis}scale")("log")
  ax.set_xlabel(OBJECTIVES[x][2])
  ax.set_ylabel(OBJECTIVES[y][2])
  ax.set_title(title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)

def _space(args) -> dict[str, list[int]]:
  space = dict(SPACE)
  for g in args.grid or []:
    field, _, values = g.partition("=")
    try: space[field] = [int(v) for v in values.split(",")]
    except ValueError: raise ValueError(f"--grid {g}: expected field=v1,v2,...") from None
    for v in space[field]: configs.from_spec(f"reference,{field}={v}")  # an unknown field or a bad value: ValueError
  return space

def main(args) -> None:
  sets = args.set.split(",")
  for s in sets:
    if s not in SETS: raise ValueError(f"--set {s}: no such workload set (known: {', '.join(SETS)})")
  objectives = objectives_of(args.objectives)
  if len(objectives) < 2 and args.search != "optuna": raise ValueError("--objectives: at least two, to plot a front")
  space = _space(args)
  if args.storage is None: args.storage = f"sqlite:///{os.path.abspath(os.path.join(args.out, 'explore.db'))}"
  os.makedirs(args.out, exist_ok=True)
  if args.search == "optuna": check_storage(args.storage)
  if args.study is None:
    args.study = f"{'+'.join(sets)}:{'+'.join(objectives)}:budget={args.budget}:seed={args.seed}"
  jobs = (os.cpu_count() or 1) if args.jobs is None else args.jobs
  from tqdm import tqdm
  bar = tqdm(unit="config", file=sys.stderr, dynamic_ncols=True, disable=None)  # a bar on a terminal, else quiet
  def say(r: dict, *done) -> None:  # a line per configuration measured, above the bar
    tqdm.write(f"  {r['spec']}: " + (f"{r['time_s']:.4g} s, {r['energy_j']:.4g} J" if "error" not in r else
                                     f"failed ({r['error']})"), file=sys.stderr)
    if done: bar.n = done[0]
    else: bar.update()
    bar.refresh()
  if args.search == "optuna":
    bar.reset(total=args.trials)
    with measurer(sets, jobs, args.scheduler) as run:
      rows, measured = optuna_search(sets, space, objectives, args.trials, args.seed, args.budget, args.storage,
                                     args.study, run, batch=args.batch, progress=say)
  else:
    # the real workloads take seconds each: the named configurations unless a grid is asked for
    specs = grid(space) if args.grid or "real" not in sets else _distinct([n["name"] for n in configs.named()])
    if args.budget is not None:
      if area_of("reference") > args.budget:
        raise ValueError(f"budget {args.budget}: the reference core alone needs area {area_of('reference')}")
      specs = [s for s in specs if area_of(s) <= args.budget]
      if len(specs) > EXHAUSTIVE: raise ValueError(f"--budget: {len(specs)} configurations fit; search them with --search optuna")
    tqdm.write(f"explore: {len(specs)} configurations x workload set {'+'.join(sets)}", file=sys.stderr)
    bar.reset(total=len(specs))
    rows, measured = evaluate_kept(specs, sets, jobs, args.scheduler, os.path.join(args.out, "measured.jsonl"), say)
  bar.close()
  # one front and plot per objective against the last (area, by default): explore.png the first's, explore-NAME.png
  # the others'
  x = objectives[-1]
  fronts = {y: pareto(rows, [y, x]) for y in objectives[:-1]}
  front = fronts.get(objectives[0], [])
  if args.json: print(json.dumps(workload_rows(rows), indent=1))
  else: print(table(rows, front))
  pngs = []
  for i, (y, f) in enumerate(fronts.items()):
    pngs.append(os.path.join(args.out, "explore.png" if i == 0 else f"explore-{y}.png"))
    plot(rows, f, x, y, f"TinyTPU TensorCore variants on {'+'.join(sets)}: {y} against {x}", pngs[-1])
  data = os.path.join(args.out, "explore.json")
  with open(data, "w") as f:
    json.dump({"sets": sets, "space": space, "objectives": objectives, "rows": rows,
               "pareto": [r["spec"] for r in front], "fronts": {y: [r["spec"] for r in f] for y, f in fronts.items()}},
              f, indent=1)
  out = sys.stderr if args.json else sys.stdout
  for y, f in fronts.items(): print(f"\nPareto front of {y} against {x}: " + ", ".join(r["spec"] for r in f), file=out)
  for why in dict.fromkeys(w["unavailable"] for r in rows for w in r.get("workloads", []) if "unavailable" in w):
    print(f"not run: {why}", file=out)
  if args.budget is not None or args.search == "optuna":
    best = best_within(rows, objectives[0], args.budget)
    within = f" for area <= {args.budget}" if args.budget is not None else ""
    how = f" ({measured} configurations measured)"
    if best: print(f"proposal{within}: {best['spec']} (area {best['area']:.1f}, {objectives[0]} "
                   f"{OBJECTIVES[objectives[0]][0](best):.6g}){how}", file=out)
  if args.search != "optuna" and measured < len(rows):
    print(f"{len(rows) - measured} of the {len(rows)} configurations were measured by this build before: their rows "
          f"kept in {os.path.join(args.out, 'measured.jsonl')}", file=out)
  print(f"wrote {', '.join(pngs + [data])}", file=out)
