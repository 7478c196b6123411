"""Workloads from real programs, each a function of the device it runs on whose result tinytpu.workloads checks against
tinygrad's CPU device (the `real` set): a training step of the CNN of tinygrad's examples/beautiful_mnist.py, a
transformer's attention block, the int8 digits MLP of tinytpu.compare, and greedy decoding with tinygrad's
examples/gpt2.py model at a tiny size with random weights (its code imported from a tinygrad checkout named by
TINYGRAD_TESTS, not copied). Weights and data are seeded numpy arrays, so both devices compute the same thing."""
from __future__ import annotations
import functools, os, sys
import numpy as np
from tinygrad import Tensor, function, nn
from tinygrad.helpers import Context

class MnistCNN:
  """The architecture of tinygrad's examples/beautiful_mnist.py: two 5x5 and two 3x3 convolutions with BatchNorm and
  max-pooling, a linear head."""
  def __init__(self):
    self.layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
                   nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
                   lambda x: x.flatten(1), nn.Linear(576, 10)]
  @function  # as the example: the model is one function in the graph (its backward is scheduled as such)
  def __call__(self, x: Tensor) -> Tensor: return x.sequential(self.layers)

def _seeded(model, device: str, seed: int, scale: float = 0.1) -> None:
  """The model's parameters from numpy's seeded generator, in name order, on `device` (BatchNorm's running statistics
  keep their start)."""
  rng = np.random.default_rng(seed)
  for name, t in sorted(nn.state.get_state_dict(model).items()):
    if "running" in name or "num_batches" in name: continue
    w = (rng.standard_normal(t.shape) * scale).astype(np.float32) + (1 if name.endswith("weight") and t.ndim == 1 else 0)
    t.replace(Tensor(w, device=device))

MNIST_BATCH = 16
MNIST_MACS = MNIST_BATCH * (24 * 24 * 32 * 25 + 20 * 20 * 32 * 800 + 8 * 8 * 64 * 288 + 6 * 6 * 64 * 576 + 576 * 10)

def mnist_step(device: str) -> Tensor:
  """One SGD step (lr 0.01, training-mode BatchNorm) of MnistCNN on a fixed batch of 16 random 28x28 images: the loss,
  then the updated parameters, flattened. (beautiful_mnist steps with Adam; SGD's update is a plain multiple of the
  gradient, so float rounding on either device moves it by as little, which the check's tolerance needs.)"""
  rng = np.random.default_rng(20)
  with Context(DEV=device):  # the model's function is traced on the default device
    x = Tensor(rng.standard_normal((MNIST_BATCH, 1, 28, 28)).astype(np.float32), device=device)
    y = Tensor(rng.integers(0, 10, MNIST_BATCH).astype(np.int32), device=device)
    model = MnistCNN()
    _seeded(model, device, 21)
    params = nn.state.get_parameters(model)
    opt = nn.optim.SGD(params, lr=0.01)
    with Context(TRAINING=1):
      opt.zero_grad()
      loss = model(x).sparse_categorical_crossentropy(y).backward()
      opt.step()
    return loss.reshape(1).cat(*[p.flatten() for p in params])

ATTENTION = dict(seq=64, dim=64, heads=4)
ATTENTION_MACS = ATTENTION["seq"] * ATTENTION["dim"] * ATTENTION["dim"] * 4 + 2 * ATTENTION["seq"] ** 2 * ATTENTION["dim"]

