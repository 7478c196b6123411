"""tinytpu command line: run, asm, disasm, demo, profile."""
from __future__ import annotations
import argparse, json, sys
import tinytpu
from tinytpu import _core, trace

def _read(path: str) -> str:
  return sys.stdin.read() if path == "-" else open(path).read()

def cmd_run(args) -> None:
  log = _core.TraceLog() if args.trace else None
  r = tinytpu.run_bundle(_read(args.file), max_cycles=args.max_cycles, trace=log)
  if log is not None: trace.write(args.trace, log)
  if args.json:
    print(json.dumps({"cycles": r.cycles, "sxu_cycles": r.sxu_cycles, "vmem_results": r.vmem_results,
                      "mxu_result": r.mxu_result, "asram_results": r.asram_results}))
  else:
    print(r.output, end="")

def cmd_demo(args) -> None:
  from tinytpu.demo import main as demo
  demo()

def cmd_profile(args) -> None:
  from tinytpu import events, profile
  tr = events.Trace(profile.run_script(args.script, args.args))
  print(profile.report(tr, top=args.top))
  if args.trace:
    with open(args.trace, "w") as f: events.write_json(tr, f)
  if args.html:
    from tinytpu import pipeline
    with open(args.html, "w") as f: f.write(pipeline.html(tr, args.kernel))
    print(f"pipeline view: {args.html}")

def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="tinytpu", description="TinyTPU TensorCore model and TASM toolchain")
  sub = p.add_subparsers(dest="cmd", required=True)
  run = sub.add_parser("run", help="run a TASM program or numeric bundle and print the testbench's output")
  run.add_argument("file")
  run.add_argument("--json", action="store_true", help="print one JSON object")
  run.add_argument("--max-cycles", type=int, default=tinytpu.DEFAULT_MAX_CYCLES)
  run.add_argument("--trace", metavar="OUT.json", help="write a Perfetto / chrome://tracing trace of the run")
  run.set_defaults(fn=cmd_run)
  asm = sub.add_parser("asm", help="TASM -> numeric bundle")
  asm.add_argument("file")
  asm.set_defaults(fn=lambda a: print(tinytpu.assemble(_read(a.file)), end=""))
  dis = sub.add_parser("disasm", help="numeric bundle -> TASM")
  dis.add_argument("file")
  dis.set_defaults(fn=lambda a: print(tinytpu.disassemble(_read(a.file)), end=""))
  sub.add_parser("demo", help="run the demo").set_defaults(fn=cmd_demo)
  prof = sub.add_parser("profile", help="run a script on TINYTPU and report where the cycles go")
  prof.add_argument("script")
  prof.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
  prof.add_argument("--top", type=int, default=5, help="kernels and instructions listed in detail")
  prof.add_argument("--trace", metavar="OUT.json", help="also write the Perfetto / chrome://tracing trace")
  prof.add_argument("--html", metavar="OUT.html", help="write the pipeline view of one kernel call")
  prof.add_argument("--kernel", help="the call the pipeline view shows: a kernel name (its first call) or a "
                    "call number; default the call with the most cycles")
  prof.set_defaults(fn=cmd_profile)
  args = p.parse_args(argv)
  try:
    args.fn(args)
  except (ValueError, tinytpu.SimError, OSError) as e:
    print(f"tinytpu: error: {e}", file=sys.stderr)
    return 1
  return 0

if __name__ == "__main__":
  sys.exit(main())
