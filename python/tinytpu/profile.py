"""`python -m tinytpu profile script.py`: run a script on TINYTPU with tracing on and report, per kernel and
overall, cycles, launches, per-unit busy %, the instruction mix, the top stall causes and the hot
instructions, derived from the trace's events (tinytpu.events); then the run's counters (tinytpu.counters())."""
from __future__ import annotations
import dataclasses, os, re, runpy, sys, textwrap
from collections import Counter
from dataclasses import dataclass, field
import numpy as np
from tinytpu import _core, trace
from tinytpu.events import TRACKS, UNITS, Trace

@dataclass(frozen=True)
class Call:
  """One kernel call on the timeline (or the one bundle of `tinytpu run`)."""
  name: str
  begin: int
  end: int
  launches: int
  core: int = 0  # the chip's core it ran on
  @property
  def cycles(self) -> int: return self.end - self.begin

def kernel_calls(tr: Trace) -> list[Call]:
  """The trace's kernel calls: on a chip, each core's in turn (they lie end to end on its tracks)."""
  if len(cores := tr.cores()) > 1:
    return [dataclasses.replace(c, core=core) for core in cores for c in kernel_calls(tr.of_core(core))]
  k = tr.ev[tr.on("kernel", 0)]
  if len(k) == 0:  # bare bundles: the loader track spans them
    lo = tr.ev[tr.ev["track"] == TRACKS.index("loader")]
    return [Call("bundle", int(lo["begin"].min()), int(lo["end"].max()), 1)] if len(lo) else []
  launches = np.bincount(call_of(k["begin"], tr.ev["begin"][tr.on("kernel", 1)]), minlength=len(k))
  return [Call(tr.names[n], int(b), int(e), int(c)) for n, b, e, c in zip(k["name"], k["begin"], k["end"], launches)]

def call_of(call_begins: np.ndarray, begins: np.ndarray) -> np.ndarray:
  """The call each event (by its begin cycle) falls in: calls lie end to end on the timeline."""
  return np.maximum(np.searchsorted(call_begins, begins, "right") - 1, 0)

_VPU_TASM = re.compile(r"^(VPU(?:_BG)?) v\d+ = (\w+)\(")
def mnemonic(tasm: str) -> str:
  """The instruction-mix key of an SXU instruction: its mnemonic, with the op for VPU dispatches."""
  m = _VPU_TASM.match(tasm)
  return f"{m[1]} {m[2]}" if m else tasm.split(" ", 1)[0]

def _sums(weights: np.ndarray, *keys: np.ndarray) -> tuple[dict, dict]:
  """Sum and count of `weights` per distinct tuple of keys."""
  if len(weights) == 0: return {}, {}
  uniq, inv = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
  inv = inv.reshape(-1)
  tuples = [tuple(u) for u in uniq.tolist()]
  return (dict(zip(tuples, np.bincount(inv, weights=weights).astype(np.int64).tolist())),
          dict(zip(tuples, np.bincount(inv).tolist())))

@dataclass
class Stats:
  calls: int = 0
  launches: int = 0
  cycles: int = 0
  busy: Counter = field(default_factory=Counter)        # unit -> busy cycles (its depth-0 slices)
  stalls: Counter = field(default_factory=Counter)      # cause -> SXU stall cycles
  mix: Counter = field(default_factory=Counter)         # mnemonic -> executions
  mix_cycles: Counter = field(default_factory=Counter)  # mnemonic -> SXU cycles
  hot: Counter = field(default_factory=Counter)         # (kernel, pc, TASM) -> SXU cycles
  hot_count: Counter = field(default_factory=Counter)

def group_stats(tr: Trace, calls: list[Call], group_of_call: list[int]) -> list[Stats]:
  """Stats per group of calls (group_of_call[i] is call i's group)."""
  out = [Stats() for _ in range(max(group_of_call, default=-1) + 1)]
  for c, g in zip(calls, group_of_call):
    out[g].calls, out[g].launches, out[g].cycles = out[g].calls + 1, out[g].launches + c.launches, out[g].cycles + c.cycles
  ev, dur = tr.ev, tr.cycles
  call = call_of(np.array([c.begin for c in calls], np.uint64), ev["begin"])
  group = np.array(group_of_call)[call]
  for u in UNITS:
    m = tr.on(u, 0)
    for g, v in _sums(dur[m], group[m])[0].items(): out[g[0]].busy[u] = v
  m = tr.on("sxu", 1)
  for (g, n), v in _sums(dur[m], group[m], ev["name"][m])[0].items(): out[g].stalls[tr.names[n]] = v
  m = tr.on("sxu", 0)
  cycles, count = _sums(dur[m], group[m], ev["name"][m])
  for (g, n), v in cycles.items():
    out[g].mix_cycles[mnemonic(tr.names[n])] += v
    out[g].mix[mnemonic(tr.names[n])] += count[(g, n)]
  cycles, count = _sums(dur[m], group[m], call[m], ev["pc"][m].astype(np.int64), ev["name"][m])
  for (g, c, pc, n), v in cycles.items():
    key = (calls[c].name, pc, tr.names[n])
    out[g].hot[key] += v
    out[g].hot_count[key] += count[(g, c, pc, n)]
  return out

def _pct(part: int, whole: int) -> str: return f"{100 * part / whole:5.1f}%" if whole else "    -"

