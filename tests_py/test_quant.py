"""tinytpu.quant: symmetric int8/int16 quantisation, against numpy references written out here: rounding half to
even, saturation to the symmetric range, per-channel scales, zero ranges, percentile calibration, and activations
quantised on TINYTPU bit for bit as on the host and on tinygrad's CPU device; quantised models (an MLP and a CNN on
scikit-learn's digits) with the same outputs on TINYTPU as on CPU, their matmuls on the MXU."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
import tinytpu
from tinygrad import Tensor, dtypes, nn
from tinytpu import quant

def test_rounding_is_half_to_even_and_saturates_to_the_symmetric_range():
  x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 126.5, 300.0, -300.0, -127.5], dtype=np.float32)
  assert quant.quantize(x, np.float32(1)).tolist() == [0, 2, 2, 0, -2, -2, 2, 126, 127, -127, -127]
  assert quant.quantize(x, np.float32(1)).dtype == np.int8
  big = np.array([40000.0, -40000.0, 32766.5], dtype=np.float32)
  assert quant.quantize(big, np.float32(1), bits=16).tolist() == [32767, -32767, 32766]
  assert quant.quantize(big, np.float32(1), bits=16).dtype == np.int16

def test_per_channel_scales_map_each_channels_range_onto_qmax():
  rng = np.random.default_rng(0)
  w = (rng.standard_normal((5, 3, 3, 3)) * np.array([0.01, 1, 10, 100, 0.5])[:, None, None, None]).astype(np.float32)
  s = quant.scale_of(w, axis=0)
  want = np.abs(w).reshape(5, -1).max(axis=1).astype(np.float32) / np.float32(127)
  np.testing.assert_array_equal(s, want)
  q = quant.quantize(w, s, axis=0)
  assert (np.abs(q).reshape(5, -1).max(axis=1) == 127).all()  # each channel's largest value reaches qmax
  np.testing.assert_array_equal(q, np.clip(np.round(w * (np.float32(1) / want)[:, None, None, None]), -127, 127))
  err = np.abs(quant.dequantize(q, s, axis=0) - w)
  assert (err <= 0.5 * s[:, None, None, None] * (1 + 1e-6)).all()  # within half a step
  # the channel axis may be any, the last too
  np.testing.assert_array_equal(quant.scale_of(w.transpose(1, 2, 3, 0), axis=-1), s)

def test_a_range_of_zeros_gets_scale_one_and_stays_zero():
  w = np.zeros((2, 4), dtype=np.float32)
  w[1] = [0.5, -1.0, 0.25, 0.0]
  s = quant.scale_of(w, axis=0)
  assert s.tolist() == [1.0, np.float32(1.0) / np.float32(127)]
  q = quant.quantize(w, s, axis=0)
  assert q[0].tolist() == [0, 0, 0, 0] and q[1].tolist() == [64, -127, 32, 0]
  assert quant.scale_of(np.zeros(7, dtype=np.float32)) == 1.0

def test_a_percentile_calibration_lets_outliers_saturate():
  x = np.concatenate([np.linspace(-1, 1, 999, dtype=np.float32), [50.0]]).astype(np.float32)
  assert quant.scale_of(x) == np.float32(50) / np.float32(127)
  s = quant.scale_of(x, percentile=99.0)
  assert s == np.float32(np.percentile(np.abs(x), 99.0)) / np.float32(127) and s < np.float32(1.1) / 127
  assert quant.quantize(x, s)[-1] == 127

@pytest.mark.parametrize("device", ["TINYTPU", "CPU"])
def test_activations_quantised_on_a_device_are_the_hosts_bit_for_bit(device):
  rng = np.random.default_rng(1)
  x = (rng.standard_normal(1000) * 3).astype(np.float32)
  x[:4] = [0.5, 1.5, -2.5, 1000.0]  # ties and a saturating value, at scale 1
  x[4:8] = [0.49999997, -0.49999997, 126.5, -1e30]  # just below ties, a tie at the edge, far out of range
  for scale, bits in ((np.float32(1), 8), (quant.scale_of(x), 8), (quant.scale_of(x, bits=16), 16)):
    got = quant.quantize_tensor(Tensor(x, device=device), scale, bits).numpy()
    np.testing.assert_array_equal(got, quant.quantize(x, scale, bits))

def test_fixed_point_multipliers_are_the_nearest_and_never_wrap_int32():
  rng = np.random.default_rng(2)
  for bound in (1, 1000, 64 * 128 * 127, 2**24):
    m = np.exp(rng.uniform(np.log(1e-5), np.log(2.0), 7))
    mul, shift = quant.fixed_point(m, bound)
    assert mul.dtype == np.int32 and 1 <= shift <= 30
    assert bound * int(mul.max()) + 2**(shift - 1) < 2**30  # the largest accumulator times it, lifted by 2^30, fits int32
    assert shift == 30 or bound * round(float(m.max()) * 2.0**(shift + 1)) + 2**shift >= 2**30  # the largest such shift
    np.testing.assert_array_equal(mul, np.round(m * 2.0**shift))  # the nearest at that shift
  with pytest.raises(ValueError, match="no int32 fixed point"): quant.fixed_point(np.array([4.0]), 2**30)

def test_requantisation_rounds_half_up_and_saturates_like_the_mxu():
  # the drain's formula: (acc * mul + 2^(shift-1)) >> shift, arithmetic, then [-128, 127]
  acc = np.array([0, 1, 2, 3, -1, -2, -3, 5, -5, 1000, -1000, 255, -257], dtype=np.int32)
  assert quant.requantize(acc, np.int32(1), 1).tolist() == [0, 1, 1, 2, 0, -1, -1, 3, -2, 127, -128, 127, -128]
  rng = np.random.default_rng(3)
  acc, mul = rng.integers(-2**20, 2**20, 5000), rng.integers(1, 2000, 5000)
  exact = [max(-128, min(127, (a * m + 2**18) // 2**19)) for a, m in zip(acc.tolist(), mul.tolist())]  # Python ints
  assert quant.requantize(acc, mul, 19).tolist() == exact

@pytest.mark.parametrize("device", ["TINYTPU", "CPU"])
def test_requantisation_on_a_device_is_the_references_bit_for_bit(device):
  rng = np.random.default_rng(4)
  bound = 64 * 128 * 127
  mul, shift = quant.fixed_point(np.array([0.003, 0.0007, 0.02, 0.0001], np.float32), bound)
  acc = rng.integers(-bound, bound + 1, (250, 4)).astype(np.int32)
  acc[0], acc[1] = bound, -bound  # the extremes the bound allows
  got = quant.requantize_tensor(Tensor(acc, device=device), Tensor(mul, device=device), shift).numpy()
  np.testing.assert_array_equal(got, quant.requantize(acc, mul, shift))

def test_bad_arguments_are_named():
  with pytest.raises(ValueError, match="bits=4"): quant.scale_of(np.ones(3), bits=4)
  with pytest.raises(ValueError, match="percentile=0"): quant.scale_of(np.ones(3), percentile=0)
  with pytest.raises(ValueError, match="axis=2"): quant.scale_of(np.ones((2, 2)), axis=2)

class MLP:
  def __init__(self): self.layers = [nn.Linear(64, 32), nn.Linear(32, 10)]
  def __call__(self, x): return self.layers[1](self.layers[0](x).relu())

class CNN:
  def __init__(self): self.conv, self.head = nn.Conv2d(1, 8, 3, padding=1), nn.Linear(8 * 4 * 4, 10)
  def __call__(self, x): return self.head(self.conv(x.reshape(-1, 1, 8, 8)).relu().max_pool2d(2).flatten(1))

def digits() -> np.ndarray:
  from sklearn.datasets import load_digits  # 1,797 real 8x8 images, bundled with scikit-learn
  return (load_digits().data / 16).astype(np.float32)

@pytest.mark.parametrize("Model", [MLP, CNN])
def test_a_quantised_model_runs_on_the_mxu_with_cpus_outputs_bit_for_bit(Model):
  """Quantised once (on CPU, calibrated on real digits), the same int8 model gives the same float outputs on TINYTPU
  as on tinygrad's CPU device, its matmuls and convolutions on the MXU, and stays close to the float model."""
  x = digits()
  Tensor.manual_seed(0)
  model = Model()
  want_float = model(Tensor(x[:48])).numpy()
  quant.quantize_model(model, Tensor(x[:512]))
  assert all(isinstance(l, (quant.QuantLinear, quant.QuantConv2d)) for l in quant_layers(model))
  on_cpu = model(Tensor(x[:48])).numpy()
  for t in nn.state.get_state_dict(model).values(): t.replace(t.to("TINYTPU").realize())
  tinytpu.reset_counters()
  on_tpu = model(Tensor(x[:48], device="TINYTPU")).numpy()
  np.testing.assert_array_equal(on_tpu, on_cpu)
  assert tinytpu.counters()["mxu_busy"] > 0
  assert np.abs(on_cpu - want_float).max() < 0.05 * np.abs(want_float).max()  # int8 keeps the float model's outputs

