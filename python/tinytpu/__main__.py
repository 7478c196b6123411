"""tinytpu command line: run, asm, disasm, demo."""
from __future__ import annotations
import argparse, json, sys
import tinytpu

def _read(path: str) -> str:
  return sys.stdin.read() if path == "-" else open(path).read()

def cmd_run(args) -> None:
  r = tinytpu.run_bundle(_read(args.file), max_cycles=args.max_cycles)
  if args.json:
    print(json.dumps({"cycles": r.cycles, "sxu_cycles": r.sxu_cycles, "vmem_results": r.vmem_results,
                      "mxu_result": r.mxu_result, "asram_results": r.asram_results}))
  else:
    print(r.output, end="")

def cmd_demo(args) -> None:
  from tinytpu.demo import main as demo
  demo()

def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="tinytpu", description="TinyTPU TensorCore model and TASM toolchain")
  sub = p.add_subparsers(dest="cmd", required=True)
  run = sub.add_parser("run", help="run a TASM program or numeric bundle and print the testbench's output")
  run.add_argument("file")
  run.add_argument("--json", action="store_true", help="print one JSON object")
  run.add_argument("--max-cycles", type=int, default=tinytpu.DEFAULT_MAX_CYCLES)
  run.set_defaults(fn=cmd_run)
  asm = sub.add_parser("asm", help="TASM -> numeric bundle")
  asm.add_argument("file")
  asm.set_defaults(fn=lambda a: print(tinytpu.assemble(_read(a.file)), end=""))
  dis = sub.add_parser("disasm", help="numeric bundle -> TASM")
  dis.add_argument("file")
  dis.set_defaults(fn=lambda a: print(tinytpu.disassemble(_read(a.file)), end=""))
  sub.add_parser("demo", help="run the demo").set_defaults(fn=cmd_demo)
  args = p.parse_args(argv)
  try:
    args.fn(args)
  except (ValueError, tinytpu.SimError, OSError) as e:
    print(f"tinytpu: error: {e}", file=sys.stderr)
    return 1
  return 0

if __name__ == "__main__":
  sys.exit(main())