def report(tr: Trace, top: int = 5, counters: dict | None = None, config=None) -> str:
  """The profile of a trace: of its one core, or of each core of a chip (their kernels overlap on the chip's timeline,
  each core's lie end to end on its own tracks) with the NoC's copies into it. With the run's counters and
  configuration, what the memory system moved: HBM bytes against the channels' bandwidth, NoC bytes; and every
  counter (counters_report)."""
  cores = tr.cores()
  if len(cores) == 1: out = [core_report(tr, top)]
  else:
    noc = tr.on("noc", 0)
    out = [f"TINYTPU profile of a chip: {len(cores)} cores traced, {int(tr.ev['end'].max()):,} chip cycles, "
           f"{int(noc.sum())} copies between cores taking {int(tr.cycles[noc].sum()):,} cycles"]
    for c in cores:
      one = tr.of_core(c)
      into = one.on("noc", 0)
      out += ["", f"==== core {c} (TINYTPU:{c}): {int(into.sum())} copies into it, {int(one.cycles[into].sum()):,} cycles "
              "on the NoC", core_report(one, top)]
  if counters and config is not None and config.loader.shares_channels:
    share = config.cores if config.hbm_shared else 1  # shared: a core's slots, one cycle in `cores`
    peak = config.hbm_channels * config.hbm_bytes_per_cycle / share
    whose = f"a core's share of the chip's shared channels (1/{share} of" if share > 1 else "the cores' channels ("
    out.append(f"\nHBM: {counters['hbm_bytes']:,} bytes moved, {_pct(counters['hbm_bytes'], peak * counters['cycles']).strip()} "
               f"of {whose}{config.hbm_channels} x {config.hbm_bytes_per_cycle} bytes a cycle each) over "
               f"their {counters['cycles']:,} cycles")
  if counters and counters.get("noc_bytes"):
    out.append(f"NoC: {counters['noc_bytes']:,} bytes copied between cores")
  if counters: out += ["", counters_report(counters)]
  return "\n".join(out)

def counters_report(c: dict) -> str:
  """A run's counters (tinytpu.counters()), by the struct that reports them in the counter table (cpp/sim/counters.def:
  call, run, busy, activity), then the chip's."""
  struct = {f["name"]: f["struct"] for f in _core.counter_fields()}
  groups: dict[str, list[str]] = {}
  for name, value in c.items(): groups.setdefault(struct.get(name, "chip"), []).append(f"{name}={value:,}")
  return "\n".join(["counters:"] + [textwrap.fill(", ".join(items), 110, initial_indent=f"  {g:<9} ", subsequent_indent=" " * 12)
                                     for g, items in groups.items()])

def core_report(tr: Trace, top: int = 5) -> str:
  """The profile of one core's kernel calls, which lie end to end on its tracks."""
  calls = kernel_calls(tr)
  if not calls: return "TINYTPU profile: no kernel ran on TINYTPU"
  kernels = list(dict.fromkeys(c.name for c in calls))  # in first-call order
  per = dict(zip(kernels, group_stats(tr, calls, [kernels.index(c.name) for c in calls])))
  total = group_stats(tr, calls, [0] * len(calls))[0]
  ranked = sorted(per.items(), key=lambda kv: -kv[1].cycles)
  w = max([len("overall"), *map(len, kernels)])
  cols = ["SXU", "STALL", *(u.upper() for u in UNITS[1:])]
  out = [f"TINYTPU profile: {total.calls} kernel calls, {total.launches} launches, {total.cycles:,} cycles",
         *([f"  (a bounded trace: {tr.coverage()}; the figures are of what it recorded)"] if tr.coverage() else []), "",
         f"{'kernel':<{w}} {'calls':>5} {'launches':>8} {'cycles':>12} {'share':>6}  " + " ".join(f"{c:>6}" for c in cols)]
  def row(name: str, s: Stats) -> str:
    vals = [s.busy["sxu"], sum(s.stalls.values()), *(s.busy[u] for u in UNITS[1:])]
    return (f"{name:<{w}} {s.calls:>5} {s.launches:>8} {s.cycles:>12,} {_pct(s.cycles, total.cycles)}  " +
            " ".join(f"{_pct(v, s.cycles):>6}" for v in vals))
  out += [row(n, s) for n, s in ranked] + [row("overall", total)]
  out.append("  (per-unit busy % of the kernel's cycles; STALL: SXU cycles stalled, part of SXU)")
  for name, s in [*ranked[:top], ("overall", total)]:
    out += ["", f"== {name}: {s.cycles:,} cycles, {s.launches} launches"]
    out.append("  instruction mix: " + ", ".join(f"{m} x{s.mix[m]} ({c:,} cyc)" for m, c in s.mix_cycles.most_common(8)))
    out.append("  top stall causes: " + (", ".join(f"{c} {n:,} cyc ({_pct(n, s.busy['sxu']).strip()} of SXU)"
                                                   for c, n in s.stalls.most_common(4)) or "none"))
    out.append("  hot instructions:")
    for (kernel, pc, tasm), n in s.hot.most_common(top):
      where = f"{kernel} pc {pc}" if name == "overall" else f"pc {pc}"
      out.append(f"    {n:>10,} cyc  x{s.hot_count[(kernel, pc, tasm)]:<6} {where}: {tasm}")
  return "\n".join(out)

def run_script(path: str, argv: list[str], **bounds):
  """Run a Python script in this process with TINYTPU as the default device and tracing on (bounded by
  trace.start's keyword arguments); returns its TraceLog."""
  from tinygrad.helpers import DEV
  DEV.value = os.environ["DEV"] = "TINYTPU"  # the context variable was read at import; later imports see the env
  old_argv, log = sys.argv, trace.start(**bounds)
  sys.argv = [path, *argv]
  try:
    runpy.run_path(path, run_name="__main__")
  finally:
    sys.argv = old_argv
    trace.stop()
  return log
