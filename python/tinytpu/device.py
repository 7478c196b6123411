"""The TINYTPU tinygrad device: buffers live in the model's device memory (C++), every kernel runs on the
cycle-accurate TensorCore in-process."""
from __future__ import annotations
import ctypes, functools, os, sys, threading, time, weakref
from collections import Counter
from tinygrad.device import Compiled, LRUAllocator, Program, TinyELF, BufferSpec
from tinygrad.helpers import DEBUG
from tinygrad.codegen.opt import search
from tinytpu import _core, chip, configs, trace
from tinytpu.renderer import DOTS, DOTS_ON_MXU, MXU_ARCH, TinyTPURenderer, check_dots, track_float64_tensors

# A kernel call that stops before its end (Ctrl-C, an error) leaves the buffers it writes part written, and tinygrad made
# them its tensors' storage before the call: reading one would hand back the part as the whole result. Their bytes are
# kept here as incomplete until written whole again (a copy in, a kernel call that ends) or handed out anew by the
# allocator; reading them (a copy out, a kernel's load) raises instead.
_incomplete: list[tuple[int, int, str]] = []  # [start, end) host addresses, and why
# _incomplete and the counters: a chip's cores run their kernels on threads of their own. Re-entrant: a buffer freed by
# the garbage collector (_free) may run on a thread that holds it, at any allocation.
_lock = threading.RLock()
_kernels: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (IR, configs.key, cut nodes) -> a kernel

def _span(buf) -> tuple[int, int] | None:
  mv = memoryview(buf)
  if mv.nbytes == 0: return None
  start = ctypes.addressof(ctypes.c_char.from_buffer(mv))
  return start, start + mv.nbytes

def _forget(buf) -> None:
  """buf's bytes are whole again (written, or a new tensor's)."""
  if not _incomplete or (span := _span(buf)) is None: return
  lo, hi = span
  with _lock:
    kept = []
    for a, b, why in _incomplete:
      if b <= lo or hi <= a: kept.append((a, b, why))
      else: kept += [(a, lo, why)] * (a < lo) + [(hi, b, why)] * (hi < b)
    _incomplete[:] = kept

def _stopped(bufs, stores, why: str) -> None:
  """The buffers a kernel call stores into are not whole: it stopped, or never ran."""
  for i in stores: _forget(bufs[i])
  with _lock: _incomplete.extend((*span, why) for i in stores if (span := _span(bufs[i])) is not None)

def _check_whole(buf) -> None:
  if not _incomplete or (span := _span(buf)) is None: return
  with _lock: incomplete = list(_incomplete)
  for a, b, why in incomplete:
    if a < span[1] and span[0] < b:
      raise RuntimeError(f"TINYTPU: this data is incomplete: {why}, and tinygrad had already taken its buffer as the "
                         "result. Compute it again from its inputs (a tensor made anew: realize() of the same tensor "
                         "does not run it again)")

class TinyTPUAllocator(LRUAllocator["TinyTPUDevice"]):
  """Host accesses to a buffer wait for the device's queued kernels first (a chip's cores run theirs on threads
  of their own). A freed buffer waits for nothing: a queued call holds its own reference to it."""
  def _alloc(self, size: int, options: BufferSpec): return self.dev.core.DeviceBuffer(size)
  def alloc(self, size: int, options: BufferSpec | None = None):
    buf = super().alloc(size, options)  # maybe a cached one, incomplete for the tensor that had it
    _forget(buf)
    return buf
  def _free(self, opaque, options: BufferSpec): _forget(opaque)
  def _as_buffer(self, src) -> memoryview:
    self.dev.synchronize()
    _check_whole(src)
    return memoryview(src)
  def _copyin(self, dest, src: memoryview):
    self.dev.synchronize()
    memoryview(dest)[:] = src
    _forget(dest)
  def _copyout(self, dest: memoryview, src):
    self.dev.synchronize()
    _check_whole(src)
    dest[:] = memoryview(src)
  def _transfer(self, dest, src, sz: int, src_dev: TinyTPUDevice, dest_dev: TinyTPUDevice):
    """A copy between two TINYTPU devices: between two cores of one chip it travels the chip's NoC (its cycles
    on the chip's timeline); between devices that are chips of their own, it takes none of theirs."""
    src_dev.synchronize()
    dest_dev.synchronize()
    _check_whole(src)
    memoryview(dest)[:sz] = memoryview(src)[:sz]
    _forget(dest)
    if src_dev.timeline is dest_dev.timeline:
      src_dev.timeline.copy(src_dev.device_id, dest_dev.device_id, sz, trace.recording_log())
  def _offset(self, buf, size: int, offset: int): return buf.view(offset, size)