def attention(device: str) -> Tensor:
  """A transformer's attention block: x + proj(softmax(q k^T / sqrt(d), causal) v) over 64 positions of dimension 64
  and 4 heads, with seeded projections."""
  s, d, h = ATTENTION["seq"], ATTENTION["dim"], ATTENTION["heads"]
  rng = np.random.default_rng(30)
  x = Tensor(rng.standard_normal((1, s, d)).astype(np.float32), device=device)
  wq, wk, wv, wo = (Tensor((rng.standard_normal((d, d)) * d ** -0.5).astype(np.float32), device=device) for _ in range(4))
  split = lambda t: t.reshape(1, s, h, d // h).transpose(1, 2)
  q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
  out = q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(1, s, d)
  return x + out @ wo

DIGITS_MACS = 397 * (64 * 64 + 64 * 10)

@functools.cache
def _digits_model():
  from tinytpu import compare
  xtr, ytr, xte, _ = compare.digits()
  return compare.train("mlp", xtr, ytr, 300), xtr[:512], xte

def int8_digits(device: str) -> Tensor:
  """tinytpu.compare's MLP, trained in float32 on CPU and quantised to int8 (tinytpu.quant) on the 397 held-out
  digits: the logits. On TINYTPU they must be CPU's bit for bit."""
  from tinytpu import compare, quant
  model, calibration, x = _digits_model()
  q = quant.quantize_model(compare._copy("mlp", model, "CPU", (64, 10)), Tensor(calibration, device="CPU"))
  if device != "CPU":
    for t in nn.state.get_state_dict(q).values(): t.replace(t.to(device).realize())
  return q(Tensor(x, device=device))

GPT2 = dict(dim=64, n_heads=4, n_layers=2, norm_eps=1e-5, vocab_size=128)  # as small as a real decode needs
GPT2_PROMPT, GPT2_TOKENS = [3, 17, 42, 5], 4
GPT2_MACS = GPT2_TOKENS * GPT2["n_layers"] * 12 * GPT2["dim"] ** 2

class Unavailable(Exception):
  """A workload that cannot run on this machine (what it needs is not here): reported as not run, not as failed."""

def _gpt2():
  """tinygrad's examples/gpt2.py, from the checkout TINYGRAD_TESTS names (tinygrad itself stays the installed one)."""
  checkout = os.getenv("TINYGRAD_TESTS")
  if not checkout or not os.path.isfile(os.path.join(checkout, "examples", "gpt2.py")):
    raise Unavailable("gpt2_decode imports tinygrad's examples/gpt2.py: set TINYGRAD_TESTS to a tinygrad checkout")
  os.environ.setdefault("MAX_CONTEXT", "32")  # read when it imports
  if checkout not in sys.path: sys.path.append(checkout)
  import examples.gpt2 as gpt2
  return gpt2

def gpt2_tokens(gpt2, device: str, tokens: int) -> list[int]:
  """The tokens the GPT-2 of the module `gpt2` (examples/gpt2.py; tiny, seeded random weights, a unit-scale head so
  that rounding cannot flip an argmax) decodes greedily after a 4-token prompt: the prompt in one call, then a token
  a call with the KV cache."""
  from tinygrad import Variable
  with Context(DEV=device):  # the KV cache is made in the first call
    model = gpt2.Transformer(**GPT2, max_seq_len=gpt2.MAX_CONTEXT)
    rng = np.random.default_rng(0)
    for name, t in sorted(nn.state.get_state_dict(model).items()):
      w = rng.standard_normal(t.shape).astype(np.float32) * (0.1 if "ln_" in name or "bias" in name else 0.02)
      t.replace(Tensor(w + (1 if "ln_" in name and name.endswith("weight") else 0), device=device).realize())
    head = rng.standard_normal(model.lm_head.weight.shape).astype(np.float32)
    model.lm_head.weight.replace(Tensor(head, device=device).realize())
    out, start_pos = list(GPT2_PROMPT), 0
    for _ in range(tokens):
      new = out[start_pos:]
      x = Variable("tokens", 0, GPT2["vocab_size"] - 1).bind(new[0]) if len(new) == 1 else Tensor([new], device=device)
      out.append(model(x, Variable("start_pos", 1 if start_pos else 0, gpt2.MAX_CONTEXT - 1).bind(start_pos), 0.0).tolist()[0])
      start_pos = len(out) - 1
  return out[len(GPT2_PROMPT):]

def gpt2_decode(device: str) -> Tensor:
  """gpt2_tokens of examples/gpt2.py from the checkout TINYGRAD_TESTS names: GPT2_TOKENS tokens, as int32."""
  return Tensor(np.array(gpt2_tokens(_gpt2(), device, GPT2_TOKENS), dtype=np.int32), device=device)