def quant_layers(model) -> list:
  return [v for v in vars(model).values() if not isinstance(v, list)] + [l for v in vars(model).values() if isinstance(v, list) for l in v]

def test_a_model_whose_layers_do_not_chain_is_refused():
  class Nothing:
    def __call__(self, x): return x * 2
  with pytest.raises(ValueError, match="Nothing holds no nn.Linear or nn.Conv2d"):
    quant.quantize_model(Nothing(), Tensor(np.ones((2, 64), np.float32)))
  class Twice:
    def __init__(self): self.l = nn.Linear(4, 4)
    def __call__(self, x): return self.l(self.l(x))
  with pytest.raises(ValueError, match="must run once"):
    quant.quantize_model(Twice(), Tensor(np.ones((2, 4), np.float32)))

def test_compare_prints_a_row_per_model_and_dtype_with_int8_bit_identical_to_cpu():
  import json, subprocess, sys
  p = subprocess.run([sys.executable, "-m", "tinytpu", "compare", "--json", "--models", "mlp,cnn", "--steps", "60",
                      "--test", "64", "--config", "all"], capture_output=True, text=True, timeout=900)
  assert p.returncode == 0, p.stderr
  rows = json.loads(p.stdout)
  assert [(r["model"], r["dtype"]) for r in rows] == [("mlp", "float32"), ("mlp", "int8"), ("cnn", "float32"), ("cnn", "int8")]
  for r in rows:
    assert r["config"] == "all" and 0 <= r["accuracy"] <= 1 and r["cycles"] > 0
    assert r["accuracy"] > 0.5  # trained, on real digits: far above chance (0.1)
  assert all(r["bit_identical_to_cpu"] is True and r["mxu_busy"] > 0 for r in rows if r["dtype"] == "int8")
  assert all("bit_identical_to_cpu" not in r for r in rows if r["dtype"] == "float32")
  bad = subprocess.run([sys.executable, "-m", "tinytpu", "compare", "--models", "rnn"], capture_output=True, text=True)
  assert bad.returncode == 1 and "no model rnn" in bad.stderr

