# The MXU variants from Python (docs/model.md "The MXU variants"): a float32 MXU's dispatch through run_tasm gives
# numpy's float32 sum in the same order, on the reference sequence and the pipelined one, and a core without a
# float MXU refuses its records with a ValueError naming them.
import struct
import numpy as np
import pytest
import tinytpu

def bits(x: float) -> int: return struct.unpack("i", struct.pack("f", x))[0]

def float_program(w: np.ndarray, a: np.ndarray, group: int) -> str:
  t = "WMEM32[0] = " + " ".join(str(bits(x)) for x in w.flat) + "\n"
  t += "".join(f"AMEM32[{k}] = " + " ".join(str(bits(x)) for x in a[k]) + "\n" for k in range(4))
  t += f"MXU_OS_FLOAT WMEM[0], AMEM[0], k=4, group={group}\nWAIT_MXU\n"
  t += "".join(f"LOAD_MXU_MATRIX_ROW v1, row={r}\nSTORE VMEM[{r}], v1\n" for r in range(4))
  return t + "HALT\n" + "".join(f"OUTPUT_VMEM VMEM[{r}]\n" for r in range(4)) + "END\n"

@pytest.mark.parametrize("pipelined", [0, 1])
@pytest.mark.parametrize("group", [1, 4])
def test_a_float32_mxu_sums_in_order_as_numpy_float32(pipelined, group):
  rng = np.random.default_rng(group + 2 * pipelined)
  w, a = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
  cfg = tinytpu.Config()
  cfg.mxu_dtype, cfg.mxu_pipelined = 2, pipelined
  got = np.array(tinytpu.run_tasm(float_program(w, a, group), config=cfg).vmem_results, dtype=np.int32)[:, :4].view(np.float32)
  products = [(a[k][:, None] * w[k][None, :]).astype(np.float32) for k in range(4)]  # out[r][c] over k: A_k[r] W[k][c]
  want = np.zeros((4, 4), np.float32)
  for start in range(0, 4, group):  # each run summed from its first product, then added to the accumulator
    run = products[start]
    for p in products[start + 1:start + group]: run = (run + p).astype(np.float32)
    want = (want + run).astype(np.float32)
  assert got.tobytes() == want.tobytes()

def test_a_core_without_a_float_mxu_refuses_its_records_and_dispatches():
  program = float_program(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), 4)
  with pytest.raises(ValueError, match=r"32-bit MXU operand record on a core without a float MXU \(mxu_dtype 0\)"):
    tinytpu.run_tasm(program)
  with pytest.raises(ValueError, match="DISPATCH_MXU_OS_FLOAT needs a float MXU"):
    tinytpu.run_tasm(program.replace("WMEM32", "WMEM").replace("AMEM32", "AMEM").replace(str(bits(1.0)), "1"))

FLOAT_MXU_CORES = {f"TINYTPU:{80 + i}": name for i, name in enumerate(("f32", "bf16", "all-pipe-f32", "all-pipe-bf16", "pipe"))}
FLOAT32_MXU_CORES = {"TINYTPU:80": "f32", "TINYTPU:82": "all-pipe-f32", "TINYTPU:85": "8x8-f32", "TINYTPU:78": "16x16-all-pipe-f32"}

