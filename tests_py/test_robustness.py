"""What a new user met on sizes and programs nobody had picked: each case once killed the process, hung, or
ignored Ctrl-C. The crash cases run in a subprocess, so a regression is a failed test, not a dead runner."""
import os
import pty
import signal
import subprocess
import sys
import tempfile
import threading
import time
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

# Ctrl-C as a terminal sends it: SIGINT from outside the process, once the run has provably started (the child prints
# "running" from a callback the model makes from inside the run). The child installs Python's SIGINT handler itself: a
# process started from a background job of a non-interactive shell inherits SIGINT ignored, and Python then leaves it
# ignored, so the signal was lost and the run went on to its end (both tests failed so, "not interrupted").
INTERRUPT_WITHIN_S = 5.0  # from the signal to the child's "interrupted" line; the model notices it in milliseconds

def interrupt_once_running(code: str, **env) -> tuple[list[str], float]:
  """Runs `code` in a child (with `env` added to its environment), sends it SIGINT when it prints "running", and
  returns its later stdout lines and the seconds from the signal to the first of them."""
  with tempfile.TemporaryFile("w+") as err:  # stdout is read line by line (communicate() would drop what readline buffered)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True,
                         env={**os.environ, **env})
    guard = threading.Timer(GUARD_S, p.kill)
    guard.start()
    try:
      first = p.stdout.readline()
      if first == "running\n":
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        answer = p.stdout.readline()
        latency = time.monotonic() - sent
        rest = p.stdout.read()
      p.wait()
    finally:
      guard.cancel()
      if p.poll() is None: p.kill()
    err.seek(0)
    assert first == "running\n" and p.returncode == 0, first + err.read()[-2000:]
  return [answer.rstrip("\n")] + rest.splitlines(), latency

CHILD_CATCHES_CTRL_C = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
"""

CTRL_C = CHILD_CATCHES_CTRL_C + """
import numpy as np, tinytpu
from tinygrad import Tensor, Device
from tinytpu import device
rng = np.random.default_rng(0)
# 1024^3 runs for about 20 s (19.5 s on an idle machine): the signal comes well inside it
a, b = [Tensor(rng.standard_normal((1024, 1024)).astype(np.float32), device="TINYTPU").realize() for _ in range(2)]
progress = device._Progress.__call__
def running(self, p):  # called every 50 ms of host time from inside the running kernel
  if not running.said:
    running.said = True
    print("running", flush=True)
  return progress(self, p)
running.said = False
device._Progress.__call__ = running
c = a @ b
try:
  c.realize()
  Device["TINYTPU"].synchronize()  # a chip's core runs it on a thread of its own: Ctrl-C comes while Python waits
  print("not interrupted")
except KeyboardInterrupt:
  print("interrupted", flush=True)
device._Progress.__call__ = progress
# tinygrad took c's buffer as c before the kernel ran: its part-written data is refused, read or loaded by a kernel
for read in (lambda: c.numpy(), lambda: (c + 1).numpy()):
  try: print("read", read().sum())
  except RuntimeError as e: print("refused" if "stopped before its end (KeyboardInterrupt)" in str(e) else e)
x = Tensor(np.arange(10, dtype=np.int32), device="TINYTPU")
print((x * 3 + 1).numpy().tolist())
print(np.allclose((a[:8] @ b[:, :8]).numpy(), a.numpy()[:8] @ b.numpy()[:, :8], rtol=1e-5, atol=1e-4))
"""

@pytest.mark.parametrize("config", ["reference", "chip4"])
def test_ctrl_c_stops_a_running_kernel_and_the_device_stays_usable(config):
  lines, latency = interrupt_once_running(CTRL_C, TINYTPU_CONFIG=config)
  assert lines == ["interrupted", "refused", "refused", str([3 * i + 1 for i in range(10)]), "True"], lines
  assert latency < INTERRUPT_WITHIN_S, latency

def test_a_stopped_kernels_output_is_refused_until_written_again():
  from tinygrad import Device
  from tinytpu import device
  alloc = Device["TINYTPU"].allocator
  buf, kept = alloc.alloc(64), list(device._incomplete)  # kept: earlier tests' kernels that stopped on an error
  device._incomplete.clear()
  try:
    device._incomplete.append((*device._span(buf.view(16, 16)), "made up"))
    with pytest.raises(RuntimeError, match="this data is incomplete: made up"): alloc._copyout(memoryview(bytearray(64)), buf)
    with pytest.raises(RuntimeError, match="incomplete"): alloc._as_buffer(buf.view(28, 8))
    alloc._copyout(memoryview(bytearray(16)), buf.view(0, 16))  # bytes beside it are whole
    alloc._copyin(buf.view(16, 8), memoryview(bytearray(8)))  # written: half of it is whole again
    alloc._copyout(memoryview(bytearray(24)), buf.view(0, 24))
    with pytest.raises(RuntimeError, match="incomplete"): alloc._copyout(memoryview(bytearray(8)), buf.view(24, 8))
    alloc.free(buf, 64)
    again = alloc.alloc(64)  # the allocator's cache hands it to a new tensor: whole for it
    assert again is buf and not device._incomplete
  finally:
    device._incomplete[:] = kept

def test_which_buffers_a_kernel_loads_and_stores():
  seen = []
  from tinytpu import device
  init = device.TinyTPUProgram.__init__
  def keep(self, dev, obj):
    init(self, dev, obj)
    seen.append((self.loads, self.stores))
  device.TinyTPUProgram.__init__ = keep
  try:
    a = Tensor(np.arange(16, dtype=np.float32).reshape(4, 4), device="TINYTPU")
    (a @ Tensor.ones(4, 4, device="TINYTPU").contiguous() + a).realize()
    y = Tensor.zeros(4, device="TINYTPU").contiguous().realize()
    y.assign(y + 1).realize()
  finally:
    device.TinyTPUProgram.__init__ = init
  # the matmul's output is place 0 and its inputs 1, 2; the assign reads and writes its one buffer
  assert ({1, 2}, {0}) in seen and ({0}, {0}) in seen, seen

def test_ctrl_c_stops_a_long_tasm_run():
  # four nested loops of 255 (8.5e9 cycles, half a minute) under a cycle cap of 2^40: only Ctrl-C ends it
  code = CHILD_CATCHES_CTRL_C + """
import os, tinytpu
def running():  # the model calls tinytpu.model.poll every 65,536 cycles of a run
  if not running.said:
    running.said = True
    print("running", flush=True)
running.said = False
tinytpu.model.poll = running
try:
  tinytpu.run_tasm("LOOP_BEGIN count=255\\n" * 4 + "LOOP_END\\n" * 4 + "HALT\\nEND\\n", max_cycles=2**40)
  print("not interrupted")
except KeyboardInterrupt:
  print("interrupted", flush=True)
print(tinytpu.run_tasm(open(os.path.join({kernels!r}, "seed", "add_16.tasm")).read()).cycles)
"""
  kernels = os.path.join(os.path.dirname(__file__), "..", "kernels")
  lines, latency = interrupt_once_running(code.format(kernels=kernels))
  add_16 = tinytpu.run_tasm(open(os.path.join(kernels, "seed", "add_16.tasm")).read()).cycles
  assert lines == ["interrupted", str(add_16)] and latency < INTERRUPT_WITHIN_S, (lines, latency)

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
