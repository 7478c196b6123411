"""The chip a TINYTPU device is a core of. A configuration with `cores` > 1 is a chip of that many TensorCores:
TINYTPU:0..cores-1 are its cores, and each runs its kernels in order on a thread of its own while Python goes on
(CoreQueue), so that kernels on different cores run at once on the host as on the chip. Every device counts its
kernels on a timeline (the C++ ChipTimeline): a chip's cores share one, on which kernels of different cores
overlap and copies between cores take the NoC's cycles; a lone core (cores = 1) is a chip of its own."""
from __future__ import annotations
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable
from tinytpu import configs

_chips: dict[tuple, object] = {}  # configs.key -> the chip's timeline
_opened: dict[int, int] = {}  # id(timeline) -> its cores opened so far

def timeline(config, core_module, device_id: int):
  """The timeline of the chip a device is a core of: one per configuration of several cores, shared by them;
  a lone core's own otherwise. ValueError for a core the chip does not have."""
  if config.cores == 1: chip = core_module.ChipTimeline(config)
  else:
    if device_id >= config.cores:
      raise ValueError(f"TINYTPU:{device_id}: the chip of this configuration has {config.cores} cores, TINYTPU:0 to "
                       f"TINYTPU:{config.cores - 1}")
    chip = _chips.get(configs.key(config)) or _chips.setdefault(configs.key(config), core_module.ChipTimeline(config))
  _opened[id(chip)] = _opened.get(id(chip), 0) + 1
  return chip

def cores_opened(chip) -> int: return _opened.get(id(chip), 1)

def timelines() -> list:
  """Every chip of several cores made so far."""
  return list(_chips.values())

class CoreQueue:
  """A core's kernel calls, run in order on one worker thread. An error stops the queue: the calls after it do
  not run (each one's `skip` runs instead, as for one submitted while the error waits), and it is raised in the caller
  at the next synchronize() or submit().
  Ctrl-C in synchronize() stops the running call through its progress callback (cancelled), then raises
  KeyboardInterrupt."""
  def __init__(self, name: str):
    self.pool = ThreadPoolExecutor(1, thread_name_prefix=name)
    self.pending: list[Future] = []
    self.error: BaseException | None = None
    self.cancelled = threading.Event()

  def submit(self, call: Callable[[], object], skip: Callable[[], None]) -> Future:
    if self.error is not None:
      skip()
      self._raise()
    self.pending = [f for f in self.pending if not f.done()]
    future = self.pool.submit(self._run, call, skip)
    self.pending.append(future)
    return future

  def _run(self, call: Callable[[], object], skip: Callable[[], None]):
    if self.error is not None or self.cancelled.is_set():
      skip()
      return None
    try: return call()
    except BaseException as e:
      self.error = e
      return None

  def synchronize(self) -> None:
    try:
      for f in self.pending: f.result()
    except KeyboardInterrupt:
      self.cancelled.set()
      for f in self.pending: f.exception()  # waits: the running call stops at its next progress report
      self.cancelled.clear()
      self.pending, self.error = [], None
      raise
    self.pending = []
    self._raise()

  def _raise(self) -> None:
    if self.error is not None:
      e, self.error = self.error, None
      raise e