@pytest.mark.parametrize("shape", [(128, 128, 128), (37, 29, 53), (64, 32, 64), (32, 200, 48)])
def test_a_float32_matmul_on_every_mxu_variant_gives_the_reference_cores_bits(shape):
  """A configuration changes cycles, never results: the same bytes as the reference core's (issue: every float-MXU
  variant), zeros of both signs included, on matmuls whose K tinygrad unrolls by 4 (sums from +0.0, in K-blocks each
  seeded with the one before's), wholly (no initial value: from -0.0) and not at all. A float32 MXU does the work."""
  from tinygrad import Device, Tensor
  reference = "TINYTPU:79"
  cores = {**FLOAT_MXU_CORES, **FLOAT32_MXU_CORES}
  for dev, name in {reference: "reference", **cores}.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  m, k, n = shape
  rng = np.random.default_rng(m)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  a[0, :], b[:, 1] = -0.0, 0.0
  out = {}
  for dev in [reference, *cores]:
    tinytpu.reset_counters(dev)
    out[dev] = (Tensor(a, device=dev) @ Tensor(b, device=dev)).numpy().tobytes()
  assert all(out[dev] == out[reference] for dev in cores), [cores[d] for d in cores if out[d] != out[reference]]
  if shape != (37, 29, 53):  # (its 37 x 53 outputs fill no block of either layout)
    assert all(tinytpu.counters(dev)["mxu_busy"] > 0 for dev in FLOAT32_MXU_CORES), [tinytpu.counters(d) for d in FLOAT32_MXU_CORES]

def test_a_float32_mxu_propagates_nans_and_infinities_as_the_vpu():
  """NaN and infinite operands, and products that overflow, give the reference core's bits: the PE multiplies the
  row operand by the column operand in tinygrad's order (the first NaN operand is the one propagated) and adds in
  its order."""
  from tinygrad import Device, Tensor
  reference = "TINYTPU:79"
  for dev, name in {reference: "reference", **FLOAT32_MXU_CORES}.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  rng = np.random.default_rng(3)
  a, b = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 64)).astype(np.float32)
  a[1, 2], a[5, :] = np.nan, 3e38
  b[2, 7], b[9, 3], b[:, 11] = np.float32(-np.nan), np.inf, 3e38
  a.view(np.uint32)[7, 9] = 0x7FC0ABCD  # a NaN payload meeting b's NaN in one product
  b.view(np.uint32)[9, 20] = 0xFFC01234
  out = {}
  for dev in [reference, *FLOAT32_MXU_CORES]:
    tinytpu.reset_counters(dev)
    out[dev] = (Tensor(a, device=dev) @ Tensor(b, device=dev)).numpy().tobytes()
  assert all(out[dev] == out[reference] for dev in FLOAT32_MXU_CORES), [n for d, n in FLOAT32_MXU_CORES.items() if out[d] != out[reference]]
  assert all(tinytpu.counters(dev)["mxu_busy"] > 0 for dev in FLOAT32_MXU_CORES)

def test_an_int8_matmul_on_a_pipelined_mxu_reads_its_blocks_from_the_bank():
  """On all-pipe each output block is read back whole from the output bank while the next block streams: numpy's
  result, in fewer cycles than on all (the same core but for the MXU), whose blocks wait for the MXU to drain."""
  from tinygrad import Device, Tensor, dtypes
  devs = {"TINYTPU:86": "all", "TINYTPU:87": "all-pipe"}
  for dev, name in devs.items(): Device[dev].config = tinytpu._core.config_from_spec(name)
  rng = np.random.default_rng(5)
  a, b = rng.integers(-128, 128, (48, 64), dtype=np.int8), rng.integers(-128, 128, (64, 40), dtype=np.int8)
  cycles = {}
  for dev in devs:
    tinytpu.reset_counters(dev)
    out = (Tensor(a, device=dev).cast(dtypes.int32) @ Tensor(b, device=dev).cast(dtypes.int32)).relu().numpy()
    np.testing.assert_array_equal(out, np.maximum(a.astype(np.int64) @ b.astype(np.int64), 0))
    cycles[devs[dev]] = tinytpu.counters(dev)["cycles"]
  assert cycles["all-pipe"] < cycles["all"], cycles

