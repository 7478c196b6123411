"""tinygrad's examples/gpt2.py model (its Transformer, tiny, random weights) decoding greedily on TINYTPU and on
tinygrad's CPU device: the tokens must be the same. On a configuration with a SparseCore (chip4 by default: TINYTPU
is its core 0) a decode step's token and position embeddings are rows a launch-time variable picks, and the loader
hands them to the SparseCore where it has them in sooner: counters()['sc_lookups'] counts them. The model's code is
imported from a tinygrad checkout (--tinygrad, or TINYGRAD_TESTS); nothing of it is copied here.

  python -m bench.gpt2_decode --tinygrad /path/to/tinygrad [--config chip4] [--tokens 8] [--json]
"""
import argparse, json, os, sys, time

def decode(gpt2, device: str, tokens: int) -> tuple[list[int], float]:
  """The tokens greedily decoded after the prompt (temperature 0), and the wall seconds."""
  from tinytpu import real
  start = time.perf_counter()
  return real.gpt2_tokens(gpt2, device, tokens), time.perf_counter() - start

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--tinygrad", default=os.getenv("TINYGRAD_TESTS"), help="a tinygrad checkout (its examples/gpt2.py)")
  ap.add_argument("--config", default="chip4", help="the configuration TINYTPU runs on (TINYTPU_CONFIG)")
  ap.add_argument("--tokens", type=int, default=8)
  ap.add_argument("--json", action="store_true")
  args = ap.parse_args()
  if not args.tinygrad or not os.path.isfile(os.path.join(args.tinygrad, "examples", "gpt2.py")):
    raise SystemExit("need a tinygrad checkout with examples/gpt2.py: --tinygrad PATH or TINYGRAD_TESTS=PATH")
  os.environ["TINYTPU_CONFIG"], os.environ["MAX_CONTEXT"] = args.config, "32"  # before the device opens, gpt2 imports
  sys.path.append(args.tinygrad)  # its examples package; tinygrad itself stays the installed, pinned one
  import tinytpu
  import examples.gpt2 as gpt2
  cpu, cpu_s = decode(gpt2, "CPU", args.tokens)
  tinytpu.reset_counters()
  tpu, tpu_s = decode(gpt2, "TINYTPU", args.tokens)
  row = {"config": args.config, "tokens_cpu": cpu, "tokens_tinytpu": tpu, "same": cpu == tpu, "cpu_s": round(cpu_s, 2),
         "tinytpu_s": round(tpu_s, 2), **{k: v for k, v in tinytpu.counters().items() if k in ("kernels", "launches", "cycles",
                                                                                      "hbm_bytes", "sc_lookups")}}
  if args.json: print(json.dumps(row))
  else: print("\n".join(f"{k:15s} {v}" for k, v in row.items()))
  if not row["same"]: raise SystemExit("TINYTPU decoded other tokens than CPU")

if __name__ == "__main__":
  main()
