"""A trace's events (cpp/sim/trace.h) as numpy columns, and Chrome trace-event JSON of them, which
Perfetto UI and chrome://tracing open. Timestamps are cycles (the viewers show them as microseconds)."""
from __future__ import annotations
import heapq, json
from typing import TextIO
import numpy as np
from tinytpu import _core

# A trace's format (cpp/sim/trace_format.def): its tracks, in the order of an event's track number, and the layout of
# TraceLog.events' records: [begin, end) in cycles, name index, pc (-1: none), track, depth, the chip's core.
_TRACKS = _core.tracks()
TRACKS: list[str] = [t["name"] for t in _TRACKS]
UNITS = [t["name"] for t in _TRACKS if t["unit"]]  # the tracks with a busy counter and a busy %
NESTED = {t["name"]: t["nested"] for t in _TRACKS if t["nested"]}  # what a depth-1 slice of a track is
_TITLES = {t["name"]: t["title"] for t in _TRACKS}
EVENT_DTYPE = np.dtype(_core.trace_event_format())
_NO_END = 2**64 - 1  # TraceLog::window_end when the window is open-ended

class Trace:
  """A log's events, ordered by begin cycle with a parent before what nests in it. Depth 0 is a unit's
  own work (an instruction, an MXU dispatch, a VPU op, a loader record, a kernel); depth 1 nests in it."""
  def __init__(self, log: _core.TraceLog):
    ev = np.frombuffer(log.events, EVENT_DTYPE)
    self.ev = ev[np.lexsort((ev["track"], -ev["end"].astype(np.int64), ev["depth"], ev["begin"]))]
    self.names: list[str] = list(log.names)
    self.stopped_at: int | None = log.stopped_at  # the cycle recording stopped at, at the event cap
    self.window = (log.window_begin, log.window_end)
  def coverage(self) -> str:
    """What the trace holds when it was bounded ("" when it holds everything)."""
    lo, hi = self.window
    notes = [f"only cycles {lo}..{hi if hi < _NO_END else ''}"] if (lo, hi) != (0, _NO_END) else []
    if self.stopped_at is not None: notes.append(f"recording stopped at cycle {self.stopped_at} (the event cap)")
    return "; ".join(notes)
  def __len__(self) -> int: return len(self.ev)
  def cores(self) -> list[int]:
    """The chip's cores the trace has events of ([0] for a lone core)."""
    return np.unique(self.ev["core"]).tolist() or [0]
  def of_core(self, core: int) -> Trace:
    """The same trace with one core's events only: on a chip, each core's kernels lie end to end on its tracks."""
    one = object.__new__(Trace)
    one.__dict__.update(self.__dict__, ev=self.ev[self.ev["core"] == core])
    return one
  def on(self, track: str, depth: int) -> np.ndarray:
    """Mask of the slices of one track at one depth."""
    return (self.ev["track"] == TRACKS.index(track)) & (self.ev["depth"] == depth)
  @property
  def cycles(self) -> np.ndarray: return (self.ev["end"] - self.ev["begin"]).astype(np.int64)

def busy_counters(tr: Trace) -> tuple[list[str], np.ndarray, np.ndarray]:
  """(keys, times, values): each key's busy state (1/0) from each time on, at every change. Keys are the
  units (their depth-0 slices) and "sxu stalled" (the SXU's stall slices)."""
  keys = UNITS + ["sxu stalled"]
  masks = [tr.on(u, 0) for u in UNITS] + [tr.on("sxu", 1)]
  times = np.unique(np.concatenate([tr.ev["begin"], tr.ev["end"]]))
  values = np.zeros((len(times), len(keys)), np.int64)
  for k, m in enumerate(masks):  # slices of one key are disjoint: busy at t iff some begin <= t < end
    b, e = np.sort(tr.ev["begin"][m]), np.sort(tr.ev["end"][m])
    values[:, k] = np.searchsorted(b, times, "right") - np.searchsorted(e, times, "right")
  changed = np.ones(len(times), bool)
  changed[1:] = (values[1:] != values[:-1]).any(axis=1)
  return keys, times[changed], values[changed]

def _rows(*columns: np.ndarray, chunk: int = 1 << 16):
  """The columns' rows as Python values, converted a chunk at a time: a few million events as Python lists
  would take several times the trace's own memory."""
  for i in range(0, len(columns[0]), chunk): yield from zip(*(c[i:i + chunk].tolist() for c in columns))

def write_json(tr: Trace, f: TextIO) -> None:
  """Chrome trace-event JSON: a process per core of the chip (one for a lone core), in it one thread per track, one
  complete ("X") event per slice (category: the track, or track.stall / .phase / .launch when nested), a "busy
  units" counter; timed events in cycle order."""
  coverage = f',"coverage":{json.dumps(tr.coverage())}' if tr.coverage() else ""
  f.write('{"displayTimeUnit":"ns","otherData":{"timestamps":"cycles of the TinyTPU model (1 cycle is shown as 1 us)"' +
          coverage + '},"traceEvents":[')
  cores, sep = tr.cores(), "\n"
  for core in cores:
    pid, title = core + 1, "TinyTPU TensorCore" if cores == [0] else f"TinyTPU core {core} (TINYTPU:{core})"
    f.write(f'{sep}{{"ph":"M","pid":{pid},"name":"process_name","args":{{"name":"{title}"}}}}'
            f',\n{{"ph":"M","pid":{pid},"name":"process_sort_index","args":{{"sort_index":{pid}}}}}')
    sep = ",\n"
    for tid, t in enumerate(TRACKS):
      f.write(f',\n{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":"{_TITLES[t]}"}}}}'
              f',\n{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_sort_index","args":{{"sort_index":{tid}}}}}')
  quoted = [json.dumps(n) for n in tr.names]
  cats = [[t, f"{t}.{NESTED.get(t, 'nested')}"] for t in TRACKS]
  def core_counters(core: int):
    keys, ctimes, cvalues = busy_counters(tr.of_core(core))
    return ((t, f',\n{{"ph":"C","pid":{core + 1},"name":"busy units","ts":{t},"args":{{' +
             ",".join(f'"{k}":{v}' for k, v in zip(keys, row)) + "}}") for t, row in _rows(ctimes, cvalues))
  counters = heapq.merge(*(core_counters(c) for c in cores), key=lambda c: c[0])
  counter = next(counters, None)
  for b, e, n, pc, t, d, c in _rows(*(tr.ev[k] for k in ("begin", "end", "name", "pc", "track", "depth", "core"))):
    while counter is not None and counter[0] <= b:  # counters interleaved in time order
      f.write(counter[1])
      counter = next(counters, None)
    args = f'{{"pc":{pc}}}' if pc >= 0 else "{}"
    f.write(f',\n{{"ph":"X","pid":{c + 1},"tid":{t},"ts":{b},"dur":{e - b},"name":{quoted[n]},"cat":"{cats[t][d]}","args":{args}}}')
  for _, text in ([counter] if counter else []) + list(counters): f.write(text)
  f.write("\n]}\n")
