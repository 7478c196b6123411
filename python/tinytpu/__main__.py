"""tinytpu command line: run, asm, disasm, seeds, opcodes, configs, demo, profile, explore, compare, llm. Bad input or
arguments: one line on stderr naming the file or argument, exit status 1 (2 for arguments), no traceback."""
from __future__ import annotations
import argparse, json, os, sys, warnings
from importlib import metadata, resources
from tinytpu import _core, configs, device, model, trace

class ArgumentParser(argparse.ArgumentParser):
  def error(self, message: str):  # one line, not the usage block
    self.exit(2, f"{self.prog}: error: {message} (--help for usage)\n")

def _whole(lo: int, hi: int | None = None):
  """An argparse type: a whole number in [lo, hi]."""
  def parse(text: str) -> int:
    if not text.strip().lstrip("+").isdigit() or int(text) < lo or (hi is not None and int(text) > hi):
      raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {lo}" + (f" and <= {hi:,}" if hi else ""))
    return int(text)
  return parse

def _checked(parse):
  """An argparse type from a parser raising ValueError."""
  def check(text: str):
    try: return parse(text)
    except ValueError as e: raise argparse.ArgumentTypeError(str(e)) from None
  return check

def seeds() -> list[str]:
  """The seed programs the package carries (kernels/seed of the repository; none in a bare source copy)."""
  seed = resources.files("tinytpu").joinpath("seed")
  return sorted(f.name.removesuffix(".tasm") for f in seed.iterdir() if f.name.endswith(".tasm")) if seed.is_dir() else []

def _read(path: str) -> str:
  """A file's text ('-': stdin); a seed program's name stands for the program. ValueError naming the file."""
  name = "stdin" if path == "-" else path
  if path != "-" and not os.path.exists(path) and path.removesuffix(".tasm") in seeds():
    return resources.files("tinytpu").joinpath("seed", path.removesuffix(".tasm") + ".tasm").read_text()
  try:
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
  except FileNotFoundError:
    raise ValueError(f"{path}: no such file (nor a seed program: {', '.join(seeds())})") from None
  except OSError as e:
    raise ValueError(f"{name}: {e.strerror.lower()}") from None
  if not data.strip(): raise ValueError(f"{name}: empty: a TASM program or numeric bundle was expected")
  try:
    return data.decode()
  except UnicodeDecodeError as e:
    raise ValueError(f"{name}: not a text file (byte 0x{data[e.start]:02x} at offset {e.start} is not UTF-8): "
                     "a TASM program or numeric bundle was expected") from None

def _on(path: str, fn, *args, **kw):
  """fn(*args, **kw), its ValueError or SimError naming the file."""
  try: return fn(*args, **kw)
  except (ValueError, _core.SimError) as e: raise type(e)(f"{path}: {e}") from None

def cmd_run(args) -> None:
  text, log = _read(args.file), trace.new_log(args.trace_max_events, args.trace_cycles, _core) if args.trace else None
  r = _on(args.file, model.run_bundle, text, max_cycles=args.max_cycles, trace=log)
  if log is not None:
    trace.check(log)
    trace.write(args.trace, log)
  if args.json:
    print(json.dumps({"cycles": r.cycles, "sxu_cycles": r.sxu_cycles, "vmem_results": r.vmem_results,
                      "mxu_result": r.mxu_result, "asram_results": r.asram_results}))
  else:
    print(r.output, end="")

def cmd_configs(args) -> None:
  from tinytpu import configs
  rows = configs.named()
  if args.json: return print(json.dumps(rows, indent=1))
  w = max(len(r["name"]) for r in rows)
  mxu = lambda r: r["mxu"]["dtype"] + (" pipe" if r["mxu"]["pipelined"] else "")
  print(f"{'name':{w}} {'MXU':<14} {'PEs':>4} {'PE area':>7} {'SRAM B':>7} {'ports':>5} {'area':>7}  change")
  for r in rows:
    print(f"{r['name']:{w}} {mxu(r):<14} {r['pes']:>4} {r['pe_area']:>7.2f} {r['sram_bytes']:>7} {r['ports']:>5} "
          f"{r['area']:>7.1f}  {r['change']}")
  print(f"\nselect one with {configs.ENV}=NAME (or NAME,field=value,...); area counts an int8 PE, 256 SRAM bytes and a "
        "port or forwarding path as 1 each, a float PE beside an int8 one its arithmetic's area in int8 PEs (PE area)")