@pytest.mark.parametrize("shape", [(64, 64, 64), (32, 160, 64)])
def test_an_int8_matmul_on_a_pipelined_16x16_mxu_across_launches(shape):
  """K longer than ActivationSRAM holds: each launch adds its K-slice to the partial sums the launch before
  output, and a block cut off from one launch is dispatched again in the next and read from the bank there
  (the compiler once refused this as needing more AMEM rows than an empty launch has)."""
  from tinygrad import Device, Tensor, dtypes
  devs = {"TINYTPU:88": "16x16-all", "TINYTPU:89": "16x16-all-pipe"}
  for dev, name in devs.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  m, k, n = shape
  rng = np.random.default_rng(k)
  a, b = rng.integers(-128, 128, (m, k), dtype=np.int8), rng.integers(-128, 128, (k, n), dtype=np.int8)
  cycles = {}
  for dev in devs:
    tinytpu.reset_counters(dev)
    out = (Tensor(a, device=dev).cast(dtypes.int32) @ Tensor(b, device=dev).cast(dtypes.int32)).numpy()
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    cycles[devs[dev]] = tinytpu.counters(dev)["cycles"]
  assert cycles["16x16-all-pipe"] < cycles["16x16-all"], cycles

def test_a_pipelined_16x16_launch_holds_a_block_per_weight_pair_and_reads_each_from_the_bank(capsys):
  """docs/quant.md "On a pipelined 16x16 MXU": WeightSRAM's 32 tiles are 16 blocks of two dispatches a launch; each
  block is read whole from the output bank (the last behind a dispatch of one term), none a row at a time."""
  from tinygrad import Device, Tensor, dtypes
  from tinygrad.helpers import Context
  Device["TINYTPU:90"].config = tinytpu.configs.from_spec("16x16-all-pipe")
  rng = np.random.default_rng(1)
  a, b = rng.integers(-128, 128, (64, 64), dtype=np.int8), rng.integers(-128, 128, (64, 256), dtype=np.int8)
  capsys.readouterr()
  with Context(DEBUG=4):
    out = (Tensor(a, device="TINYTPU:90").cast(dtypes.int32) @ Tensor(b, device="TINYTPU:90").cast(dtypes.int32)).numpy()
  np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
  launches = [t.splitlines()[1:] for t in capsys.readouterr().out.split("# ")[1:] if " launch " in t.splitlines()[0]]
  assert len(launches) == 8  # 4 row blocks of 16 output tiles, K = 64 in two K-slices of 32
  for program in launches:
    dispatches = [i for i in program if i.startswith("MXU_OS")]
    assert len(dispatches) == 33 and dispatches[-1].endswith("k=1"), dispatches
    assert sum(i.startswith("LOAD_MXU_BANK") for i in program) == 16
    assert not any(i.startswith("LOAD_MXU_MATRIX_ROW") for i in program)

def test_a_value_spilled_early_in_a_launch_is_not_read_as_an_earlier_launchs():
  """On a pipelined core a computed value may be spilled into an output slot before the launch ends: it is in
  scratch only once the launch has run, so a gather whose indices it is waits for a later launch rather than
  reading stale scratch (found by the random programs: seed 7133 on `pipe`)."""
  from tinygrad import Device, Tensor, dtypes
  Device["TINYTPU:91"].config = tinytpu.configs.from_spec("pipe")
  rng = np.random.default_rng(7133)
  a0 = rng.integers(-32436, 31598, (16, 3, 1)).astype(np.int16)
  a1, a2, a3 = rng.integers(-63, 90, (1, 5)), rng.integers(0, 15, (5, 1, 2)), rng.integers(-9, 5, (5, 1, 2))
  def run(dev):
    t = [Tensor(x.astype(np.int32) if x.dtype != np.int16 else x, device=dev) for x in (a0, a1, a2, a3)]
    return (t[0].cast(dtypes.int8).cast(dtypes.int32) @ t[1]).gather(0, t[2]).cat(t[3], dim=1).numpy()
  np.testing.assert_array_equal(run("TINYTPU:91"), run("CPU"))

