"""One training step of a model from tinygrad's test/models/test_train.py (EfficientNet(0) by default, BS=2, SGD, the
test's own extra.training.train) on TINYTPU, with TINYTPU_FUNCTIONAL modes alternated in one process: wall time, cycles
(which must not depend on the mode), launches, those run in order and their batches, and the host time inside kernel
calls (the rest is tinygrad scheduling the step, which every mode pays). The first run compiles; compare the later ones.
Needs a tinygrad source checkout for extra/ (TINYGRAD_TESTS or --tinygrad).

  python -m bench.train_step --tinygrad ~/tinygrad [--model efficientnet] [--modes 0,1,0,1]
"""
import argparse, os, sys, time
import numpy as np
import tinytpu
from bench.mnist_train import kernel_times

MODELS = {  # as test_train.py builds them, and their input's shape
  "efficientnet": (lambda m: m.EfficientNet(0), "extra.models.efficientnet", (3, 224, 224)),
  "vit": (lambda m: m.ViT(), "extra.models.vit", (3, 224, 224)),
}

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--tinygrad", default=os.environ.get("TINYGRAD_TESTS"), help="a tinygrad source checkout")
  ap.add_argument("--model", choices=MODELS, default="efficientnet")
  ap.add_argument("--bs", type=int, default=2)
  ap.add_argument("--modes", default="0,1,0,1", help="TINYTPU_FUNCTIONAL values, in order")
  args = ap.parse_args()
  if not args.tinygrad: ap.error("give --tinygrad or set TINYGRAD_TESTS to a tinygrad source checkout")
  sys.path.append(args.tinygrad)  # for extra/ only: tinygrad itself stays the installed one
  import importlib
  from tinygrad.helpers import Context
  from tinygrad.nn import optim
  from tinygrad.nn.state import get_parameters
  from extra.training import train
  make, module, shape = MODELS[args.model]
  x, y = np.zeros((args.bs, *shape), dtype=np.float32), np.zeros((args.bs,), dtype=np.int32)
  cycles, times = set(), kernel_times()
  for mode in args.modes.split(","):
    os.environ["TINYTPU_FUNCTIONAL"] = mode
    tinytpu.reset_counters()
    times.clear()
    with Context(DEV="TINYTPU"):
      model = make(importlib.import_module(module))
      t = time.perf_counter()
      train(model, x, y, optim.SGD(get_parameters(model), lr=0.001), steps=1, BS=args.bs)
      wall, c = time.perf_counter() - t, tinytpu.counters()
    assert c["launches"] > 0, "the step ran no kernel on TINYTPU"
    cycles.add(c["cycles"])
    print(f"FUNCTIONAL={mode}  {wall:7.1f} s  {c['cycles']:,} cycles  {c['launches']:,} launches  "
          f"{c['in_order']:,} in order  {c['batches']:,} batches  {sum(t[0] for t in times.values()):.1f} s in kernel calls", flush=True)
  assert len(cycles) == 1, f"cycles differ between modes: {cycles}"

if __name__ == "__main__":
  main()