def cmd_opcodes(args) -> None:
  rows = _core.sxu_ops()
  if args.json: return print(json.dumps(rows, indent=1))
  columns = [k for k in rows[0] if k not in ("opcode", "name", "tasm")]  # sxu_ops.def's columns, in its order
  w = max(len(r["name"]) for r in rows)
  print(f"{'op':>3} {'name':{w}} " + " ".join(columns) + "  TASM")
  for r in rows:
    print(f"{r['opcode']:>3} {r['name']:{w}} " + " ".join(f"{'-' if r[c] is None else r[c]:>{len(c)}}" for c in columns) +
          f"  {r['tasm']}")

def cmd_demo(args) -> None:
  from tinytpu.demo import main as demo
  demo()

def cmd_compare(args) -> None:
  from tinytpu import compare
  names = [n.strip() for n in args.models.split(",")]
  if unknown := [n for n in names if n not in compare.MODELS]:
    raise ValueError(f"--models: no model {', '.join(unknown)} (models: {', '.join(compare.MODELS)})")
  data = compare.load_data(args.data) if args.data else None
  rows = compare.compare(names, args.steps, args.test, args.percentile, args.config, data)
  print(json.dumps(rows, indent=1) if args.json else compare.table(rows))

def cmd_llm(args) -> None:
  from tinytpu import llm
  names = configs.split_specs(args.configs)
  bar = None
  if sys.stderr.isatty():
    from tqdm import tqdm
    bar = tqdm(total=len(names) * (1 + args.decode), unit="call", desc=f"{args.model} on TINYTPU", file=sys.stderr)
  try:
    rows = llm.run(args.model, names, args.prefill, args.decode, args.seed, args.weights, bar.update if bar else None,
                   args.cores, args.dtype)
  finally:
    if bar: bar.close()
  print(json.dumps(rows, indent=1) if args.json else llm.table(rows))

def cmd_profile(args) -> None:
  from tinytpu import events, profile
  if not os.path.isfile(args.script): raise ValueError(f"{args.script}: no such file")
  log = profile.run_script(args.script, args.args, max_events=args.trace_max_events, cycles=args.trace_cycles,
                           kernels=args.trace_kernels)
  tr = events.Trace(log)
  print(profile.report(tr, top=args.top, counters=device.counters(), config=configs.from_spec()))
  if args.trace:
    with open(args.trace, "w") as f: events.write_json(tr, f)
  if args.html:
    from tinytpu import pipeline
    with open(args.html, "w") as f: f.write(pipeline.html(tr, args.kernel))
    print(f"pipeline view: {args.html}")

def _bounds(p: argparse.ArgumentParser, kernels: bool) -> None:
  p.add_argument("--trace-max-events", type=_whole(0), metavar="N",
                 help=f"stop recording after N events (default {trace.DEFAULT_MAX_EVENTS:,}; 0: no cap)")
  p.add_argument("--trace-cycles", type=_checked(trace.parse_cycles), metavar="FROM:TO",
                 help="record only cycles [FROM, TO) of the timeline (either side may be left out)")
  if kernels:
    p.add_argument("--trace-kernels", type=_checked(trace.parse_kernels), metavar="REGEX",
                   help="record only the kernels whose name matches (the others run untraced)")

def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
  if not issubclass(category, trace.TraceCapWarning): return _default(message, category, filename, lineno, file, line)
  print(f"tinytpu: warning: {message}", file=sys.stderr)

