"""Cycle traces of the model. Every unit reports begin/end events to an optional sink (cpp/sim/trace.h);
this module turns them into Chrome trace-event JSON, which Perfetto UI and chrome://tracing open.
Timestamps are cycles (the viewers show them as microseconds). `TINYTPU_TRACE=out.json` traces every
kernel a script runs on TINYTPU and writes the file at exit."""
from __future__ import annotations
import atexit, json, os, struct
from collections import defaultdict
from dataclasses import dataclass
from tinytpu import _core

TRACKS: list[str] = list(_core.TRACKS)  # kernel, loader, sxu, mxu, vpu, xlu, vmem
UNITS = ["sxu", "mxu", "vpu", "xlu", "vmem"]  # the tracks that have a busy counter
_TRACK_TITLES = {"kernel": "kernels / launches", "loader": "loader (testbench)"}
_NESTED = {"kernel": "launch", "sxu": "stall", "mxu": "phase"}  # what a depth-1 slice of a track is
_RECORD = struct.Struct("<QQIhBB")  # TraceEvent in cpp/sim/trace.h

@dataclass(frozen=True)
class Event:
  track: str   # one of TRACKS
  depth: int   # 0: the unit's own work; 1: nested in it (an SXU stall, an MXU phase, a launch)
  begin: int   # cycles on the trace's timeline, [begin, end)
  end: int
  name: str    # TASM text for SXU instructions, the op for VPU/XLU, the access for VMEM, ...
  pc: int      # the SXU instruction it belongs to; -1 for none
  @property
  def cycles(self) -> int: return self.end - self.begin

def events(log: _core.TraceLog) -> list[Event]:
  """The log's events ordered by begin cycle, a parent before what nests in it."""
  names = log.names
  evs = [Event(TRACKS[t], d, b, e, names[n], pc) for b, e, n, pc, t, d in _RECORD.iter_unpack(log.events)]
  return sorted(evs, key=lambda ev: (ev.begin, ev.depth, -ev.end, TRACKS.index(ev.track)))

def busy_counters(evs: list[Event]) -> list[tuple[int, dict[str, int]]]:
  """(cycle, {unit: 1 if busy}) at every change; "sxu stalled" counts SXU stall cycles apart."""
  deltas: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
  for ev in evs:
    key = ev.track if ev.depth == 0 and ev.track in UNITS else "sxu stalled" if ev.track == "sxu" else None
    if key is None: continue
    deltas[ev.begin][key] += 1
    deltas[ev.end][key] -= 1
  now = dict.fromkeys(UNITS + ["sxu stalled"], 0)
  out: list[tuple[int, dict[str, int]]] = []
  for t in sorted(deltas):
    for k, d in deltas[t].items(): now[k] += d
    if not out or out[-1][1] != now: out.append((t, dict(now)))
  return out

def chrome_trace(evs: list[Event]) -> dict:
  """Chrome trace-event JSON: one thread per track, one complete ("X") event per slice (category: the
  track, or track.stall / .phase / .launch for nested ones), and a "busy units" counter; every timed
  event in cycle order."""
  meta: list[dict] = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "TinyTPU TensorCore"}}]
  for tid, t in enumerate(TRACKS):
    meta.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": _TRACK_TITLES.get(t, t.upper())}})
    meta.append({"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
  timed = [{"ph": "X", "pid": 1, "tid": TRACKS.index(e.track), "ts": e.begin, "dur": e.cycles, "name": e.name,
            "cat": e.track if e.depth == 0 else f"{e.track}.{_NESTED[e.track]}", "args": {"pc": e.pc} if e.pc >= 0 else {}} for e in evs]
  counters = [{"ph": "C", "pid": 1, "name": "busy units", "ts": t, "args": v} for t, v in busy_counters(evs)]
  timed = sorted(timed + counters, key=lambda e: e["ts"])  # stable: slices stay parent-first
  return {"traceEvents": meta + timed, "displayTimeUnit": "ns",
          "otherData": {"timestamps": "cycles of the TinyTPU model (1 cycle is shown as 1 us)"}}

def write(path: str, log: _core.TraceLog) -> None:
  with open(path, "w") as f: json.dump(chrome_trace(events(log)), f, separators=(",", ":"))

# The log the TINYTPU device reports its kernels to: None when tracing is off.
_active: _core.TraceLog | None = None
def active() -> _core.TraceLog | None: return _active
def start() -> _core.TraceLog:
  global _active
  _active = _core.TraceLog()
  return _active
def stop() -> _core.TraceLog | None:
  global _active
  log, _active = _active, None
  return log

def _from_env() -> None:
  if (path := os.environ.get("TINYTPU_TRACE")) and _active is None:
    start()
    atexit.register(lambda: (log := stop()) is not None and write(path, log))
