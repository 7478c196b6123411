"""Tracing on and off. Every unit of the model reports begin/end events to an optional sink
(cpp/sim/trace.h); the TINYTPU device reports its kernels to the active one. `TINYTPU_TRACE=out.json`
traces every kernel a script runs and writes Chrome trace JSON at exit (tinytpu.events)."""
from __future__ import annotations
import atexit, os
from tinytpu import _core

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

def write(path: str, log: _core.TraceLog) -> None:
  from tinytpu.events import Trace, write_json  # numpy only once a trace is read: `import tinytpu` stays light
  with open(path, "w") as f: write_json(Trace(log), f)

def _from_env() -> None:
  if (path := os.environ.get("TINYTPU_TRACE")) and _active is None:
    start()
    atexit.register(lambda: (log := stop()) is not None and write(path, log))
