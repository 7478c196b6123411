"""tinygrad's examples/beautiful_mnist_multigpu.py on a chip of several cores: the same CNN (tinytpu.real.MnistCNN), its
parameters copied to every device, each step's batch sharded over GPUS devices on axis 0, Adam, TinyJit, on random
uint8 images in place of the download. For each GPUS: the losses on TINYTPU (a chip configuration, chip4 by default:
TINYTPU:0..GPUS-1 are its cores) and on tinygrad's CPU device with as many devices, the chip's elapsed cycles per step
(counters()['chip_cycles']: its cores' kernels overlap, the all-reduce's copies take the NoC's cycles) and wall time.
--serial also runs TINYTPU with TINYTPU_ASYNC=0 (the cores' kernels one after another on the host); --ab N instead
times warm steps of the two modes alternated N times (A B A B) after a run that compiles, for a wall-time A/B.

  python -m bench.mnist_multigpu --gpus 1,2,4 --bs 64 --steps 3 [--serial] [--config chip4] [--json] [--plot out.png]
  python -m bench.mnist_multigpu --gpus 2 --ab 2 [--steps 4]
"""
import argparse, json, os, time
import numpy as np

def train(device: str, gpus: int, bs: int, steps: int, seed: int = 0) -> tuple[list[float], list[float], list[int]]:
  """Losses, wall seconds and chip cycles of each step (the first compiles)."""
  import tinytpu
  from tinygrad import Tensor, TinyJit, nn
  from tinygrad.helpers import Context
  from tinytpu.real import MnistCNN as CNN
  devices = tuple(f"{device}:{i}" for i in range(gpus))
  Tensor.manual_seed(seed)
  rng = np.random.default_rng(seed)
  with Context(DEV=device):
    x_train = Tensor(rng.integers(0, 256, (512, 1, 28, 28), dtype=np.uint8))
    y_train = Tensor(rng.integers(0, 10, 512, dtype=np.int32))
    model = CNN()
    for x in nn.state.get_state_dict(model).values(): x.to_(devices)
    opt = nn.optim.Adam(nn.state.get_parameters(model))

    @TinyJit
    def step() -> Tensor:
      with Context(TRAINING=1):
        opt.zero_grad()
        samples = Tensor.randint(bs, high=x_train.shape[0])
        xt, yt = x_train[samples].shard_(devices, axis=0), y_train[samples].shard_(devices, axis=0)
        loss = model(xt).sparse_categorical_crossentropy(yt).backward()
        opt.step()
        return loss

    losses, walls, cycles = [], [], []
    for _ in range(steps):
      tinytpu.reset_counters()
      start = time.perf_counter()
      losses.append(step().item())
      walls.append(time.perf_counter() - start)
      cycles.append(tinytpu.counters()["chip_cycles"] if device == "TINYTPU" else 0)
  return losses, walls, cycles

def plot(rows: list[dict], out: str) -> None:
  """The chip's cycles for a training step (the last, warm one) against the cores it is sharded over, beside ideal
  scaling from one core."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  runs = sorted((r["gpus"], r["chip_cycles"][-1]) for r in rows if r["device"] == "TINYTPU" and r["async"])
  gpus, cycles = [g for g, _ in runs], [c / 1e9 for _, c in runs]
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.plot(gpus, cycles, "o-", label="chip cycles per step (TINYTPU:0..GPUS-1)")
  if gpus[0] == 1: ax.plot(gpus, [cycles[0] / g for g in gpus], "k:", label="ideal: one core's / cores")
  for g, c in zip(gpus, cycles): ax.annotate(f"{cycles[0] / c:.2f}x" if gpus[0] == 1 else f"{c:.2f}", (g, c),
                                             textcoords="offset points", xytext=(6, 6))
  ax.set_xticks(gpus)
  ax.set_xlabel("cores the batch is sharded over (GPUS)")
  ax.set_ylabel("G chip cycles per training step")
  ax.set_ylim(0, max(cycles) * 1.15)
  ax.legend()
  ax.set_title("beautiful_mnist_multigpu on a 4-core chip (chip4, BS=64)", fontsize=10)
  fig.tight_layout()
  fig.savefig(out, dpi=100)
  plt.close(fig)

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--gpus", default="1,2,4")
  ap.add_argument("--bs", type=int, default=64)
  ap.add_argument("--steps", type=int, default=3)
  ap.add_argument("--config", default="chip4", help="the chip configuration TINYTPU runs on (TINYTPU_CONFIG)")
  ap.add_argument("--serial", action="store_true", help="also run TINYTPU's cores one after another (TINYTPU_ASYNC=0)")
  ap.add_argument("--json", action="store_true")
  ap.add_argument("--plot", help="draw the chip's cycles per step against GPUS into this PNG")
  ap.add_argument("--ab", type=int, default=0, help="time the cores at once and one after another, N times each")
  args = ap.parse_args()
  os.environ["TINYTPU_CONFIG"] = args.config  # before the first TINYTPU device opens
  if args.ab:
    for gpus in map(int, args.gpus.split(",")):
      train("TINYTPU", gpus, args.bs, args.steps)  # compiles
      for mode in "10" * args.ab:
        os.environ["TINYTPU_ASYNC"] = mode
        losses, walls, cycles = train("TINYTPU", gpus, args.bs, args.steps)
        print(f"GPUS={gpus} {'at once' if mode == '1' else 'one after another':17s} warm steps {sum(walls[2:]):6.2f} s "
              f"(steps {' '.join(f'{w:.2f}' for w in walls)})  loss {losses[-1]:.4f}  chip cycles {cycles[-1]:,}", flush=True)
    return
  rows = []
  for gpus in map(int, args.gpus.split(",")):
    runs = [("CPU", "1"), ("TINYTPU", "1")] + ([("TINYTPU", "0")] if args.serial else [])
    for device, mode in runs:
      os.environ["TINYTPU_ASYNC"] = mode
      losses, walls, cycles = train(device, gpus, args.bs, args.steps)
      rows.append({"gpus": gpus, "device": device, "async": mode == "1", "losses": losses, "walls": walls,
                   "chip_cycles": cycles, "wall": sum(walls)})
      if not args.json:
        print(f"GPUS={gpus} {device:7s}{'' if mode == '1' else ' serial'}  wall {sum(walls):7.1f} s (steps "
              f"{' '.join(f'{w:.1f}' for w in walls)})  losses {' '.join(f'{l:.4f}' for l in losses)}"
              + (f"  chip cycles/step {' '.join(f'{c:,}' for c in cycles)}" if device == "TINYTPU" else ""), flush=True)
  if args.json: print(json.dumps(rows, indent=1))
  if args.plot: plot(rows, args.plot)

if __name__ == "__main__":
  main()