def test_compare_takes_a_users_arrays_and_names_bad_ones(tmp_path):
  import json, subprocess, sys
  rng = np.random.default_rng(6)
  x = rng.standard_normal((200, 4, 4)).astype(np.float32)  # 4x4 images: the CNN takes them too
  np.savez(tmp_path / "mine.npz", x=x, y=(x[:, 0, 0] > 0).astype(np.int64))
  np.savez(tmp_path / "bad.npz", a=x)
  run = lambda *a: subprocess.run([sys.executable, "-m", "tinytpu", "compare", *a], capture_output=True, text=True, timeout=600)
  p = run("--json", "--data", str(tmp_path / "mine.npz"), "--test", "40", "--steps", "40")
  assert p.returncode == 0, p.stderr
  rows = json.loads(p.stdout)
  assert [(r["model"], r["dtype"]) for r in rows] == [("mlp", "float32"), ("mlp", "int8"), ("cnn", "float32"), ("cnn", "int8")]
  assert all(r["bit_identical_to_cpu"] for r in rows if r["dtype"] == "int8") and all(r["accuracy"] > 0.6 for r in rows)
  for args, says in ((["--data", str(tmp_path / "bad.npz")], "an .npz of arrays x and y"),
                     (["--data", str(tmp_path / "none.npz")], "no such file"),
                     (["--data", str(tmp_path / "mine.npz"), "--test", "200"], "--test 200: holds out 200 of the 200")):
    p = run(*args)
    assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr, p.stderr

def _npz(path, **arrays):
  np.savez(path, **arrays)
  return str(path)

GOOD_X, GOOD_Y = np.arange(40, dtype=np.float32).reshape(10, 4), np.arange(10) % 3

