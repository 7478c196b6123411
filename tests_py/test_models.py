"""Small models end to end on TINYTPU against tinygrad's CPU device: integer results exact, float32 within
tolerance. Integer layers take the MXU where their operands fit int8."""
import numpy as np
import pytest
import tinytpu
from tinygrad import Tensor, dtypes

rng = np.random.default_rng(7)

def int8s(*shape): return rng.integers(-128, 128, shape).astype(np.int8)

MLP = {"w1": int8s(784, 128), "b1": rng.integers(-2000, 2000, 128).astype(np.int32), "w2": int8s(128, 10),
       "b2": rng.integers(-2000, 2000, 10).astype(np.int32)}

def int8_mlp(device, x):
  p = {k: Tensor(v, device=device) for k, v in MLP.items()}
  h = (Tensor(x, device=device).cast(dtypes.int32) @ p["w1"].cast(dtypes.int32) + p["b1"]).relu()
  h8 = (h >> 10).clip(-128, 127).cast(dtypes.int8)  # requantize to int8 for the next layer
  return h8.cast(dtypes.int32) @ p["w2"].cast(dtypes.int32) + p["b2"]

@pytest.mark.parametrize("batch", [1, 32])
def test_int8_mlp_784_128_10(batch):
  x = int8s(batch, 784)
  tinytpu.reset_counters()
  got = int8_mlp("TINYTPU", x).numpy()
  np.testing.assert_array_equal(got, int8_mlp("CPU", x).numpy())
  assert tinytpu.counters()["cycles"] > 0

CNN_F32 = {"conv": rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "fc": rng.standard_normal((4 * 5 * 5, 10)).astype(np.float32)}
CNN_I8 = {"conv": rng.integers(-5, 6, (4, 1, 3, 3)).astype(np.int8), "fc": rng.integers(-5, 6, (4 * 5 * 5, 10)).astype(np.int8)}

def cnn(device, x, params, dtype):
  p = {k: Tensor(v, device=device).cast(dtype) for k, v in params.items()}
  h = Tensor(x, device=device).cast(dtype).conv2d(p["conv"], padding=1).relu().max_pool2d(2)
  return h.flatten(1) @ p["fc"]

def test_cnn_float32():
  x = rng.standard_normal((2, 1, 10, 10)).astype(np.float32)
  np.testing.assert_allclose(cnn("TINYTPU", x, CNN_F32, dtypes.float32).numpy(), cnn("CPU", x, CNN_F32, dtypes.float32).numpy(),
                             atol=1e-4, rtol=1e-5)

def test_cnn_int8():
  x = rng.integers(-20, 21, (2, 1, 10, 10)).astype(np.int8)
  np.testing.assert_array_equal(cnn("TINYTPU", x, CNN_I8, dtypes.int32).numpy(), cnn("CPU", x, CNN_I8, dtypes.int32).numpy())

def attention(device, q, k, v):
  q, k, v = (Tensor(a, device=device) for a in (q, k, v))
  return (q @ k.T / np.sqrt(q.shape[-1])).softmax(-1) @ v

def test_float32_attention_block():
  q, k, v = (rng.standard_normal((8, 16)).astype(np.float32) for _ in range(3))
  np.testing.assert_allclose(attention("TINYTPU", q, k, v).numpy(), attention("CPU", q, k, v).numpy(), atol=1e-5, rtol=1e-5)