class TinyTPUProgram(Program["TinyTPUDevice"]):
  def __init__(self, dev: TinyTPUDevice, obj: TinyELF):
    self.dev, self.name, self.lib = dev, obj.name, obj.lib
    dev.made_kernels = True
    # TINYTPU_CUT_NODES: how many tile nodes of a chunk are traced before its batch compiles (tests set it low)
    self.cut_nodes = int(os.getenv("TINYTPU_CUT_NODES", _core.DEFAULT_CUT_NODES))
    self.compiled: tuple = (None, None)  # (a configuration, the kernel compiled for it)
    self.loads, self.stores = set(self.kernel.loads), set(self.kernel.stores)  # places in a call's buffers
  @property
  def kernel(self):
    """The kernel for the device's configuration now: tinygrad keeps a device's programs, so one given another
    configuration (of the same geometry) must not run its kernels as compiled for the last one. Devices of one
    configuration (a chip's cores) share a kernel: its plans compile once, its timings are kept once."""
    config, kernel = self.compiled
    if config is not self.dev.config:
      config, key = self.dev.config, (self.lib, configs.key(self.dev.config), self.cut_nodes)
      with _lock: kernel = _kernels.get(key)
      if kernel is None:
        kernel = self.dev.core.Kernel(self.lib, config, self.cut_nodes)
        with _lock: kernel = _kernels.setdefault(key, kernel)
      self.compiled = (config, kernel)
    return kernel
  def __call__(self, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=False, **kw):
    vals, trial, queue = [int(v) if v is not None else 0 for v in vals], _beam_trials > 0, self.dev.queue
    # here and now: a lone core's; a chip's too with TINYTPU_ASYNC=0, or while a trace records (one log, in call order)
    if queue is None or os.getenv("TINYTPU_ASYNC", "1") == "0" or trace.active():
      self.dev.synchronize()
      cycles = self._run(bufs, vals, trial, _Progress(self.name), threads=None)
    else:  # a core of a chip: its worker thread runs the call while Python goes on
      progress = _Progress(self.name, queue.cancelled)
      threads = max(1, DEFAULT_THREADS // queue.cores_busy())  # the host's, shared by the chip's cores at work
      done = queue.submit(lambda: self._run(bufs, vals, trial, progress, threads),
                          lambda: _stopped(bufs, self.stores, f"kernel {self.name} writing it did not run: an earlier "
                                                              f"kernel on {self.dev.device} failed"))
      if not wait: return None
      self.dev.synchronize()
      cycles = done.result()
    return cycles / (self.dev.config.clock_mhz * 1e6) if wait else None  # simulated seconds at the core's clock

  def _run(self, bufs, vals: list[int], trial: bool, progress: _Progress, threads: int | None) -> int:
    """One call, on the calling thread: its cycles, counted on the device's counters and its chip's timeline."""
    log = trace.for_kernel(self.name, self.dev.core)
    if log is not None and self.dev.config.cores > 1 and not trial:  # at its core's place on the chip's timeline
      log.base, log.core = self.dev.timeline.core_cycles(self.dev.device_id), self.dev.device_id
    try:
      if _incomplete:
        for i in self.loads: _check_whole(bufs[i])
      stats = self.kernel.run(list(bufs), vals, DEBUG >= 4, log, progress, self.dev.core_state,
                              run_mode(self.dev.core, threads))
    except BaseException as e:  # Ctrl-C (KeyboardInterrupt) or an error: what it stores is not whole
      _stopped(bufs, self.stores, f"kernel {self.name} writing it stopped before its end ({type(e).__name__})")
      raise
    finally: progress.close()
    if _incomplete:
      for i in self.stores: _forget(bufs[i])
    if log is not None: trace.check(log)
    for i, tasm in enumerate(stats.tasm): print(f"# {self.name} launch {i}\n{tasm}", end="")
    if not trial: self.dev.timeline.run(self.dev.device_id if self.dev.config.cores > 1 else 0, stats.cycles)
    with _lock:
      _counters.setdefault((self.dev.device, trial), Counter()).update({name: getattr(stats, name) for name in COUNTERS})
    return stats.cycles

def run_mode(core, threads: int | None = None):
  """How kernels run their launches (executor.h RunMode), read at every call: TINYTPU_FUNCTIONAL=0 ticks every
  launch; TINYTPU_VERIFY=1 ticks every launch run in order as well and raises on any difference; TINYTPU_THREADS
  (default: `threads`, else the cores this process may use, at most 8) threads share a call's independent launches,
  each thread interleaving its groups of them so that they batch together unless TINYTPU_STREAMS=0."""
  return core.RunMode(functional=os.getenv("TINYTPU_FUNCTIONAL", "1") != "0", verify=os.getenv("TINYTPU_VERIFY", "0") != "0",
                      threads=int(os.getenv("TINYTPU_THREADS", threads or DEFAULT_THREADS)),
                      streams=os.getenv("TINYTPU_STREAMS", "1") != "0")
DEFAULT_THREADS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8)

