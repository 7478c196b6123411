"""What a new user met on sizes and programs nobody had picked: each case once killed the process, hung, or
ignored Ctrl-C. The crash cases run in a subprocess, so a regression is a failed test, not a dead runner."""
import os
import pty
import subprocess
import sys
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor
from tinytpu import _core

# A hang guard for the subprocesses, not a speed goal (bench/ holds those): these took seconds when written.
GUARD_S = 120

def run_python(code: str, **env) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=GUARD_S,
                        env={**os.environ, **env})

SUM = """
import numpy as np, tinytpu
from tinygrad import Tensor
a = np.random.default_rng({n}).integers({lo}, {hi}, {n}).astype(np.{dtype})
got = Tensor(a, device="TINYTPU").sum().numpy()
want = Tensor(a, device="CPU").sum().numpy()
print(got.dtype, got, want, tinytpu.counters()["kernels"])
"""

# One-kernel sums (tinygrad splits 2^16 and 2^20 into two kernels; prime lengths stay one long reduce):
# a recursion in the MXU fuser overflowed the stack from ~47,600 terms, and its retries made the compile
# quadratic (16,411 elements took a minute).
@pytest.mark.parametrize("n,dtype,lo,hi", [(16411, "int32", -1000, 1000), (65537, "int32", -1000, 1000),
                                           (100003, "uint16", 0, 65535), (200003, "uint32", 0, 2**32 - 1)])
def test_long_one_kernel_sum_is_exact(n, dtype, lo, hi):
  out = run_python(SUM.format(n=n, dtype=dtype, lo=lo, hi=hi))
  assert out.returncode == 0, out.stderr[-2000:]
  dt, got, want, kernels = out.stdout.split()
  assert got == want and kernels == "1", out.stdout

def test_device_buffer_view_bounds_cannot_wrap():
  buf = _core.DeviceBuffer(16)
  for offset, size in [(2**64 - 8, 16), (8, 2**64 - 4), (17, 0), (0, 17)]:
    with pytest.raises(IndexError, match="outside a device buffer of 16 bytes"): buf.view(offset, size)
  assert buf.view(16, 0).size == 0 and buf.view(4, 12).size == 12

CTRL_C = """
import os, signal, threading, time, numpy as np
import tinytpu
from tinygrad import Tensor
from tinytpu import device
started = []
call = device.TinyTPUProgram.__call__
def timed_call(self, *a, **k):
  started.append(time.monotonic())
  return call(self, *a, **k)
device.TinyTPUProgram.__call__ = timed_call
rng = np.random.default_rng(0)
a, b = [Tensor(rng.standard_normal((512, 512)).astype(np.float32), device="TINYTPU").realize() for _ in range(2)]
before, fired = len(started), []
def interrupt():
  while len(started) == before: time.sleep(0.01)
  time.sleep(0.2)  # well inside the matmul kernel, which runs for seconds (4.5 s on a busy machine; 256^3 took
  # under a second, and on a loaded machine this thread was not scheduled before it ended)
  fired.append(time.monotonic())
  os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
try:
  (a @ b).realize()
  print("not interrupted")
except KeyboardInterrupt:
  print("interrupted", time.monotonic() - fired[0])
x = Tensor(np.arange(10, dtype=np.int32), device="TINYTPU")
print((x * 3 + 1).numpy().tolist())
"""

def test_ctrl_c_stops_a_running_kernel_and_the_device_stays_usable():
  out = run_python(CTRL_C)
  assert out.returncode == 0, out.stderr[-2000:]
  first, second = out.stdout.splitlines()[-2:]
  assert first.startswith("interrupted"), out.stdout
  assert float(first.split()[1]) < 0.5
  assert second == str([3 * i + 1 for i in range(10)])

def test_ctrl_c_stops_a_long_tasm_run():
  # four nested loops of 255 (billions of cycles) under a cycle cap of 2^40: only Ctrl-C ends it
  code = """
import os, signal, threading, time, tinytpu
fired = []
def interrupt():
  time.sleep(1.0)
  fired.append(time.monotonic())
  os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
try:
  tinytpu.run_tasm("LOOP_BEGIN count=255\\n" * 4 + "LOOP_END\\n" * 4 + "HALT\\nEND\\n", max_cycles=2**40)
except KeyboardInterrupt:
  print("interrupted", time.monotonic() - fired[0])
print(tinytpu.run_tasm(open(os.path.join({kernels!r}, "seed", "add_16.tasm")).read()).cycles)
"""
  kernels = os.path.join(os.path.dirname(__file__), "..", "kernels")
  out = run_python(code.format(kernels=kernels))
  assert out.returncode == 0, out.stderr[-2000:]
  first, second = out.stdout.splitlines()[-2:]
  assert first.startswith("interrupted") and float(first.split()[1]) < 0.5, out.stdout
  assert second == str(tinytpu.run_tasm(open(os.path.join(kernels, "seed", "add_16.tasm")).read()).cycles)