@pytest.mark.parametrize("make, says", [
  (lambda p: _npz(p, x=np.where(np.arange(40) == 7, np.nan, 1).reshape(10, 4), y=GOOD_Y),
   "1 of x's samples have NaN or infinite features (the first: sample 1): every feature must be a finite number"),
  (lambda p: _npz(p, x=np.full((10, 4), np.inf), y=GOOD_Y), "NaN or infinite features (the first: sample 0)"),
  (lambda p: _npz(p, x=np.full((10, 4), 1e39), y=GOOD_Y), "finite number (in float32)"),
  (lambda p: _npz(p, x=GOOD_X, y=GOOD_Y - 1), "y[0] is -1: labels are class numbers from 0 to 1023"),
  (lambda p: _npz(p, x=GOOD_X, y=GOOD_Y + 5000), "y[0] is 5000: labels are class numbers from 0"),
  (lambda p: _npz(p, x=GOOD_X, y=GOOD_Y + 0.5), "y is float64: labels must be an integer array"),
  (lambda p: _npz(p, x=np.zeros((0, 4)), y=np.zeros(0, int)), "x has shape (0, 4): one row of features"),
  (lambda p: _npz(p, x=np.arange(10.0), y=GOOD_Y), "x has shape (10,): one row of features (or an image) per sample"),
  (lambda p: _npz(p, x=GOOD_X, y=GOOD_Y[:9]), "y has shape (9,): one label per sample of x, (10,), expected"),
  (lambda p: _npz(p, x=np.array([["a"] * 4] * 10), y=GOOD_Y), "x is <U1: features must be numbers"),
  (lambda p: _npz(p, x=np.array([None] * 10), y=GOOD_Y), "x and y must be arrays of numbers"),
  (lambda p: _npz(p, a=GOOD_X), "an .npz of arrays x and y (it has a)"),
  (lambda p: (p.write_bytes(b"x,y\n1,2\n"), str(p))[1], "not an .npz file (numpy.savez(FILE, x=..., y=...) writes one)"),
  (lambda p: (np.save(p, GOOD_X), str(p) + ".npy")[1], "not an .npz file"),
  (lambda p: (p.write_bytes(open(_npz(p.with_suffix(".ok.npz"), x=GOOD_X, y=GOOD_Y), "rb").read()[:60]), str(p))[1],
   "--data"),
  (lambda p: str(p) + ".missing", "no such file"),
])
def test_compare_data_refuses_bad_input_saying_what_and_what_is_expected(tmp_path, make, says):
  """Each bad --data file is refused before any training, with a ValueError naming the file, what is wrong and what
  is expected (python -m tinytpu compare prints it as one line)."""
  from tinytpu import compare
  path = make(tmp_path / "data.npz")
  with pytest.raises(ValueError) as e: compare.load_data(path)
  assert says in str(e.value) and str(e.value).startswith(f"--data {path}: "), str(e.value)

def test_compare_data_refuses_a_file_over_its_size_limit(tmp_path, monkeypatch):
  from tinytpu import compare
  monkeypatch.setattr(compare, "MAX_DATA_BYTES", 100)
  with pytest.raises(ValueError, match="x and y take [0-9,]+ bytes, more than the 100 compare reads"):
    compare.load_data(_npz(tmp_path / "big.npz", x=GOOD_X, y=GOOD_Y))

@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 399), st.binary(max_size=8))
def test_compare_data_loader_fuzzed_raises_only_its_value_errors(tmp_path_factory, blob, at, junk):
  """The --data loader on random bytes and on a valid file with bytes overwritten: arrays it checked, or a ValueError
  naming the file; never another exception."""
  import io
  from tinytpu import compare
  good = io.BytesIO()
  np.savez(good, x=GOOD_X, y=GOOD_Y)
  data = bytearray(good.getvalue())
  data[at:at + len(junk)] = junk
  for content in (blob, bytes(data)):
    path = tmp_path_factory.mktemp("fuzz") / "d.npz"
    path.write_bytes(content)
    try:
      x, y = compare.load_data(str(path))
      assert x.dtype == np.float32 and y.dtype == np.int32 and len(x) == len(y) > 0 and np.isfinite(x).all()
    except ValueError as e:
      assert str(e).startswith(f"--data {path}: ")

# Random int8 layers as quantize_model makes them (int8 operands, int32 bias, requantisation to int8, a ReLU or not):
# every shape reaches the MXU's blocks differently (weight- or output-stationary, across a convolution's channels,
# sums cut into launches, the last block's lanes partly idle), and each must give tinygrad's CPU outputs bit for bit.

def int8_layer(device, x, w, bias, mul, shift, relu, conv):
  t = lambda a: Tensor(a, device=device)
  acc = (t(x).cast(dtypes.int32).conv2d(t(w).cast(dtypes.int32), **conv) + t(bias).reshape(-1, 1, 1) if conv is not None
         else t(x).cast(dtypes.int32) @ t(w).cast(dtypes.int32).T + t(bias))
  y = quant.requantize_tensor(acc, t(mul).reshape(-1, 1, 1) if conv is not None else t(mul), shift)
  return (y.relu() if relu else y).numpy()

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 13), st.integers(1, 80), st.integers(1, 13), st.booleans(), st.integers(0, 2**31 - 1))
def test_random_int8_linear_layers_match_cpu(rows, k, outputs, relu, seed):
  rng = np.random.default_rng(seed)
  x, w = rng.integers(-128, 128, (rows, k)).astype(np.int8), rng.integers(-127, 128, (outputs, k)).astype(np.int8)
  bias, mul = rng.integers(-5000, 5000, outputs).astype(np.int32), rng.integers(1, 3000, outputs).astype(np.int32)
  shift = int(rng.integers(12, 21))
  got, want = (int8_layer(d, x, w, bias, mul, shift, relu, None) for d in ("TINYTPU", "CPU"))
  np.testing.assert_array_equal(got, want)

