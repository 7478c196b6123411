"""The wider geometries (TensorCore#(8,8,32) and TensorCore#(16,16,32), extension modules _core8 and _core16):
kernels compile for their tiles and MXU and give tinygrad's CPU results, on the plain cores and with every
micro-architecture switch."""
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor, Device, Variable
from tinytpu import configs

# Devices of their own: a device's core is its configuration's module, fixed before its first kernel.
WIDE = {"TINYTPU:30": "8x8", "TINYTPU:31": "8x8-all", "TINYTPU:32": "8x8-half", "TINYTPU:34": "16x16",
        "TINYTPU:35": "16x16-all"}
REFERENCE = "TINYTPU:33"

@pytest.fixture(scope="module")
def wide():
  for dev, spec in {REFERENCE: "reference", **WIDE}.items(): Device[dev].config = configs.from_spec(spec)
  return list(WIDE)

def i8(r, shape): return r.integers(-128, 128, shape, dtype=np.int32)

WORKLOADS = {  # name: (function, inputs)
  "add_int": (lambda a, b: a + b, lambda r: (r.integers(-2**31, 2**31, (1000,), dtype=np.int32),) * 2),
  "matmul_int8_os": (lambda a, b: a @ b, lambda r: (i8(r, (24, 40)), i8(r, (40, 16)))),  # OS blocks of 8x8
  # a launch full of 16-row read-backs: the last one's deferred stacking and PSUM_READ need room before it ends
  "matmul_int8_os_full_launch": (lambda a, b: a @ b, lambda r: (i8(r, (16, 64)), i8(r, (64, 128)))),
  "matmul_int8_ws": (lambda a, b: a @ b, lambda r: (i8(r, (1, 40)), i8(r, (40, 16)))),   # one row: WS
  "matmul_f32": (lambda a, b: a @ b, lambda r: (r.standard_normal((9, 13), dtype=np.float32), r.standard_normal((13, 10), dtype=np.float32))),
  "sum_rows": (lambda a: a.sum(axis=1), lambda r: (r.integers(-1000, 1000, (9, 77), dtype=np.int32),)),
  "sum_cols_f32": (lambda a: a.sum(axis=0), lambda r: (r.standard_normal((33, 17), dtype=np.float32),)),
  "argmax": (lambda a: a.argmax(axis=1), lambda r: (r.integers(-50, 50, (7, 70), dtype=np.int32),)),
  "where_max": (lambda a, b: (a > b).where(a, b * 3).max(), lambda r: (r.integers(-99, 99, (150,), dtype=np.int32),) * 2),
  "softmax": (lambda a: a.softmax(), lambda r: (r.uniform(-5, 5, (200,)).astype(np.float32),)),
  "conv2d": (lambda x, w: x.conv2d(w, padding=1), lambda r: (i8(r, (1, 2, 10, 10)), i8(r, (3, 2, 3, 3)))),
  # int8-range chains whose MXU blocks need more vregs to read back than an empty launch has: the VPU takes them
  # (the random programs' seed 5265: once "MXU_DOT needs more vregs than an empty launch" on every 16x16 core)
  "conv2d_1x3_min": (lambda x, w, b: x.cast("int32").reshape(1, 1, 31, 11).conv2d(w, b, padding=1).reshape((9, 121)).min(axis=1),
                     lambda r: (r.integers(0, 9, (11, 1, 31)).astype(np.uint8), r.integers(-6, 9, (3, 1, 1, 3), dtype=np.int32),
                                r.integers(-5, 9, (3,), dtype=np.int32))),
  "gather": (lambda a, i: a[i], lambda r: (r.integers(-9, 9, (50,), dtype=np.int32), r.integers(0, 50, (37,), dtype=np.int32))),
  "transpose_contiguous": (lambda a: a.T.contiguous() * 2, lambda r: (r.integers(-9, 9, (19, 23), dtype=np.int32),)),
}

@pytest.mark.parametrize("name", WORKLOADS)
def test_wide_cores_give_cpu_results(wide, name):
  fn, make = WORKLOADS[name]
  arrays = make(np.random.default_rng(len(name)))
  want = fn(*[Tensor(a, device="CPU") for a in arrays]).numpy()
  for dev in wide:
    got = fn(*[Tensor(a, device=dev) for a in arrays]).numpy()
    assert Device[dev].core.TensorCoreConfig.ROWS == int(WIDE[dev].split("x")[0])
    if want.dtype == np.float32: np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=dev)
    else: np.testing.assert_array_equal(got, want, err_msg=dev)