PROGRESS_AFTER = 2.0  # seconds of host time before a kernel call shows its progress

class _Progress:
  """Called by a running kernel every 50 ms of host time. Python code runs here, so a pending Ctrl-C raises
  KeyboardInterrupt in it and stops the kernel. After PROGRESS_AFTER seconds, on a terminal, one updating line
  on stderr says how far the call has got."""
  def __init__(self, name: str, cancelled: threading.Event | None = None):
    self.name, self.start, self.shown, self.cancelled = name, time.monotonic(), False, cancelled
  def __call__(self, p: _core.KernelProgress):
    if self.cancelled is not None and self.cancelled.is_set(): raise KeyboardInterrupt  # Ctrl-C while waiting for it
    if time.monotonic() - self.start < PROGRESS_AFTER or not sys.stderr.isatty(): return
    sys.stderr.write(f"\r{self.name}: {p.chunks_done}/{p.chunks} chunks, {p.launches} launches, {p.cycles} cycles ")
    sys.stderr.flush()
    self.shown = True
  def close(self):
    if self.shown: sys.stderr.write("\r\033[K")

def _arch(config, dots: str) -> str | None:
  """The renderer's target arch for a core and a dot-product placement, parts joined by commas: a float MXU's rows
  (renderer.hand_coded_optimizations) and DOTS_ON_MXU; none without either."""
  parts = ([f"{MXU_ARCH[config.mxu_dtype]}{config.ROWS}"] if config.mxu_dtype else []) + ([DOTS_ON_MXU] if dots == "mxu" else [])
  return ",".join(parts) or None

class TinyTPUDevice(Compiled):
  def __init__(self, device: str):
    self.device_id, self.queue, self._dots = int(device.split(":")[1]) if ":" in device else 0, None, DOTS
    self.config = configs.from_spec()  # the core its kernels compile for and run on: TINYTPU_CONFIG, else the reference
    super().__init__(device, TinyTPUAllocator(self), [TinyTPURenderer], TinyTPUProgram, arch=self.arch)
    _devices.add(self)
  @property
  def core(self): return configs.core_of(self.config)  # the extension module of the configuration's geometry
  @property
  def config(self): return self._config
  @config.setter
  def config(self, config):  # another core keeps nothing of the last one's launches (resident programs)
    if getattr(self, "made_kernels", False) and configs.core_of(config) is not self.core:  # tinygrad keeps them
      raise ValueError(f"{self.device}: its kernels were made for the {self.core.TensorCoreConfig.ROWS}-row core, and a "
                       f"device's tile geometry is fixed once it has made kernels (open another TINYTPU:N for "
                       f"{configs.core_of(config).TensorCoreConfig.ROWS} rows)")
    self.synchronize()
    self._config, self.core_state = config, configs.core_of(config).CoreState()
    self.arch = _arch(config, self._dots)  # the renderer's target: kernels made from now on are made for this core
    self.timeline = chip.timeline(config, self.core, self.device_id)  # ValueError for a core the chip has not
    self.queue = chip.CoreQueue(f"TINYTPU:{self.device_id}", self.timeline) if config.cores > 1 else None
  @property
  def dots(self) -> str: return self._dots
  @dots.setter
  def dots(self, dots: str):  # where the dot products of kernels made from now on run (renderer.DOTS)
    self._dots = check_dots(dots)
    self.arch = _arch(self.config, dots)
  def synchronize(self):
    if self.queue is not None: self.queue.synchronize()

trace._from_env()
# The counter table (cpp/sim/counters.def): per counter its name, the struct that reports it, how a kernel call
# combines it and its doc. A call's counters are those it sums; ACTIVITY what the launches did, by action.
COUNTER_FIELDS: list[dict] = _core.counter_fields()
COUNTERS = tuple(f["name"] for f in COUNTER_FIELDS if f["combine"] == "sum")
ACTIVITY = tuple(f["name"] for f in COUNTER_FIELDS if f["struct"] == "activity")
_counters: dict[tuple[str, bool], Counter] = {}  # (device, a BEAM trial run) -> totals
_devices: weakref.WeakSet[TinyTPUDevice] = weakref.WeakSet()

