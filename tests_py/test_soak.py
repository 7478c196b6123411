"""Soak: 10,000 kernel launches and buffer churn in one process with flat memory."""
import gc
import os
import numpy as np
import tinytpu
from tinytpu import _core
from tinygrad import Tensor, TinyJit

LAUNCHES = 10_000
# A leak of one 16-lane int32 tile (64 bytes) per launch would grow RSS by 640 KB; 1 MiB leaves room for allocator
# noise (measured growth after the warm-up: about 30 KB) and still catches a leak of about 100 bytes per launch.
MAX_GROWTH = 1 << 20

def rss() -> int:
  gc.collect()
  with open("/proc/self/statm") as f: return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def test_soak_launches_and_buffers_keep_rss_flat():
  rng = np.random.default_rng(0)
  a_np, b_np = rng.integers(-9, 9, (4, 16)).astype(np.int32), rng.integers(-9, 9, (4, 16)).astype(np.int32)
  a, b = Tensor(a_np, device="TINYTPU").realize(), Tensor(b_np, device="TINYTPU").realize()
  step = TinyJit(lambda a, b: (a * 3 + b).relu().realize())
  sizes = [17, 64, 257, 1021]  # a few shapes: each compiles once in the warm-up, later calls allocate and free buffers

  def churn(i):
    buf = _core.DeviceBuffer(int(rng.integers(1, 1 << 16)))  # device memory allocated and freed directly
    view = memoryview(buf)
    view[0], view[-1] = i % 256, 255 - i % 256
    assert (view[0], view[-1]) == (i % 256, 255 - i % 256)
    if i % 50 == 0:  # a fresh tensor through tinygrad's allocator and a non-jitted kernel
      x = rng.integers(-100, 100, sizes[i // 50 % len(sizes)]).astype(np.int32)
      assert (Tensor(x, device="TINYTPU") * 2).sum().item() == 2 * x.sum()

  for i in range(1000): step(a, b), churn(i)
  before, launches = rss(), tinytpu.counters()["launches"]
  for i in range(LAUNCHES): out = step(a, b); churn(i)
  growth = rss() - before
  assert tinytpu.counters()["launches"] - launches >= LAUNCHES
  np.testing.assert_array_equal(out.numpy(), np.maximum(a_np * 3 + b_np, 0))
  assert growth < MAX_GROWTH, f"RSS grew {growth >> 10} KiB over {LAUNCHES} launches"