@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 9), st.integers(3, 9), st.integers(0, 1), st.integers(1, 2),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_random_int8_convolutions_match_cpu(batch, channels, filters, side, padding, stride, relu, seed):
  rng = np.random.default_rng(seed)
  x = rng.integers(-128, 128, (batch, channels, side, side)).astype(np.int8)
  w = rng.integers(-127, 128, (filters, channels, 3, 3)).astype(np.int8)
  bias, mul = rng.integers(-5000, 5000, filters).astype(np.int32), rng.integers(1, 3000, filters).astype(np.int32)
  conv = {"padding": padding, "stride": stride}
  got, want = (int8_layer(d, x, w, bias, mul, 16, relu, conv) for d in ("TINYTPU", "CPU"))
  np.testing.assert_array_equal(got, want)

def test_a_convolutions_channels_go_output_stationary_across_chains():
  """An int8 convolution of one input channel to eight, requantised: each chain of dot products is one channel's (its
  lanes pixels), which no 4x4 lane block covers output-stationary alone; four channels' chains share the pixels, so
  one dispatch takes four pixels by four channels (the MXU's rows the channels), read back row by row into four
  buckets."""
  from helpers import decision_log_of
  code = ("import numpy as np; from tinygrad import Tensor, dtypes; from tinytpu import quant\n"
          "rng = np.random.default_rng(1)\n"
          "x, w = rng.integers(-128, 128, (8, 1, 8, 8)).astype(np.int8), rng.integers(-127, 128, (8, 1, 3, 3)).astype(np.int8)\n"
          "def f(d):\n"
          "  acc = Tensor(x, device=d).cast(dtypes.int32).conv2d(Tensor(w, device=d).cast(dtypes.int32), padding=1)\n"
          "  return quant.requantize_tensor(acc, 1500, 16).numpy()\n"
          "assert (f('TINYTPU') == f('CPU')).all()")
  _, log = decision_log_of(code)
  assert "int8 dot products on the MXU" in log
  assert "0 output-stationary across chains" not in log and "output-stationary across chains" in log

DOTS_MATVEC = """
import json, types, numpy as np, tinytpu
from tinygrad import Tensor, Device
from tinytpu import configs, quant
Device["TINYTPU"].config = configs.from_spec("hbm")
rng = np.random.default_rng(4)
w, x = (rng.standard_normal(s).astype(np.float32) for s in ((64, 128), (1, 128)))
layer = quant.QuantLinear(types.SimpleNamespace(weight=Tensor(w, device="TINYTPU"), bias=None), float(np.abs(x).max() / 127), None)
xt = Tensor(x, device="TINYTPU").realize()
layer.wq.realize()
tinytpu.reset_counters()
out = layer(xt).numpy()
c = tinytpu.counters()
print("OUT" + json.dumps({"out": out.tolist(), "mxu_busy": c["mxu_busy"], "hbm_bytes": c["hbm_bytes"], "cycles": c["cycles"]}))
"""

def test_tinytpu_dots_mxu_puts_a_one_row_products_int8_weights_on_the_mxu():
  """A one-row int8 product (a decode's): the estimate leaves it on the VPU, whose 32-bit lanes read the int8 weights
  as words; with TINYTPU_DOTS=mxu it runs on the MXU from int8 WeightSRAM tiles, with the same results and a fraction
  of the HBM bytes. Any other value is refused."""
  import json, os, subprocess, sys
  def run(**env):
    proc = subprocess.run([sys.executable, "-c", DOTS_MATVEC], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    assert proc.returncode == 0 or env, proc.stderr[-2000:]
    return proc if proc.returncode else json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("OUT"))[3:])
  default, mxu = run(), run(TINYTPU_DOTS="mxu")
  assert default["out"] == mxu["out"]
  assert default["mxu_busy"] == 0 and mxu["mxu_busy"] > 0
  assert mxu["hbm_bytes"] < 0.3 * default["hbm_bytes"]
  assert "TINYTPU_DOTS=vpu: unset (the faster engine by the estimate) or mxu" in run(TINYTPU_DOTS="vpu").stderr