def test_8x8_tiles_take_a_quarter_of_the_launches_and_fewer_cycles(wide):
  """An elementwise op over 2^14 int32: 16-lane tiles need 4x the tiles of 64-lane ones."""
  a = np.arange(2**14, dtype=np.int32)
  runs = {}
  for dev in (REFERENCE, wide[0]):
    tinytpu.reset_counters()
    np.testing.assert_array_equal((Tensor(a, device=dev) * 3 + 1).numpy(), a * 3 + 1)
    runs[dev] = tinytpu.counters(dev)
  assert runs[REFERENCE]["launches"] >= 3 * runs[wide[0]]["launches"] > 0
  assert runs[wide[0]]["cycles"] < runs[REFERENCE]["cycles"]

@pytest.mark.parametrize("rows", [8, 16])
def test_wide_mxu_takes_the_int8_matmul(wide, rows):
  """An int8-range matmul runs on the rows x rows array: MXU dispatches of rows-term slices, no VPU multiply."""
  import subprocess, sys, os
  code = ("import numpy as np, tinytpu; from tinygrad import Tensor\n"
          "r = np.random.default_rng(0); a, b = r.integers(-128, 128, (16, 32)), r.integers(-128, 128, (32, 16))\n"
          "a, b = a.astype(np.int32), b.astype(np.int32)\n"
          "print(((Tensor(a, device='TINYTPU') @ Tensor(b, device='TINYTPU')).numpy() == a @ b).all())")
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={**os.environ, "DEBUG": "4", configs.ENV: f"{rows}x{rows}"})
  assert p.returncode == 0, p.stderr
  assert p.stdout.rstrip().endswith("True") and "= MUL(" not in p.stdout
  amem = [line for line in p.stdout.splitlines() if line.startswith("AMEM[")]
  assert amem and all(len(line.split("=")[1].split()) == rows for line in amem)  # an activation word is rows int8
  assert "MXU WMEM[" in p.stdout or "MXU_OS WMEM[" in p.stdout

def test_symbolic_sizes_on_8x8(wide):
  a = Tensor(np.arange(70, dtype=np.int32), device=wide[0])
  for n in (5, 37, 70):
    assert (a[:Variable("n", 1, 70).bind(n)] * 2 + 1).sum().item() == int((np.arange(n) * 2 + 1).sum())

def test_a_trace_belongs_to_the_core_it_was_started_for(wide):
  from tinytpu import trace
  log = trace.new_log(core=tinytpu._core)
  try:
    trace._active = log
    with pytest.raises(RuntimeError, match="8-row core"): (Tensor([1, 2], device=wide[0]) + 1).numpy()
  finally:
    trace._active = None

def test_a_device_that_made_kernels_keeps_its_geometry():
  """tinygrad keeps the kernels a device made: a device cannot move to another tile geometry after its first one
  (a ValueError naming both), though it can change to another configuration of the same geometry."""
  dev = "TINYTPU:37"
  Device[dev].config = configs.from_spec("reference")
  assert (Tensor([1, 2, 3], device=dev) + 1).numpy().tolist() == [2, 3, 4]
  with pytest.raises(ValueError, match=r"TINYTPU:37: its kernels were made for the 4-row core.* for 8 rows"):
    Device[dev].config = configs.from_spec("8x8")
  Device[dev].config = configs.from_spec("all")
  assert (Tensor([1, 2, 3], device=dev) + 1).numpy().tolist() == [2, 3, 4]

def test_a_batch_whose_mxu_blocks_read_themselves_runs_on_the_vpu(wide):
  """The random programs' seed 14045: this matmul's chain has too few products between its MXU blocks for their
  partial sums' positions. The MXU pass gave it one anyway: a node that read itself, on which the schedule's walk
  grew until std::bad_alloc on every core, and on a core of depth 16 (half, 8x8-half) a read past the positions
  that crashed the process. Such a chain now stays on the VPU (mxu_dot.cc placement()); the walk would stop at a
  node reading itself with Unsupported, which choose_engine also sends to the VPU."""
  r = np.random.default_rng(14045)
  a, b = r.integers(0, 101, (257,)).astype(np.uint32), r.integers(0, 10, (257, 7)).astype(np.uint32)
  Device["TINYTPU:36"].config = configs.from_spec("half")
  for dev in (REFERENCE, "TINYTPU:31", "TINYTPU:32", "TINYTPU:35", "TINYTPU:36"):  # + 8x8-all, 8x8-half, 16x16-all, half
    out = (Tensor(a, device=dev).relu() @ Tensor(b, device=dev)).sum(axis=0).numpy()
    assert int(out) == int((a.astype(np.uint64) @ b).sum()), dev
