#!/usr/bin/env python3
"""Runs the libFuzzer targets (fuzz/fuzz_*.cc, built by `make fuzz`) two at a time and fails on any finding.

Each target's working corpus lives in the build directory and starts from the committed seeds: kernels/
and fuzz/corpus/. A finding (crash, sanitizer report, escaping exception, broken invariant, timeout,
out of memory) is written by libFuzzer under BUILD/findings/TARGET/ and its path printed here."""
import argparse, pathlib, re, shutil, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parent.parent
TASM = ["kernels/seed/*.tasm", "fuzz/corpus/tasm/*"]
WIRE = ["kernels/reference/*.bundle", "fuzz/corpus/wire/*"]
# target: (seed globs, dictionary)
TARGETS = {
  "assemble": (TASM, "fuzz/tasm.dict"),
  "wire": (WIRE + TASM, None),
  "roundtrip": (TASM + WIRE, "fuzz/tasm.dict"),
  "run": (TASM + WIRE, "fuzz/tasm.dict"),
  "ir": (["fuzz/corpus/ir/*"], "fuzz/ir.dict"),
  "compile": (["fuzz/corpus/ir/*"], "fuzz/ir.dict"),
}

def seed(corpus: pathlib.Path, globs: list[str]) -> None:
  corpus.mkdir(parents=True, exist_ok=True)
  for g in globs:
    for f in ROOT.glob(g):
      if not (corpus / f.name).exists(): shutil.copy(f, corpus / f.name)

def fuzz(target: str, build: pathlib.Path, seconds: int, runs: int) -> dict:
  globs, dictionary = TARGETS[target]
  corpus, findings, log = build / "corpus" / target, build / "findings" / target, build / "logs" / f"{target}.log"
  seed(corpus, globs)
  findings.mkdir(parents=True, exist_ok=True)
  log.parent.mkdir(parents=True, exist_ok=True)
  cmd = [str(build / f"fuzz_{target}"), str(corpus), f"-artifact_prefix={findings}/", "-timeout=10",
         "-rss_limit_mb=2048", "-print_final_stats=1", "-max_len=8192"]
  cmd += [f"-runs={runs}"] if runs else [f"-max_total_time={seconds}"]
  if dictionary: cmd.append(f"-dict={ROOT / dictionary}")
  start = time.monotonic()
  with open(log, "w") as out: rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
  text = log.read_text(errors="replace")
  stat = lambda name: int(m.group(1)) if (m := re.search(rf"stat::{name}:\s+(\d+)", text)) else 0
  cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
  return {"target": target, "rc": rc, "log": log, "runs": stat("number_of_executed_units"), "secs": time.monotonic() - start,
          "cov": cov[-1][0] if cov else "?", "ft": cov[-1][1] if cov else "?", "corpus": len(list(corpus.iterdir())),
          "finding": (m.group(1) if (m := re.search(r"Test unit written to (\S+)", text)) else None)}

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("targets", nargs="*", metavar="TARGET", help=f"some of {', '.join(TARGETS)} (default: all)")
  ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build" / "fuzz")
  ap.add_argument("--seconds", type=int, default=60, help="time per target (default 60: CI's short mode)")
  ap.add_argument("--runs", type=int, default=0, help="inputs per target instead of a time (long mode: 1000000)")
  ap.add_argument("--jobs", type=int, default=2, help="targets run at once")
  args = ap.parse_args()
  if unknown := set(args.targets) - set(TARGETS): ap.error(f"unknown targets: {', '.join(sorted(unknown))}")
  targets = args.targets or list(TARGETS)
  with ThreadPoolExecutor(args.jobs) as pool:
    results = list(pool.map(lambda t: fuzz(t, args.build.resolve(), args.seconds, args.runs), targets))
  failed = 0
  for r in results:
    ok = r["rc"] == 0
    print(f"fuzz_{r['target']:<10} {'ok' if ok else 'FINDING':8} {r['runs']:>10} inputs in {r['secs']:6.0f} s  "
          f"cov {r['cov']:>5}  ft {r['ft']:>6}  corpus {r['corpus']}")
    if not ok:
      failed += 1
      print(f"  input: {r['finding'] or '(none written)'}\n  log:   {r['log']}")
      print("  " + "\n  ".join(r["log"].read_text(errors="replace").splitlines()[-25:]))
  return 1 if failed else 0

if __name__ == "__main__": sys.exit(main())