def test_a_bfloat16_matmul_is_the_float32_matmul_of_its_operands_within_the_documented_bound_of_python():
  """tinygrad emulates bfloat16 on TINYTPU, which has no bfloat16 lanes: inside a kernel a CAST to bfloat16 only
  clamps, so a matmul of bfloat16 casts whose result is cast back is the float32 matmul of the operands, on every
  core (a bfloat16 MXU's PEs are not used: docs/model.md "A float MXU"). PYTHON rounds the operands, each product
  and the result to bfloat16 (2^-9 relative each): the two differ by at most 4 * 2^-9 of sum |a||b| per element."""
  from tinygrad import Device, Tensor, dtypes
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
  def bf16_matmul(dev):
    return (Tensor(a, device=dev).cast(dtypes.bfloat16) @ Tensor(b, device=dev).cast(dtypes.bfloat16)).cast(dtypes.float32).numpy()
  python = bf16_matmul("PYTHON")
  bound = 4 * 2.0 ** -9 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
  for dev, name in {"TINYTPU:79": "reference", "TINYTPU:81": "bf16", "TINYTPU:83": "all-pipe-bf16"}.items():
    Device[dev].config = tinytpu.configs.from_spec(name)
    got = bf16_matmul(dev)
    assert got.tobytes() == (Tensor(a, device=dev) @ Tensor(b, device=dev)).numpy().tobytes(), name
    assert np.all(np.abs(got.astype(np.float64) - python) <= bound), (name, np.max(np.abs(got - python) / bound))

BFLOAT16_MXU_CORES = {"TINYTPU:81": "bf16", "TINYTPU:83": "all-pipe-bf16", "TINYTPU:120": "16x16-all-pipe-bf16"}

def bfloat16_matmul(dev: str, a: np.ndarray, b: np.ndarray, dtype=None) -> bytes:
  """The bytes of a @ b of tensors stored as `dtype` (bfloat16: tinygrad rounds on the way in), as float32."""
  from tinygrad import Tensor, dtypes
  dtype = dtype or dtypes.bfloat16
  ta, tb = (Tensor(x, device=dev).cast(dtype).realize() for x in (a, b))
  return (ta @ tb).realize().cast(dtypes.float32).numpy().tobytes()

@pytest.mark.parametrize("shape", [(128, 128, 128), (40, 72, 56)])
def test_a_matmul_of_bfloat16_tensors_runs_on_a_bfloat16_mxu_with_the_reference_cores_bits(shape):
  """tinygrad stores bfloat16 tensors in 2 bytes and decodes each loaded value to float32, so their matmul is a float32
  sum of exact products of bfloat16s, which a bfloat16 MXU's PEs compute bit for bit (docs/model.md "A float MXU"):
  the same bytes as the reference core's, NaNs, infinities, overflowing products, subnormals and zeros of both signs
  included, and the MXU does the work. A float32 matmul's factors are no bfloat16s: a bfloat16 MXU leaves it to the
  VPU, with the same bytes."""
  from tinygrad import Device, dtypes
  reference, f32 = "TINYTPU:79", "TINYTPU:80"
  cores = {f32: "f32", **BFLOAT16_MXU_CORES}
  for dev, name in {reference: "reference", **cores}.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  m, k, n = shape
  rng = np.random.default_rng(k)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  a[0, :], b[:, 1], a[2, 3], a[5, :7], b[9, 3], b[:, 11] = -0.0, 0.0, np.nan, 3e38, -np.inf, 2e38
  a[6, :], b[4, 4] = 1e-39, 3e-39  # bfloat16 subnormals (decoded as zero by tinygrad's emulation, on every core)
  out = {}
  for dev in [reference, *cores]:
    tinytpu.reset_counters(dev)
    out[dev] = bfloat16_matmul(dev, a, b)
  assert all(out[dev] == out[reference] for dev in cores), [cores[d] for d in cores if out[d] != out[reference]]
  if shape == (128, 128, 128):
    assert all(tinytpu.counters(dev)["mxu_busy"] > 0 for dev in cores), {cores[d]: tinytpu.counters(d) for d in cores}
    for dev in BFLOAT16_MXU_CORES:  # float32 tensors: the VPU's work, the same bytes
      tinytpu.reset_counters(dev)
      assert bfloat16_matmul(dev, a, b, dtypes.float32) == bfloat16_matmul(reference, a, b, dtypes.float32)
      assert tinytpu.counters(dev)["mxu_busy"] == 0, BFLOAT16_MXU_CORES[dev]

