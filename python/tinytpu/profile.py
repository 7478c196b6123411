"""`python -m tinytpu profile script.py`: run a script on TINYTPU with tracing on and report, per kernel and
overall, cycles, launches, per-unit busy %, the instruction mix, the top stall causes and the hot
instructions. Everything is derived from the trace's events (tinytpu.trace)."""
from __future__ import annotations
import bisect, os, re, runpy, sys
from collections import Counter
from dataclasses import dataclass, field
from tinytpu import trace
from tinytpu.trace import Event, UNITS

@dataclass
class Call:
  """One kernel call on the timeline (or the one bundle of `tinytpu run`)."""
  name: str
  begin: int
  end: int
  launches: int = 0
  events: list[Event] = field(default_factory=list)  # everything reported inside it, kernel track aside
  @property
  def cycles(self) -> int: return self.end - self.begin

def kernel_calls(evs: list[Event]) -> list[Call]:
  calls = [Call(e.name, e.begin, e.end) for e in evs if e.track == "kernel" and e.depth == 0]
  if not calls:  # a bare bundle: its loader track spans the run
    runs = [e for e in evs if e.track == "loader"]
    calls = [Call("bundle", min(e.begin for e in runs), max(e.end for e in runs), 1)] if runs else []
  begins = [c.begin for c in calls]
  for e in evs:
    if not calls: break
    c = calls[max(bisect.bisect_right(begins, e.begin) - 1, 0)]
    if e.track == "kernel": c.launches += e.depth == 1
    else: c.events.append(e)
  return calls

_VPU_TASM = re.compile(r"^(VPU(?:_BG)?) v\d+ = (\w+)\(")
def mnemonic(tasm: str) -> str:
  """The instruction-mix key of an SXU instruction: its mnemonic, with the op for VPU dispatches."""
  m = _VPU_TASM.match(tasm)
  return f"{m[1]} {m[2]}" if m else tasm.split(" ", 1)[0]

@dataclass
class Stats:
  calls: int = 0
  launches: int = 0
  cycles: int = 0
  busy: Counter = field(default_factory=Counter)    # unit -> busy cycles (depth-0 slices)
  stalls: Counter = field(default_factory=Counter)  # cause -> SXU stall cycles
  mix: Counter = field(default_factory=Counter)     # mnemonic -> executions
  mix_cycles: Counter = field(default_factory=Counter)
  hot: Counter = field(default_factory=Counter)     # (kernel, pc, TASM) -> SXU cycles
  hot_count: Counter = field(default_factory=Counter)

  def add(self, call: Call) -> None:
    self.calls += 1
    self.launches += call.launches
    self.cycles += call.cycles
    for e in call.events:
      if e.track == "sxu" and e.depth == 1: self.stalls[e.name] += e.cycles
      if e.depth != 0 or e.track not in UNITS: continue
      self.busy[e.track] += e.cycles
      if e.track == "sxu":
        self.mix[mnemonic(e.name)] += 1
        self.mix_cycles[mnemonic(e.name)] += e.cycles
        self.hot[(call.name, e.pc, e.name)] += e.cycles
        self.hot_count[(call.name, e.pc, e.name)] += 1

def _pct(part: int, whole: int) -> str: return f"{100 * part / whole:5.1f}%" if whole else "    -"

def report(evs: list[Event], top: int = 5) -> str:
  calls = kernel_calls(evs)
  per: dict[str, Stats] = {}
  total = Stats()
  for c in calls:
    per.setdefault(c.name, Stats()).add(c)
    total.add(c)
  ranked = sorted(per.items(), key=lambda kv: -kv[1].cycles)
  cols = ["sxu", "stall", *UNITS[1:]]
  w = max([len("overall")] + [len(n) for n in per])
  out = [f"TINYTPU profile: {total.calls} kernel calls, {total.launches} launches, {total.cycles:,} cycles", "",
         f"{'kernel':<{w}} {'calls':>5} {'launches':>8} {'cycles':>12} {'share':>6}  " +
         " ".join(f"{c.upper():>6}" for c in cols)]
  def row(name: str, s: Stats) -> str:
    busy = [s.busy["sxu"], sum(s.stalls.values()), *(s.busy[u] for u in UNITS[1:])]
    return (f"{name:<{w}} {s.calls:>5} {s.launches:>8} {s.cycles:>12,} {_pct(s.cycles, total.cycles)}  " +
            " ".join(f"{_pct(b, s.cycles):>6}" for b in busy))
  out += [row(n, s) for n, s in ranked] + [row("overall", total)]
  out.append("  (per-unit busy % of the kernel's cycles; STALL: SXU cycles stalled, part of SXU)")
  for name, s in [*ranked[:top], ("overall", total)]:
    out += ["", f"== {name}: {s.cycles:,} cycles, {s.launches} launches"]
    out.append("  instruction mix: " + ", ".join(
        f"{m} x{n} ({s.mix_cycles[m]:,} cyc)" for m, n in sorted(s.mix.items(), key=lambda kv: -s.mix_cycles[kv[0]])[:8]))
    sxu = s.busy["sxu"]
    out.append("  top stall causes: " + (", ".join(
        f"{c} {n:,} cyc ({_pct(n, sxu).strip()} of SXU)" for c, n in s.stalls.most_common(4)) or "none"))
    out.append("  hot instructions:")
    for (kernel, pc, tasm), n in s.hot.most_common(top):
      where = f"{kernel} pc {pc}" if name == "overall" else f"pc {pc}"
      out.append(f"    {n:>10,} cyc  x{s.hot_count[(kernel, pc, tasm)]:<6} {where}: {tasm}")
  return "\n".join(out)

def run_script(path: str, argv: list[str]):
  """Run a Python script in this process on TINYTPU with tracing on; returns its TraceLog. DEV from the
  environment wins, as it would for the script alone."""
  from tinygrad.helpers import DEV
  if not os.environ.get("DEV"): DEV.value = os.environ["DEV"] = "TINYTPU"
  old_argv, log = sys.argv, trace.start()
  sys.argv = [path, *argv]
  try:
    runpy.run_path(path, run_name="__main__")
  finally:
    sys.argv = old_argv
    trace.stop()
  return log
