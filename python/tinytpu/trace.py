"""Tracing on and off. Every unit of the model reports begin/end events to an optional sink
(cpp/sim/trace.h); the TINYTPU device reports its kernels to the active one. `TINYTPU_TRACE=out.json`
traces every kernel a script runs and writes Chrome trace JSON at exit (tinytpu.events).

What a trace keeps is bounded (each setting also a `start()` argument and a CLI option):
  TINYTPU_TRACE_MAX_EVENTS=N     at most N events (default 2,000,000; 0: no cap); at the cap recording stops
                                 with one warning, the run goes on untraced, the trace stays whole up to there
  TINYTPU_TRACE_CYCLES=FROM:TO   only the slices overlapping cycles [FROM, TO) of the timeline (either side
                                 may be left out)
  TINYTPU_TRACE_KERNELS=REGEX    only the kernels whose name matches (re.search); the others run untraced"""
from __future__ import annotations
import atexit, os, re, warnings
from tinytpu import _core

DEFAULT_MAX_EVENTS: int = _core.TraceLog.DEFAULT_MAX_EVENTS

class TraceCapWarning(UserWarning): """Recording stopped at the trace's event cap."""

def _uint64(text: str) -> bool: return text.isdigit() and int(text) < 2**64  # what the log's uint64s hold

def parse_max_events(text: str) -> int:
  if not _uint64(text.strip()): raise ValueError(f"{text!r} is not a whole number of events (0: no cap)")
  return int(text)

def parse_cycles(text: str) -> tuple[int, int | None]:
  """'FROM:TO', 'FROM:' or ':TO' -> (FROM, TO or None)."""
  lo, sep, hi = (t.strip() for t in text.partition(":"))
  if not sep or not all(_uint64(t) for t in (lo, hi) if t) or (hi and int(hi) <= int(lo or 0)):
    raise ValueError(f"{text!r} is not a cycle window FROM:TO with FROM < TO (either side may be left out)")
  return int(lo or 0), int(hi) if hi else None

def parse_kernels(text: str) -> re.Pattern:
  try: return re.compile(text)
  except re.error as e: raise ValueError(f"{text!r} is not a regular expression: {e}") from None

def _setting(var: str, parse, value):
  if value is not None or (text := os.environ.get(var)) is None: return value
  try: return parse(text)
  except ValueError as e: raise ValueError(f"{var}: {e}") from None

# The log the TINYTPU device reports its kernels to: None when tracing is off.
_active: _core.TraceLog | None = None
_kernels: re.Pattern | None = None

def new_log(max_events: int | None = None, cycles: tuple[int, int | None] | None = None, core=None) -> _core.TraceLog:
  """A log bounded by the arguments; one left None is read from its environment variable, else the default. It
  records kernels on `core`'s geometry (an extension module), by default the one TINYTPU_CONFIG names."""
  from tinytpu import configs
  log = (core or configs.core_of(configs.from_spec())).TraceLog()
  if (max_events := _setting("TINYTPU_TRACE_MAX_EVENTS", parse_max_events, max_events)) is not None:
    log.max_events = max_events
  if (cycles := _setting("TINYTPU_TRACE_CYCLES", parse_cycles, cycles)) is not None:
    log.window_begin = cycles[0]
    if cycles[1] is not None: log.window_end = cycles[1]
  return log

def start(max_events: int | None = None, cycles: tuple[int, int | None] | None = None,
          kernels: re.Pattern | None = None) -> _core.TraceLog:
  """A new active log (new_log), recording only the kernels `kernels` matches (all when None and no
  TINYTPU_TRACE_KERNELS)."""
  global _active, _kernels
  _active, _kernels = new_log(max_events, cycles), _setting("TINYTPU_TRACE_KERNELS", parse_kernels, kernels)
  return _active

def stop() -> _core.TraceLog | None:
  global _active
  log, _active = _active, None
  return log

def active() -> bool: return _active is not None

def recording_log() -> _core.TraceLog | None:
  """The active log while it records (not stopped at its cap), for what is not a kernel: a copy between cores."""
  return _active if _active is not None and _active.stopped_at is None else None

def for_kernel(name: str, core=_core) -> _core.TraceLog | None:
  """The log a kernel call reports to: the active one, paused when the kernel is filtered out; None once it
  stopped at its cap (nothing more is recorded, and check() warned after the call that reached it). A log is
  made by one core's module (`core`, new_log's): a kernel on a core of another geometry is an error."""
  if _active is None or _active.stopped_at is not None: return None
  if not isinstance(_active, core.TraceLog):
    raise RuntimeError(f"TINYTPU trace: kernel {name} runs on a {core.TensorCoreConfig.ROWS}-row core, the active trace "
                       f"was started for a {type(_active).__module__} core (start tracing with that core's module)")
  _active.paused = _kernels is not None and _kernels.search(name) is None
  return _active

def check(log: _core.TraceLog) -> None:
  """Warns when recording stopped at the cap: called after the run (or kernel call) that reached it."""
  if log.stopped_at is not None:
    warnings.warn(f"TINYTPU trace: recording stopped at cycle {log.stopped_at:,}: {log.max_events:,} events is the cap "
                  "(TINYTPU_TRACE_MAX_EVENTS, --trace-max-events); the run goes on untraced, the trace covers the cycles "
                  "before", TraceCapWarning, stacklevel=2)

def write(path: str, log: _core.TraceLog) -> None:
  from tinytpu.events import Trace, write_json  # numpy only once a trace is read: `import tinytpu` stays light
  with open(path, "w") as f: write_json(Trace(log), f)

def _from_env() -> None:
  if (path := os.environ.get("TINYTPU_TRACE")) and _active is None:
    start()
    atexit.register(lambda: (log := stop()) is not None and write(path, log))
