"""The device's runtime surface: registration, allocator, Program.__call__, symbolic variables, DEBUG output."""
import os
import subprocess
import sys
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor, Variable, Device

def run_python(code: str, **env) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env})

def test_dev_env_works_without_import():
  # the installed tinytpu.pth hook registers the device; the script never imports tinytpu
  out = run_python("from tinygrad import Tensor, Device; print(Device.DEFAULT, (Tensor([1, 2]) + 1).tolist())", DEV="TINYTPU")
  assert out.returncode == 0, out.stderr
  assert out.stdout.split("\n")[0] == "TINYTPU [2, 3]"

def test_interpreter_start_imports_no_tinygrad():
  # the .pth hook is a top-level module: a submodule of tinytpu would run the package, and tinygrad, in every
  # Python process on the machine
  out = run_python("import sys; print(sorted(m for m in ('tinytpu', 'tinygrad', 'numpy') if m in sys.modules))")
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "[]"

def test_numbered_devices_are_independent():
  a = Tensor([1, 2, 3], device="TINYTPU:1")
  b = Tensor([10, 20, 30], device="TINYTPU:2")
  assert Device["TINYTPU:1"] is not Device["TINYTPU:2"]
  assert (a + 1).tolist() == [2, 3, 4] and (b * 2).tolist() == [20, 40, 60]
  assert (a.to("TINYTPU:2") + b).tolist() == [11, 22, 33]

def test_allocator_views_alias_their_base():
  alloc = Device["TINYTPU"].allocator
  base = alloc.alloc(32)
  alloc._copyin(base, memoryview(np.arange(8, dtype=np.int32).data).cast("B"))
  view = alloc._offset(base, 12, 8)  # elements 2..4
  out = np.zeros(3, dtype=np.int32)
  alloc._copyout(memoryview(out.data).cast("B"), view)
  assert out.tolist() == [2, 3, 4]
  alloc._copyin(view, memoryview(np.array([-1, -2, -3], dtype=np.int32).data).cast("B"))
  assert np.frombuffer(alloc._as_buffer(base), dtype=np.int32).tolist() == [0, 1, -1, -2, -3, 5, 6, 7]

def test_allocator_reuses_freed_memory():
  alloc = Device["TINYTPU"].allocator
  opaque = alloc.alloc(4096)
  alloc.free(opaque, 4096)
  assert alloc.alloc(4096) is opaque  # LRU cache hands the same device buffer back

def test_program_call_takes_tinygrads_arguments_and_returns_simulated_seconds(monkeypatch):
  from tinytpu.device import TinyTPUProgram
  calls, call = [], TinyTPUProgram.__call__
  def spy(self, *bufs, **kw):
    calls.append((self, bufs, kw))
    return call(self, *bufs, **kw)
  monkeypatch.setattr(TinyTPUProgram, "__call__", spy)
  x = Tensor(np.arange(16, dtype=np.int32), device="TINYTPU").realize()
  assert (x + 1).tolist() == list(range(1, 17))
  prg, bufs, kw = calls[-1]
  assert {"global_size", "local_size", "vals", "wait"} <= set(kw)
  tinytpu.reset_counters()
  seconds = call(prg, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=True, timeout=5)
  c = tinytpu.counters()
  assert c["kernels"] == 1 and c["launches"] >= 1 and seconds == pytest.approx(c["cycles"] * 1e-9) and seconds > 0
  assert call(prg, *bufs, vals=(), wait=False) is None

@pytest.mark.parametrize("n", [1, 5, 37])
def test_symbolic_variables(n):
  v = Variable("n", 1, 40).bind(n)
  a = Tensor(np.arange(40, dtype=np.int32), device="TINYTPU")
  got = (a[:v] * 2 + 1).sum().item()
  assert got == int((np.arange(n) * 2 + 1).sum())

def test_debug4_prints_each_launchs_tasm():
  out = run_python("import tinytpu; from tinygrad import Tensor; print((Tensor(list(range(16)), device='TINYTPU') * 5).tolist())", DEBUG="4")
  assert out.returncode == 0, out.stderr
  assert "launch 0" in out.stdout and "= MUL(" in out.stdout and "HALT" in out.stdout and str(list(range(0, 80, 5))) in out.stdout

def test_debug4_shows_float_tiles_as_floats_beside_their_bits():
  code = ("import numpy as np, tinytpu; from tinygrad import Tensor; "
          "print((Tensor(np.array([1.5, -2.0, 3.25], np.float32), device='TINYTPU') * 2.5 + Tensor([1, 2, 3], device='TINYTPU')).tolist())")
  out = run_python(code, DEBUG="4")
  assert out.returncode == 0, out.stderr
  fills = [l for l in out.stdout.splitlines() if l.startswith("VMEM[")]
  data = next(l for l in fills if l.split("=")[1].split()[:3] == [str(np.float32(x).view(np.int32)) for x in (1.5, -2.0, 3.25)])
  assert data.split("# f32 ")[1].split()[:3] == ["1.5", "-2", "3.25"]
  scale = next(l for l in fills if l.split("=")[1].split()[0] == str(np.float32(2.5).view(np.int32)))
  assert scale.split("# f32 ")[1].split() == ["2.5"] * 16
  ints = next(l for l in fills if l.split("=")[1].split()[:3] == ["1", "2", "3"])
  assert "#" not in ints  # int32 tiles: bits only
  # the listing still assembles: the floats are a comment
  launch = out.stdout.split("launch 0\n")[1].split("END\n")[0] + "END\n"
  assert tinytpu.run_tasm(launch).cycles > 0
