"""Differential test against the reference Bluesim testbench (not part of `make test`: it needs bsc).

  TINYTPU_REF_SIM=/path/to/run_ref.sh python tools/refdiff.py --count 200 [--start 0] [--save DIR]

Runs random programs (tools/gen_programs.py) or given files on both simulators and compares the
testbench's whole stdout. --save keeps each bundle with the reference's output as a golden pair.
"""
from __future__ import annotations
import argparse, os, pathlib, subprocess, sys, tempfile
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tinytpu
from gen_programs import program

def reference(bundle: str) -> str:
  with tempfile.NamedTemporaryFile("w", suffix=".bundle", delete=False) as f:
    f.write(bundle)
  try:
    out = subprocess.run([os.environ["TINYTPU_REF_SIM"], f.name], capture_output=True, text=True, timeout=300)
    return "".join(l + "\n" for l in out.stdout.splitlines() if not l.startswith("WARNING"))
  finally:
    os.unlink(f.name)

def ours(bundle: str) -> str:
  try:
    return tinytpu.run_bundle(bundle).output
  except tinytpu.SimError as e:
    return f"SimError: {e}\n"

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--count", type=int, default=50)
  ap.add_argument("--start", type=int, default=0)
  ap.add_argument("--length", type=int, default=40)
  ap.add_argument("--save", type=pathlib.Path)
  ap.add_argument("files", nargs="*")
  args = ap.parse_args()
  cases = [(pathlib.Path(f).stem, pathlib.Path(f).read_text()) for f in args.files] or \
          [(f"seed{s}", program(s, args.length)) for s in range(args.start, args.start + args.count)]
  bad = 0
  for name, src in cases:
    bundle = tinytpu.assemble(src) if not src.lstrip()[:1].isdigit() else src
    ref, mine = reference(bundle), ours(bundle)
    # A reference hang (its 50000-cycle timeout) must be a SimError here.
    same = ref == mine or (ref.startswith("FAIL: timeout") and mine.startswith("SimError"))
    bad += not same
    print(f"{name}: {'same' if same else 'DIFFERENT'} ({ref.splitlines()[-2] if len(ref.splitlines()) > 1 else ref.strip()})")
    if not same:
      for i, (a, b) in enumerate(zip(ref.splitlines(), mine.splitlines())):
        if a != b: print(f"  line {i}\n    ref:  {a}\n    ours: {b}")
    if args.save and same and not mine.startswith("SimError"):
      args.save.mkdir(parents=True, exist_ok=True)
      (args.save / f"{name}.bundle").write_text(bundle)
      (args.save / f"{name}.expected").write_text(ref)
  print(f"{len(cases) - bad} same, {bad} different")
  return 1 if bad else 0

if __name__ == "__main__":
  sys.exit(main())