def main(argv: list[str] | None = None) -> int:
  p = ArgumentParser(prog="tinytpu", description="TinyTPU TensorCore model and TASM toolchain")
  p.add_argument("--version", action="version",
                 version=f"tinytpu {metadata.version('tinytpu')} (tinygrad {metadata.version('tinygrad')})")
  sub = p.add_subparsers(dest="cmd", required=True)
  run = sub.add_parser("run", help="run a TASM program or numeric bundle and print the testbench's output")
  run.add_argument("file", help="a file, - for stdin, or a seed program's name (add_16, gemm_4x4x4, ...)")
  run.add_argument("--json", action="store_true", help="print one JSON object")
  run.add_argument("--max-cycles", type=_whole(1, 2**64 - 1), default=model.DEFAULT_MAX_CYCLES,
                   help=f"stop a run that has not halted after this many cycles (default {model.DEFAULT_MAX_CYCLES})")
  run.add_argument("--trace", metavar="OUT.json", help="write a Perfetto / chrome://tracing trace of the run")
  _bounds(run, kernels=False)
  run.set_defaults(fn=cmd_run)
  asm = sub.add_parser("asm", help="TASM -> numeric bundle")
  asm.add_argument("file")
  asm.set_defaults(fn=lambda a: print(_on(a.file, model.assemble, _read(a.file)), end=""))
  dis = sub.add_parser("disasm", help="numeric bundle -> TASM")
  dis.add_argument("file")
  dis.set_defaults(fn=lambda a: print(_on(a.file, model.disassemble, _read(a.file)), end=""))
  seed = sub.add_parser("seeds", help="list the seed programs `run` takes by name")
  seed.set_defaults(fn=lambda a: print("\n".join(seeds())))
  ops = sub.add_parser("opcodes", help="list the SXU opcodes with their table's columns (timing, MXU facts) and TASM")
  ops.add_argument("--json", action="store_true", help="print a JSON list of objects")
  ops.set_defaults(fn=cmd_opcodes)
  cfgs = sub.add_parser("configs", help="list the TensorCore variants TINYTPU_CONFIG selects, with their cost proxies")
  cfgs.add_argument("--json", action="store_true", help="print a JSON list of objects")
  cfgs.set_defaults(fn=cmd_configs)
  exp = sub.add_parser("explore", help="run workloads on TensorCore variants: time, energy and area, and the Pareto "
                       "front of two objectives; --search optuna searches a space too large to measure whole")
  exp.add_argument("--set", default="kernels,train", help="workload sets, comma-separated: kernels (the 11 "
                   "benchmark kernels), train (an MLP's training step), extended (large kernels: slow), real (an MNIST "
                   "CNN's training step, an attention block, int8 digits, a GPT-2 decode: minutes; on the named "
                   "configurations unless --grid); default kernels,train")
  exp.add_argument("--grid", action="append", metavar="FIELD=V1,V2",
                   help="values a field takes (repeatable; default: the fields and values in tinytpu.explore.SPACE)")
  exp.add_argument("--objectives", default="time,area", help="comma-separated, of time, energy, edp, area, perf, "
                   "perf_per_area: each but the last plotted against the last with its Pareto front (explore.png the "
                   "first's, explore-NAME.png the others'); the first is what --budget optimises, and a search all")
  exp.add_argument("--budget", type=float, metavar="AREA", help="propose the best configuration with area at most AREA")
  exp.add_argument("--search", choices=("grid", "optuna"), default="grid",
                   help="grid: measure every configuration (default); optuna: an Optuna study of --trials of them")
  exp.add_argument("--trials", type=_whole(1), default=48, help="configurations an Optuna search measures (default 48)")
  exp.add_argument("--seed", type=int, default=0, help="the Optuna sampler's seed")
  exp.add_argument("--batch", type=_whole(1), default=4, help="configurations an Optuna search asks for and measures "
                   "at once (default 4): the study depends on it, not on the cluster's size")
  exp.add_argument("--storage", help="the Optuna study's database URL (default sqlite:///OUT/explore.db): a study "
                   "of the same name found there is resumed")
  exp.add_argument("--study", help="the Optuna study's name (default: from the sets, objectives, budget and seed)")
  exp.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a dask.distributed scheduler to measure on "
                   "(default: a LocalCluster of --jobs worker processes)")
  exp.add_argument("--json", action="store_true", help="print a JSON list of rows, one per configuration and workload")
  exp.add_argument("--out", default="explore", help="directory for explore.png and explore.json (default ./explore)")
  exp.add_argument("--jobs", type=_whole(0), help="worker processes of the local cluster (default: the CPU count; 0: "
                   "measure one configuration after another in this process)")
  exp.set_defaults(fn=lambda a: __import__("tinytpu.explore").explore.main(a))
  cmp = sub.add_parser("compare", help="train small models in float32 on the digits, quantise them to int8 and "
                       "compare float32 and int8 on TINYTPU: accuracy, agreement, logit error, cycles, MXU busy")
  cmp.add_argument("--config", default="reference", help="the TensorCore configuration (a name or spec)")
  cmp.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp, cnn")
  cmp.add_argument("--steps", type=_whole(1), default=300, help="float32 training steps (Adam, batch 64)")
  cmp.add_argument("--test", type=_whole(1), default=397, help="held-out samples evaluated")
  cmp.add_argument("--data", metavar="FILE.npz", help="your samples instead of the digits: arrays x (one sample a row, "
                   "or images) and y (classes from 0)")
  cmp.add_argument("--percentile", type=float, help="calibrate activations at this percentile (default: maximum)")
  cmp.add_argument("--json", action="store_true", help="print a JSON list of rows")
  cmp.set_defaults(fn=cmd_compare)
  lm = sub.add_parser("llm", help="a GPT-2-shaped language model on TINYTPU: prefill P tokens, then decode D greedily "
                      "(KV cache, TinyJit): per configuration and phase, cycles, tokens/s, J/token, checked against CPU")
  lm.add_argument("--model", default="gpt2-tiny", help="gpt2-small (12 layers, dimension 768, vocabulary 50,257), "
                  "gpt2-mini (4 layers, 256) or gpt2-tiny (2 layers, 64, vocabulary 512; the default)")
  lm.add_argument("--configs", default="reference", help="comma-separated TensorCore configurations: names, each with its field=value items after it "
                  "(reference,chip4,hbm_shared=1)")
  lm.add_argument("--prefill", type=_whole(1), default=32, help="prompt tokens, prefilled in one call (default 32)")
  lm.add_argument("--decode", type=_whole(0), default=8, help="tokens decoded greedily after it (default 8)")
  lm.add_argument("--cores", type=_whole(1), help="on a chip, run tensor-parallel over its first N cores (default: all)")
  lm.add_argument("--dtype", default="float32", help="float32, or int8: the linear layers and the head quantised "
                  "(int8 weights per output channel, int8 inputs calibrated on the prompt, int32 sums on the MXU)")
  lm.add_argument("--seed", type=_whole(0), default=0, help="the seed of the weights and the prompt")
  lm.add_argument("--weights", metavar="FILE.safetensors", help="the model's weights from a file, under its names "
                  "(wte.weight, h.0.q.weight, ...) instead of seeded ones")
  lm.add_argument("--json", action="store_true", help="print a JSON list of rows, one per configuration and phase")
  lm.set_defaults(fn=cmd_llm)
  sub.add_parser("demo", help="run the demo").set_defaults(fn=cmd_demo)
  prof = sub.add_parser("profile", help="run a script on TINYTPU and report where the cycles go")
  prof.add_argument("script")
  prof.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
  prof.add_argument("--top", type=_whole(1), default=5, help="kernels and instructions listed in detail")
  prof.add_argument("--trace", metavar="OUT.json", help="also write the Perfetto / chrome://tracing trace")
  prof.add_argument("--html", metavar="OUT.html", help="write the pipeline view of one kernel call")
  prof.add_argument("--kernel", help="the call the pipeline view shows: a kernel name (its first call) or a "
                    "call number; default the call with the most cycles")
  _bounds(prof, kernels=True)
  prof.set_defaults(fn=cmd_profile)
  args = p.parse_args(argv)
  warnings.showwarning = _show_warning
  try:
    args.fn(args)
  except (ValueError, _core.SimError, OSError) as e:
    print(f"tinytpu: error: {e}", file=sys.stderr)
    return 1
  except KeyboardInterrupt:
    print("tinytpu: interrupted", file=sys.stderr)
    return 130
  return 0

if __name__ == "__main__":
  sys.exit(main())