# One kernel of about a second (reports come every 50 ms of host time), shown from its start.
PROGRESS = """
import numpy as np, tinytpu
from tinygrad import Tensor
from tinytpu import device
device.PROGRESS_AFTER = 0.0
a = Tensor(np.arange(100003, dtype=np.int32), device="TINYTPU")
print((a * a).sum().item())
"""

def test_long_kernel_shows_progress_on_a_terminal_only():
  want = str(np.sum(np.arange(100003, dtype=np.int32) ** 2, dtype=np.int32))  # int32 wraps
  piped = run_python(PROGRESS)
  assert piped.returncode == 0 and piped.stdout.strip() == want and "chunks" not in piped.stderr
  # stderr on a terminal: one line rewritten in place, cleared when the call ends
  main, sub = pty.openpty()
  p = subprocess.run([sys.executable, "-c", PROGRESS], stdout=subprocess.PIPE, stderr=sub, text=True, timeout=GUARD_S)
  os.close(sub)
  shown = b""
  while True:
    try: chunk = os.read(main, 4096)
    except OSError: break
    if not chunk: break
    shown += chunk
  os.close(main)
  assert p.returncode == 0 and p.stdout.strip() == want
  text = shown.decode()
  assert "\r" in text and " chunks, " in text and " launches, " in text and text.endswith("\r\x1b[K")

def test_counters_per_device():
  tinytpu.reset_counters()
  (Tensor([1, 2, 3], device="TINYTPU:1") + 1).realize()
  (Tensor([1, 2, 3], device="TINYTPU:2") * 2).realize()
  (Tensor([4, 5, 6], device="TINYTPU:2") * 3).realize()
  one, two, both = tinytpu.counters("TINYTPU:1"), tinytpu.counters("TINYTPU:2"), tinytpu.counters()
  assert one["kernels"] == 1 and two["kernels"] == 2 and both["kernels"] == 3
  assert both["cycles"] == one["cycles"] + two["cycles"] > 0
  tinytpu.reset_counters("TINYTPU:2")
  assert tinytpu.counters("TINYTPU:2")["kernels"] == 0 and tinytpu.counters()["kernels"] == 1

def test_beam_trial_runs_are_counted_apart():
  code = """
import numpy as np, tinytpu
from tinygrad import Tensor
a = Tensor(np.arange(64, dtype=np.int32).reshape(8, 8), device="TINYTPU").realize()
tinytpu.reset_counters()
print((a.sum(axis=1) + 1).numpy().tolist())
print(tinytpu.counters()["kernels"], tinytpu.counters(beam=True)["kernels"])
"""
  out = run_python(code, BEAM="2", IGNORE_BEAM_CACHE="1", PARALLEL="0")
  assert out.returncode == 0, out.stderr[-2000:]
  result, counts = out.stdout.splitlines()[-2:]
  assert result == str((np.arange(64).reshape(8, 8).sum(1) + 1).tolist())
  user, trials = map(int, counts.split())
  assert user == 1 and trials > 0

def test_kernel_whose_middle_buffer_was_folded_away():
  # (bools cast to int16 >= 2) is always False: tinygrad drops that buffer's PARAM (slot 1) and passes the
  # buffers of slots 0 and 2 only; the executor took its slots to be dense
  def f(dev):
    return ((Tensor([True, False, True], device=dev).cast("int16") >= 2).argmin().reshape(1) * Tensor([2, 6], device=dev)
            + Tensor([8, 9], device=dev)).numpy().tolist()
  assert f("TINYTPU") == f("CPU") == [8, 9]

def test_gather_whose_index_tinygrad_casts_to_int64():
  # x[idx].gather(...): tinygrad casts the data-dependent element index to int64 for INDEX (random program seed
  # 111 was refused with "no lanes for dtype i64"); an index is 32 bits in a lane
  rng = np.random.default_rng(0)
  a0 = rng.integers(-32702, 32725, (13, 61)).astype(np.int16)
  a1, a2 = rng.integers(-59, 49, (3, 4)).astype(np.int32), rng.integers(0, 2, (3, 1)).astype(np.int32)
  x = Tensor(a0, device="TINYTPU").min(axis=0)
  got = (x * x)[Tensor(a1, device="TINYTPU")].gather(1, Tensor(a2, device="TINYTPU")).numpy()
  m = a0.min(axis=0)
  want = np.take_along_axis((m * m)[a1], a2, axis=1)  # numpy's int16 product wraps like tinygrad's
  assert got.dtype == np.int16 and np.array_equal(got, want)