def test_a_matmul_of_bfloat16_tensors_is_within_the_documented_bound_of_python():
  """PYTHON rounds each product and the result to bfloat16 where the bfloat16 MXU keeps exact products (docs/model.md
  "A float MXU"): at most 4 * 2^-9 of sum |a||b| apart per element."""
  from tinygrad import Device
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
  python = np.frombuffer(bfloat16_matmul("PYTHON", a, b), np.float32).reshape(64, 64).astype(np.float64)
  bound = 4 * 2.0 ** -9 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
  for dev, name in BFLOAT16_MXU_CORES.items():
    Device[dev].config = tinytpu.configs.from_spec(name)
    got = np.frombuffer(bfloat16_matmul(dev, a, b), np.float32).reshape(64, 64)
    assert np.all(np.abs(got - python) <= bound), (name, np.max(np.abs(got - python) / bound))

def conv_and_gradients(devs: dict[str, str], seed: int, relu: bool, dtype=None) -> dict[str, list[bytes]]:
  """Per device (its configuration named), the bytes of a 16x4x12x12 by 32x4x5x5 convolution of x (or of relu(x))
  and of its gradients, of x and w (of w alone with the ReLU), for a seeded upstream gradient, of tensors stored as
  `dtype` (float32 by default; each result's bytes as float32); counters reset first."""
  from tinygrad import Device, Tensor, dtypes
  dtype = dtype or dtypes.float32
  for dev, name in devs.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  rng = np.random.default_rng(seed)
  x, w = rng.standard_normal((16, 4, 12, 12)).astype(np.float32), rng.standard_normal((32, 4, 5, 5)).astype(np.float32)
  upstream = rng.standard_normal((16, 32, 8, 8)).astype(np.float32)
  out = {}
  for dev in devs:
    tinytpu.reset_counters(dev)
    xt, wt, ut = (Tensor(v, device=dev).cast(dtype).realize() for v in (x, w, upstream))
    y = (xt.relu() if relu else xt).conv2d(wt)
    results = (y, *(y * ut).sum().gradient(*([wt] if relu else [xt, wt])))
    out[dev] = [t.cast(dtypes.float32).numpy().tobytes() for t in results]
  return out

def test_a_16_row_float_mxu_takes_a_convolution_and_its_gradients_with_the_reference_cores_bits():
  """tinygrad upcasts a convolution's 32 output channels by 4, which leaves 8 in lanes: no 16-column block. On a core
  with a float MXU the renderer's heuristic keeps those channels in lanes (renderer.hand_coded_optimizations), which
  changes which outputs a lane computes but not any output's sum: the forward pass and both gradients give the
  reference core's bytes, and the 16x16 MXU computes some of them."""
  from tinygrad import Device
  devs = {"TINYTPU:79": "reference", "TINYTPU:88": "16x16-all", "TINYTPU:78": "16x16-all-pipe-f32"}
  out = conv_and_gradients(devs, 16, relu=False)
  assert [Device[d].renderer.target.arch for d in devs] == ["", "", "floatmxu16"]
  assert out["TINYTPU:88"] == out["TINYTPU:79"] and out["TINYTPU:78"] == out["TINYTPU:79"]
  assert tinytpu.counters("TINYTPU:78")["mxu_busy"] > 0 and tinytpu.counters("TINYTPU:88")["mxu_busy"] == 0

