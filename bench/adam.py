"""Cycles per element of tinygrad's Adam update on TINYTPU: 4096 float32 parameters, two steps, the second
counted (the first also sets up the optimizer's state). The result is checked bit for bit against numpy's
float32 evaluation of the same operations in the order the kernels do them (tinygrad's CPU device contracts
a*b + c*d into a fused multiply-add, so it differs in the last bits). Usage: python bench/adam.py [N]"""
import sys
import numpy as np
import tinytpu
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.nn.optim import Adam

def numpy_adam(w, grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
  f = np.float32
  m, v, b1_t, b2_t = np.zeros_like(w), np.zeros_like(w), f(1), f(1)
  for g in grads:
    b1_t, b2_t = b1_t * f(b1), b2_t * f(b2)
    m = f(1 - b1) * g + f(b1) * m
    v = (g * g) * f(1 - b2) + f(b2) * v
    w = w - f(lr) * (m / ((f(1) - b1_t) * (np.sqrt(v / (f(1) - b2_t)) + f(eps))))
  return w

def main(n: int = 4096) -> None:
  rng = np.random.default_rng(0)
  w0 = rng.standard_normal(n).astype(np.float32)
  grads = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
  w = Tensor(w0, device="TINYTPU")
  w.requires_grad = True
  opt = Adam([w], lr=1e-3)
  for g in grads:
    w.grad = Tensor(g, device="TINYTPU")
    tinytpu.reset_counters()
    with Context(TRAINING=1): opt.step()
  c = tinytpu.counters()
  got, want = w.numpy(), numpy_adam(w0, grads)
  wrong = int(np.count_nonzero(got.view(np.uint32) != want.view(np.uint32)))
  print(f"Adam update of {n} float32 parameters, second step: {c['cycles']:,} cycles, {c['cycles'] / n:.1f} "
        f"cycles/element, {c['launches']} launches; {wrong} elements differ from numpy's float32 evaluation")
  if wrong: sys.exit(1)

if __name__ == "__main__": main(*map(int, sys.argv[1:]))
