"""A soak on a chip: bench/mnist_multigpu's sharded training (the MNIST CNN, its batch sharded over GPUS cores of the
chip, Adam, TinyJit) repeated from the same seed for MINUTES in one process. Each repeat must give the first's losses
exactly, and from the second on the second's chip cycles (the first starts with no program resident in the cores'
program memories, later ones with the last repeat's: a few cycles apart, and then the same); the process's RSS is
printed once a minute, and the growth from minute 2 to the end is reported against the RSS at minute 2 (the first
minute compiles).

  TINYTPU_CONFIG=chip4 python -m bench.chip_soak [--minutes 10] [--gpus 4] [--bs 32] [--steps 3] [--json]
"""
import argparse, gc, json, os, time

def rss() -> int:
  gc.collect()
  with open("/proc/self/statm") as f: return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

if __name__ == "__main__":
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--minutes", type=float, default=10); p.add_argument("--gpus", type=int, default=4)
  p.add_argument("--bs", type=int, default=32); p.add_argument("--steps", type=int, default=3)
  p.add_argument("--json", action="store_true")
  args = p.parse_args()
  os.environ.setdefault("TINYTPU_CONFIG", "chip4")
  from bench.mnist_multigpu import train
  start, runs, repeats, samples = time.perf_counter(), [], 0, []
  while (elapsed := time.perf_counter() - start) < args.minutes * 60 or len(samples) < 2:
    losses, _, cycles = train("TINYTPU", args.gpus, args.bs, args.steps)
    runs = runs[:2] + [(losses, cycles)]
    if losses != runs[0][0] or (len(runs) > 2 and cycles != runs[1][1]):
      raise SystemExit(f"repeat {repeats}: losses {losses} and cycles {cycles}, against the first's losses "
                       f"{runs[0][0]} and the second's cycles {runs[1][1]}")
    repeats += 1
    if int(elapsed // 60) + 1 > len(samples):  # once a minute
      samples.append({"minute": len(samples) + 1, "repeats": repeats, "rss_mb": rss() / 2**20})
      if not args.json: print(f"minute {samples[-1]['minute']:>3}: {repeats} repeats, RSS {samples[-1]['rss_mb']:.1f} MB",
                              flush=True)
  base = samples[1]["rss_mb"]
  out = {"repeats": repeats, "losses": runs[0][0], "chip_cycles": [r[1] for r in runs[:2]], "rss": samples,
         "growth_from_minute_2": (samples[-1]["rss_mb"] - base) / base}
  if args.json: print(json.dumps(out, indent=1))
  else: print(f"{repeats} repeats, each with the first's losses and the second's cycles; RSS from minute 2 to "
              f"{samples[-1]['minute']}: {100 * out['growth_from_minute_2']:+.2f}%")
