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
_queues: dict[int, list[CoreQueue]] = {}  # id(timeline) -> the queues of its cores

def timeline(config, core_module, device_id: int):
  """The timeline of the chip a device is a core of: one per configuration of several cores, shared by them;
  a lone core's own otherwise. ValueError for a core the chip does not have."""
  if config.cores == 1: chip = core_module.ChipTimeline(config)
  else:
    if device_id >= config.cores:
      raise ValueError(f"TINYTPU:{device_id}: the chip of this configuration has {config.cores} cores, TINYTPU:0 to "
                       f"TINYTPU:{config.cores - 1}")
    chip = _chips.get(configs.key(config)) or _chips.setdefault(configs.key(config), core_module.ChipTimeline(config))
  return chip

class CoreQueue:
  """A core's kernel calls, run in order on one worker thread. An error stops the queue: the calls after it do
  not run (each one's `skip` runs instead, as for one submitted while the error waits), and it is raised in the caller
  at the next synchronize() or submit(). Ctrl-C in synchronize() stops the running call through its progress
  callback (cancelled), then raises KeyboardInterrupt."""
  def __init__(self, name: str, timeline):
    self.pool = ThreadPoolExecutor(1, thread_name_prefix=name)
    self.pending: list[Future] = []
    self.error: BaseException | None = None
    self.cancelled = threading.Event()
    self.others = _queues.setdefault(id(timeline), [])  # the queues of the chip's other cores
    self.others.append(self)

  def cores_busy(self) -> int:
    """The chip's cores with calls queued or running, this one counted: they share the host's threads."""
    return 1 + sum(any(not f.done() for f in q.pending) for q in self.others if q is not self)

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
      try:
        for f in self.pending: f.exception()  # waits: the running call stops at its next progress report
      finally:  # a second Ctrl-C while it waits: the queue is left running, not cancelled for every later call
        self.cancelled.clear()
        self.pending, self.error = [], None
      raise
    self.pending = []
    self._raise()

  def _raise(self) -> None:
    if self.error is not None:
      e, self.error = self.error, None
      raise e
