"""The TINYTPU tinygrad device: buffers live in the model's device memory (C++), every kernel runs on the
cycle-accurate TensorCore in-process."""
from __future__ import annotations
from tinygrad.device import Compiled, LRUAllocator, Program, TinyELF, BufferSpec
from tinygrad.helpers import DEBUG
from tinytpu import _core, trace
from tinytpu.renderer import TinyTPURenderer

class TinyTPUAllocator(LRUAllocator["TinyTPUDevice"]):
  def _alloc(self, size: int, options: BufferSpec): return _core.DeviceBuffer(size)
  def _as_buffer(self, src) -> memoryview: return memoryview(src)
  def _copyin(self, dest, src: memoryview): memoryview(dest)[:] = src
  def _copyout(self, dest: memoryview, src): dest[:] = memoryview(src)
  def _offset(self, buf, size: int, offset: int): return buf.view(offset, size)

class TinyTPUProgram(Program["TinyTPUDevice"]):
  def __init__(self, dev: TinyTPUDevice, obj: TinyELF):
    self.dev, self.name, self.kernel = dev, obj.name, _core.Kernel(obj.lib)
  def __call__(self, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=False, **kw):
    stats = self.kernel.run(list(bufs), [int(v) if v is not None else 0 for v in vals], DEBUG >= 4, trace.active())
    for i, tasm in enumerate(stats.tasm): print(f"# {self.name} launch {i}\n{tasm}", end="")
    _counters["kernels"] += 1
    _counters["launches"] += stats.launches
    _counters["cycles"] += stats.cycles
    _counters["sxu_cycles"] += stats.sxu_cycles
    return stats.cycles * 1e-9 if wait else None  # simulated seconds at a nominal 1 GHz

class TinyTPUDevice(Compiled):
  def __init__(self, device: str):
    super().__init__(device, TinyTPUAllocator(self), [TinyTPURenderer], TinyTPUProgram)

trace._from_env()
_counters = {"kernels": 0, "launches": 0, "cycles": 0, "sxu_cycles": 0}
def counters() -> dict[str, int]: return dict(_counters)
def reset_counters() -> None:
  for k in _counters: _counters[k] = 0
