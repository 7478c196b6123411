"""Compile once, run many: a kernel is compiled into a plan on its first call and later calls only run it.
The choices that depend on the data (MXU or VPU by the operands' int8 range, one load for operands with
equal values) are made per call between compiled plans, so every call computes what a fresh compile would,
in the same cycles."""
import numpy as np
import tinytpu
from tinygrad import Tensor

def matmul_call(a: np.ndarray, b: np.ndarray, ta: Tensor, tb: Tensor) -> tuple[np.ndarray, int]:
  ta.assign(Tensor(a, device="TINYTPU")).realize()
  tb.assign(Tensor(b, device="TINYTPU")).realize()
  tinytpu.reset_counters()
  out = (ta @ tb).numpy()
  return out, tinytpu.counters()["cycles"]

def test_one_kernel_many_data_same_results_and_cycles_as_first_seen():
  rng = np.random.default_rng(1)
  data = {
    "int8 range": (rng.integers(-128, 128, (8, 12)), rng.integers(-128, 128, (12, 8))),
    "out of int8 range": (rng.integers(-128, 128, (8, 12)) * 300, rng.integers(-128, 128, (12, 8))),
    "ones (equal operand tiles)": (np.ones((8, 12)), np.ones((12, 8))),
  }
  ta, tb = Tensor.zeros(8, 12, dtype="int32", device="TINYTPU").contiguous().realize(), \
           Tensor.zeros(12, 8, dtype="int32", device="TINYTPU").contiguous().realize()
  first_cycles = {}
  for name in [*data, *data, "int8 range"]:
    a, b = (x.astype(np.int32) for x in data[name])
    out, cycles = matmul_call(a, b, ta, tb)
    np.testing.assert_array_equal(out, a @ b, err_msg=name)
    assert first_cycles.setdefault(name, cycles) == cycles, name
  # the MXU runs the int8 data, the VPU the wide data (more cycles); equal tiles load once (fewer)
  assert first_cycles["out of int8 range"] > first_cycles["int8 range"] > first_cycles["ones (equal operand tiles)"]

LOG_SCRIPT = """
import numpy as np
from tinygrad import Tensor
a = Tensor(np.arange(64, dtype=np.int32).reshape(8, 8) % 7, device="TINYTPU")
(a @ a).realize()
Tensor(np.linspace(-1, 1, 32, dtype=np.float32), device="TINYTPU").softmax().realize()
"""

def _stderr_with_log(level: str | None) -> str:
  import os, subprocess, sys
  env = {k: v for k, v in os.environ.items() if k != "TINYTPU_LOG"}
  if level is not None: env["TINYTPU_LOG"] = level
  return subprocess.run([sys.executable, "-c", LOG_SCRIPT], env=env, capture_output=True, text=True, check=True).stderr

def test_decision_log_says_what_each_kernel_became_and_is_off_by_default():
  assert "[tinytpu" not in _stderr_with_log(None)
  info = _stderr_with_log("info")
  kernels = [line for line in info.splitlines() if line.startswith("[tinytpu info] kernel ")]
  assert len(kernels) >= 3, info  # the matmul and the softmax's kernels, one line each
  assert all("launches" in line and "compiled in" in line for line in kernels)
  assert "int8 dot-product chains" in info  # the matmul went to the MXU, and says how
  debug = _stderr_with_log("debug")
  assert "chain 0: MXU" in debug

LAYOUT_SCRIPT = """
import numpy as np
from tinygrad import Tensor
r = np.random.default_rng(3)
a, b = (Tensor(r.uniform(-1, 1, s).astype(np.float32), device="TINYTPU") for s in ((24, 40), (40, 36)))
fused, first = ((a * 2 - 1) @ b).numpy(), ((a * 2 - 1).realize() @ b).numpy()
print((fused.view(np.uint32) == first.view(np.uint32)).all())
"""

def test_a_float_reductions_first_chunk_is_packed_and_lowered_once_when_its_layout_is_chosen():
  # compile() tries both chunk layouts on the first chunk; the chosen one's launches are kept for its batch
  import os, subprocess, sys
  env = {**os.environ, "TINYTPU_LOG": "debug"}
  out = subprocess.run([sys.executable, "-c", LAYOUT_SCRIPT], env=env, capture_output=True, text=True, check=True)
  assert "chunks of 16 consecutive points" in out.stderr  # the layout was chosen by compiling both
  assert "chunk 0: packed and lowered once" in out.stderr
  assert out.stdout.strip() == "True"  # bit for bit the unfused matmul's results

DEEP_SCRIPT = """
import hashlib, numpy as np, tinytpu
from tinygrad import Tensor
r = np.random.default_rng(0)
a, b, c = (Tensor(r.standard_normal((16, 32, 20, 20)).astype(np.float32), device="TINYTPU") for _ in range(3))
m = Tensor(r.standard_normal((1, 32, 1, 1)).astype(np.float32), device="TINYTPU")
out = ((a - m) * b * c).sum(axis=(0, 2, 3)).numpy()
print(hashlib.sha256(out.tobytes()).hexdigest(), tinytpu.counters()["program_bytes"])
"""

def test_a_deep_cores_launches_keep_their_programs_resident():
  # A 256-deep core's launches of a batch norm-like reduction fill program memory (255 instructions) before VMEM
  # and cycle through more program than its ring holds: lower() emits them with 64 VMEM tiles instead, whose
  # programs stay, and the bytes are every core's
  import os, subprocess, sys
  def run(config):
    env = {**os.environ, "TINYTPU_LOG": "info", "TINYTPU_CONFIG": config}
    out = subprocess.run([sys.executable, "-c", DEEP_SCRIPT], env=env, capture_output=True, text=True, check=True)
    digest, program_bytes = out.stdout.split()
    return digest, int(program_bytes), out.stderr
  deep, shallow, reference = run("16x16-all,depth=256"), run("16x16-all,depth=64"), run("16x16-all")
  assert "launches of up to 64 VMEM tiles" in deep[2] and "VMEM tiles (the first" not in shallow[2]
  assert deep[0] == shallow[0] == reference[0]
  assert deep[1] <= shallow[1]  # no program sent again

def test_a_few_chance_twins_among_the_mxu_operands_make_no_plan_of_their_own():
  """Loading an operand with an earlier one's values once is a plan of its own (a compile): chosen where at least 1
  operand in 16 has a twin (data_plan.h), not for a few chance ones, as a large int8 layer's activations have (a
  compile per layer and per call, never reused). A row repeated once: the same cycles as data without twins."""
  rng = np.random.default_rng(2)
  a, b = rng.integers(-128, 128, (64, 64)).astype(np.int32), rng.integers(-128, 128, (64, 64)).astype(np.int32)
  twin = a.copy()
  twin[1] = twin[0]
  ta, tb = Tensor.zeros(64, 64, dtype="int32", device="TINYTPU").contiguous().realize(), \
           Tensor.zeros(64, 64, dtype="int32", device="TINYTPU").contiguous().realize()
  cycles = []
  for x in (a, twin):
    out, c = matmul_call(x, b, ta, tb)
    np.testing.assert_array_equal(out, x @ b)
    cycles.append(c)
  assert cycles[0] == cycles[1]