def test_a_float_mxu_takes_a_convolution_of_a_relu_and_its_weight_gradient_with_the_reference_cores_bits():
  """A factor computed from one element per lane (the ReLU of the layer before, which tinygrad fuses into the
  convolution's kernel) is no loaded element, so the MXU could not take it: on a float MXU's core the compiler keeps
  it per element in a memo buffer from its first sight and reads it back as a loaded element (element_memo.h; a
  chunk that kept new ones is compiled first as a prologue of those stores, then traced again). The forward pass
  and the weight gradient give the reference core's bytes, with the MXU busy."""
  devs = {"TINYTPU:79": "reference", "TINYTPU:82": "all-pipe-f32", "TINYTPU:78": "16x16-all-pipe-f32"}
  out = conv_and_gradients(devs, 17, relu=True)
  assert out["TINYTPU:82"] == out["TINYTPU:79"] and out["TINYTPU:78"] == out["TINYTPU:79"]
  assert tinytpu.counters("TINYTPU:82")["mxu_busy"] > 0 and tinytpu.counters("TINYTPU:78")["mxu_busy"] > 0

def test_a_convolution_of_bfloat16_tensors_and_its_gradients_run_on_a_bfloat16_mxu_with_the_reference_cores_bits():
  """A convolution's sums of bfloat16 tensors go on a bfloat16 MXU as a float32 one's do (their factors decoded from
  uint16 storage, kept per element): the forward pass and both gradients give the reference core's bytes."""
  from tinygrad import dtypes
  devs = {"TINYTPU:79": "reference", "TINYTPU:83": "all-pipe-bf16", "TINYTPU:120": "16x16-all-pipe-bf16"}
  out = conv_and_gradients(devs, 18, relu=False, dtype=dtypes.bfloat16)
  assert out["TINYTPU:83"] == out["TINYTPU:79"] and out["TINYTPU:120"] == out["TINYTPU:79"]
  assert tinytpu.counters("TINYTPU:83")["mxu_busy"] > 0 and tinytpu.counters("TINYTPU:120")["mxu_busy"] > 0

@pytest.mark.parametrize("shape", [(2, 8, 16, 10, 3), (2, 4, 16, 12, 5)])
def test_a_float32_convolution_on_float_mxus_gives_the_reference_cores_bits(shape):
  """A convolution's sums go on the float MXU in blocks of pixels by output channels (a pair of its ranges other than
  the two innermost), in tinygrad's order: its unrolled groups of 9 or 25 taps are longer than a 4x4 array's
  dispatch, so a group spans dispatches, and a K-block (each seeded with the one before's sums) ends only where a
  group does (a block that ended inside one lost the group's open run: the MNIST step's 3x3 convolution; the 3x3
  case here fails so)."""
  from tinygrad import Device, Tensor
  reference = "TINYTPU:79"
  cores = {"TINYTPU:82": "all-pipe-f32", "TINYTPU:77": "8x8-all-pipe-f32"}
  for dev, name in {reference: "reference", **cores}.items(): Device[dev].config = tinytpu.configs.from_spec(name)
  b, cin, cout, side, k = shape
  rng = np.random.default_rng(k)
  x, w = rng.standard_normal((b, cin, side, side)).astype(np.float32), rng.standard_normal((cout, cin, k, k)).astype(np.float32)
  x[0, 0, 1, :] = -0.0
  out = {}
  for dev in [reference, *cores]:
    tinytpu.reset_counters(dev)
    out[dev] = Tensor(x, device=dev).conv2d(Tensor(w, device=dev)).numpy().tobytes()
  assert all(out[dev] == out[reference] for dev in cores), [n for d, n in cores.items() if out[d] != out[reference]]
  assert all(tinytpu.counters(dev)["mxu_busy"] > 0 for dev in cores), [tinytpu.counters(d)["mxu_busy"] for d in cores]
