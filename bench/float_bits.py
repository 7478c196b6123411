"""float32 matmuls and convolutions on TINYTPU, bit for bit as an earlier build: the same computations (the 64³ and
128³ matmuls, compare's MLP layers and the digits CNN's convolution, and random shapes from a fixed seed; inputs
normal, with zeros of both signs, so that a sum added in another order shows) run under this build and under
another interpreter with the earlier build installed, or against bench/float_bits.json, the SHA-256 of each
result's bytes written by the build before register blocking (f72fe37) with --record.

  python -m bench.float_bits                   # against the record: one line per case, exit status 1 on a difference
  python -m bench.float_bits --against PYTHON  # against the build PYTHON imports, element by element
  python -m bench.float_bits --record          # write the record from this build
"""
from __future__ import annotations
import argparse, hashlib, json, os, subprocess, sys, tempfile
import numpy as np
from tinygrad import Tensor

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "float_bits.json")

def operand(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
  x = rng.standard_normal(shape).astype(np.float32)
  zeros = rng.random(shape)
  x[zeros < 0.05] = 0.0
  x[zeros > 0.95] = -0.0
  return x

def matmul(rng, m: int, k: int, n: int) -> np.ndarray:
  a, b = operand(rng, (m, k)), operand(rng, (k, n))
  return (Tensor(a, device="TINYTPU") @ Tensor(b, device="TINYTPU")).numpy()

def linear_relu(rng, m: int, k: int, n: int) -> np.ndarray:  # an nn.Linear layer: x @ W.T + b, then ReLU
  x, w, b = operand(rng, (m, k)), operand(rng, (n, k)), operand(rng, (n,))
  return (Tensor(x, device="TINYTPU").linear(Tensor(w, device="TINYTPU").T, Tensor(b, device="TINYTPU"))).relu().numpy()

def conv(rng, batch: int, cin: int, cout: int, side: int, kernel: int, pad: int) -> np.ndarray:  # with bias and ReLU
  x, w, b = operand(rng, (batch, cin, side, side)), operand(rng, (cout, cin, kernel, kernel)), operand(rng, (cout,))
  return Tensor(x, device="TINYTPU").conv2d(Tensor(w, device="TINYTPU"), Tensor(b, device="TINYTPU"), padding=pad).relu().numpy()

def cases() -> list[tuple[str, callable, tuple[int, ...]]]:
  fixed = [("matmul", matmul, s) for s in [(64, 64, 64), (128, 128, 128), (37, 29, 53), (100, 44, 60), (1, 64, 64)]]
  fixed += [("linear_relu", linear_relu, (397, 64, 64)), ("linear_relu", linear_relu, (397, 64, 10))]
  fixed += [("conv", conv, s) for s in [(397, 1, 8, 8, 3, 1), (8, 3, 6, 10, 3, 0), (4, 8, 16, 12, 3, 1)]]
  shapes = np.random.default_rng(2026)
  rand = [("matmul", matmul, tuple(int(v) for v in shapes.integers(1, 97, 3))) for _ in range(10)]
  rand += [("conv", conv, (int(shapes.integers(1, 9)), int(shapes.integers(1, 5)), int(shapes.integers(1, 9)),
                           int(shapes.integers(5, 13)), int(shapes.choice([1, 3])), int(shapes.integers(0, 2))))
           for _ in range(6)]
  return fixed + rand

def results():
  """(name, result) per case, each case's inputs from its own seed."""
  for i, (kind, fn, shape) in enumerate(cases()):
    yield f"{kind} {'x'.join(map(str, shape))}", fn(np.random.default_rng(i), *shape)

def against_record() -> dict[str, str]:
  with open(RECORD) as f: want = json.load(f)
  got = {name: hashlib.sha256(r.tobytes()).hexdigest() for name, r in results()}
  return {name: "bit-identical" if got.get(name) == want[name] else "DIFFERS" for name in want}

def against(python: str) -> dict[str, str]:
  with tempfile.TemporaryDirectory() as other:
    # the earlier build's results, from this script in its interpreter (run from the repository's root)
    subprocess.run([python, "-m", "bench.float_bits", "--save", other], cwd=os.path.dirname(HERE), check=True)
    verdicts = {}
    for i, (name, got) in enumerate(results()):
      want = np.load(os.path.join(other, f"{i}.npy"))
      if want.shape != got.shape: verdicts[name] = f"DIFFERS: shape {want.shape} against {got.shape}"; continue
      differ = int(np.count_nonzero(want.view(np.uint32) != got.view(np.uint32)))
      verdicts[name] = "bit-identical" if differ == 0 else f"DIFFERS in {differ} of {got.size} elements"
    return verdicts

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--against", metavar="PYTHON", help="compare with the build this interpreter imports")
  ap.add_argument("--record", action="store_true", help="write bench/float_bits.json from this build")
  ap.add_argument("--save", metavar="DIR", help=argparse.SUPPRESS)  # each result as DIR/<case>.npy (--against)
  args = ap.parse_args()
  if args.save:
    for i, (_, r) in enumerate(results()): np.save(os.path.join(args.save, f"{i}.npy"), r)
    return 0
  if args.record:
    with open(RECORD, "w") as f: json.dump({name: hashlib.sha256(r.tobytes()).hexdigest() for name, r in results()}, f, indent=1)
    print(f"recorded {len(cases())} cases in {RECORD}")
    return 0
  verdicts = against(args.against) if args.against else against_record()
  for name, verdict in verdicts.items(): print(f"{name:32s} {verdict}")
  same = sum(v == "bit-identical" for v in verdicts.values())
  print(f"{same} of {len(verdicts)} cases bit-identical to {'the build of ' + args.against if args.against else 'the record'}")
  return 0 if same == len(verdicts) else 1

if __name__ == "__main__":
  sys.exit(main())