def _matching(device: str | None) -> list[TinyTPUDevice]:
  """The devices opened, or the one named, each with its queued kernels run, and those of every other core of its
  chip: the chip's timeline (chip_cycles, a reset) counts all its cores' work, whatever the device asked about."""
  devs = [d for d in list(_devices) if device in (None, d.device)]
  chips = {id(d.timeline) for d in devs}
  for d in list(_devices):
    if id(d.timeline) in chips: d.synchronize()
  return devs

def counters(device: str | None = None, beam: bool = False) -> dict[str, int]:
  """The kernel calls' counters since reset_counters(), COUNTERS (each one's doc in COUNTER_FIELDS): kernel calls and
  launches; of the launches, those run in order (their counters the first ticked launch's of their program, run_mode),
  of these those also ticked to check them, and the batches they ran in (launches of one program run together:
  in_order / batches is their mean size), and the launches run by a call's other threads (run_mode: TINYTPU_THREADS)
  and those run as streams (TINYTPU_STREAMS); the launches' cycles, SXU cycles, HBM bytes (a configuration with
  hbm_channels), SparseCore lookups (sparse_core) and each unit's busy cycles; and ACTIVITY's counters, what the
  launches did by action (tinytpu.energy prices them). Of one device ("TINYTPU", "TINYTPU:1") or, by default, all of
  them; beam=True gives BEAM's trial runs instead, which the user's totals leave out. `chip_cycles`: the elapsed
  cycles of the chips these devices are cores of (chip.py), where kernels on a chip's cores overlap and copies
  between them take the NoC's cycles (a lone core's are its `cycles`); `noc_bytes` the bytes those copies moved."""
  devs = _matching(device)
  total = Counter({k: 0 for k in COUNTERS})
  with _lock:
    for (dev, trial), c in _counters.items():
      if trial == beam and device in (None, dev): total.update(c)
  chips = {} if beam else {id(d.timeline): d.timeline for d in devs}
  return dict(total, chip_cycles=sum(t.chip_cycles for t in chips.values()), noc_bytes=sum(t.noc_bytes for t in chips.values()))
def reset_counters(device: str | None = None) -> None:
  """Counters back to 0, and the timelines of the chips these devices are cores of (a chip's, whole)."""
  for d in _matching(device): d.timeline.reset()
  with _lock:
    for dev, trial in list(_counters):
      if device in (None, dev): del _counters[(dev, trial)]

# BEAM times candidate kernels through search._time_program (looked up when called): runs inside it are trials.
_beam_trials = 0
def _time_program(*args, **kwargs):
  global _beam_trials
  _beam_trials += 1
  try: return _tinygrad_time_program(*args, **kwargs)
  finally: _beam_trials -= 1
_tinygrad_time_program, search._time_program = search._time_program, _time_program

# tinygrad is not thread-safe: its Context is process-wide (ALLOW_DEVICE_USAGE=0 while it compiles a kernel), as are
# its caches, so a second Python thread's realize met "usage of device TINYTPU:1 disallowed". Its entry points that
# schedule, compile and run (Tensor.realize; Tensor._buffer, under .numpy(), .data(), .tolist(); a TinyJit's call) take
# one lock: Python threads driving different cores take turns in tinygrad, while the cores' simulations run side by
# side on the chip's threads. Every thread's results are then what it alone would get.
tinygrad_lock = threading.RLock()

def serialize_tinygrad_entry_points() -> None:
  from tinygrad import Tensor, TinyJit
  def locked(fn):
    if getattr(fn, "takes_tinygrad_lock", False): return fn
    def call(*args, **kwargs):
      with tinygrad_lock: return fn(*args, **kwargs)
    call.takes_tinygrad_lock = True
    return functools.wraps(fn)(call)
  Tensor.realize, Tensor._buffer, TinyJit.__call__ = locked(Tensor.realize), locked(Tensor._buffer), locked(TinyJit.__call__)

# Importing this module registers the device: tinygrad finds devices only as tinygrad.runtime.ops_<name>.
sys.modules.setdefault("tinygrad.runtime.ops_tinytpu", sys.modules[__name__])
track_float64_tensors()
serialize_tinygrad_entry_points()
