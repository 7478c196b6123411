"""Training steps of a small MNIST CNN (the architecture of tinygrad's examples/beautiful_mnist.py: two 5x5 and two 3x3
convolutions with BatchNorm and max-pooling, a linear head, Adam, TinyJit) on random data in place of the download,
on TINYTPU and on tinygrad's CPU device in one process: wall time per device, the losses (which must agree across
TINYTPU's modes: in-order runs and every launch ticked), TINYTPU's cycles and launches run in order.

  python -m bench.mnist_train --bs 64 --steps 3 [--modes 1,0] [--devices TINYTPU,CPU] [--kernels 15]
"""
import argparse, collections, os, time
import numpy as np
import tinytpu
from tinygrad import Tensor, TinyJit, nn
from tinygrad.helpers import Context
from tinytpu.device import TinyTPUProgram
from tinytpu.real import MnistCNN

def train(device: str, bs: int, steps: int, seed: int = 0) -> tuple[list[float], list[float]]:
  """Losses of `steps` training steps and each one's wall time (the first compiles)."""
  with Context(DEV=device): return _train(bs, steps, seed)

def _train(bs: int, steps: int, seed: int) -> tuple[list[float], list[float]]:
  Tensor.manual_seed(seed)
  rng = np.random.default_rng(seed)
  x_train = Tensor(rng.standard_normal((512, 1, 28, 28), dtype=np.float32))
  y_train = Tensor(rng.integers(0, 10, 512, dtype=np.int32))
  model = MnistCNN()
  opt = nn.optim.Adam(nn.state.get_parameters(model))

  @TinyJit
  def step() -> Tensor:
    with Context(TRAINING=1):
      opt.zero_grad()
      samples = Tensor.randint(bs, high=x_train.shape[0])
      loss = model(x_train[samples]).sparse_categorical_crossentropy(y_train[samples]).backward()
      return loss.realize(*opt.schedule_step())

  losses, walls = [], []
  for _ in range(steps):
    start = time.perf_counter()
    losses.append(step().item())
    walls.append(time.perf_counter() - start)
  return losses, walls

def kernel_times():
  """Wall time, calls, launches, launches run in order, their batches and the launches other threads ran per TINYTPU
  kernel, gathered while it is in effect."""
  times = collections.defaultdict(lambda: [0.0, 0, 0, 0, 0, 0])
  call = TinyTPUProgram.__call__
  def timed(self, *args, **kw):
    before, t = tinytpu.counters(), time.perf_counter()
    try: return call(self, *args, **kw)
    finally:
      after, row = tinytpu.counters(), times[self.name]
      row[0] += time.perf_counter() - t
      row[1] += 1
      row[2] += after["launches"] - before["launches"]
      row[3] += after["in_order"] - before["in_order"]
      row[4] += after["batches"] - before["batches"]
      row[5] += after["threaded"] - before["threaded"]
  TinyTPUProgram.__call__ = timed
  return times

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--bs", type=int, default=64)
  ap.add_argument("--steps", type=int, default=3)
  ap.add_argument("--devices", default="TINYTPU,CPU")
  ap.add_argument("--modes", default="1", help="TINYTPU_FUNCTIONAL values to run TINYTPU with, in order (1,0: A/B)")
  ap.add_argument("--kernels", type=int, default=0, help="list the N TINYTPU kernels that took the most wall time")
  args = ap.parse_args()
  times = kernel_times() if args.kernels else None
  walls, runs = {}, {}
  for device in args.devices.split(","):
    for mode in (args.modes.split(",") if device.startswith("TINYTPU") else [None]):
      if mode is not None: os.environ["TINYTPU_FUNCTIONAL"] = mode
      tinytpu.reset_counters()
      losses, steps = train(device, args.bs, args.steps)
      wall = sum(steps)
      label = device if mode is None else f"{device} FUNCTIONAL={mode}"
      walls[label], runs[label] = wall, losses
      c = tinytpu.counters()
      extra = f", {c['cycles']:,} cycles, {c['launches']:,} launches ({c['in_order']:,} in order)" if mode is not None else ""
      print(f"{label:24s} {wall:8.1f} s (steps {' '.join(f'{t:.1f}' for t in steps)})  losses "
            f"{' '.join(f'{l:.6f}' for l in losses)}{extra}", flush=True)
  base = walls.get("CPU")
  if base:
    for label, wall in walls.items(): print(f"{label:24s} {wall / base:6.2f}x CPU")
  tpu = [losses for label, losses in runs.items() if label.startswith("TINYTPU")]
  if len(tpu) > 1: print("TINYTPU losses equal across modes:", all(l == tpu[0] for l in tpu))
  if times:
    print(f"{'kernel':40s} {'wall s':>8s} {'calls':>6s} {'launches':>10s} {'in order':>9s} {'per batch':>9s} {'threaded':>9s}")
    for name, (t, calls, launches, in_order, batches, threaded) in sorted(times.items(), key=lambda kv: -kv[1][0])[:args.kernels]:
      print(f"{name:40s} {t:8.2f} {calls:6d} {launches:10d} {in_order / max(launches, 1):9.1%} "
            f"{in_order / max(batches, 1):9.1f} {threaded / max(launches, 1):9.1%}")

if __name__ == "__main__":
  main()
