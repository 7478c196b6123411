"""The random differential program harness (harness/random_programs.py) in short mode: a fixed range of seeds, each
program in its own process on TINYTPU and on a reference device. None may crash, hang, raise an unexpected error or
give a wrong answer (the harness's FAILURES), and none may be refused unless ALLOWED_REFUSALS names the refusal.
TINYTPU_HARNESS_SEED and TINYTPU_HARNESS_COUNT pick another range for a local run."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness" / "random_programs.py"

def harness_constant(name: str):
  """A constant of the harness, read from its source: importing it would set tinygrad's PARALLEL in this process."""
  tree = ast.parse(HARNESS.read_text())
  return next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and
              any(isinstance(t, ast.Name) and t.id == name for t in n.targets))

FAILURES = harness_constant("FAILURES")  # crash, hang, wrong, unexpected error, reference error, generator error
PASSES = ("exact", "tolerance")
# A clean refusal (the harness's "clean error": NotImplementedError or ValueError raised before any result) passes
# only when its detail matches one of these patterns (re.search), each kept with the reason TINYTPU may refuse it.
# The generator draws only ops and dtypes TINYTPU runs, and no seed meets a refusal today (python
# harness/random_programs.py --count 200 --seed 0 --jobs 2: clean errors 0; seeds 200-1199 too), so the list is
# empty: a refusal is a program TINYTPU stopped running, and fails the test.
ALLOWED_REFUSALS: dict[str, str] = {}

def refusal_allowed(detail: str) -> bool:
  return any(re.search(pattern, detail) for pattern in ALLOWED_REFUSALS)

def reproducers(results: list[dict]) -> str:
  return "\n".join(f"{r['status']} seed {r['seed']}: {r.get('detail', '')}\n"
                   f"  python harness/random_programs.py --case {r['seed']}" for r in results)

def test_random_programs_do_not_crash_hang_or_differ(tmp_path):
  seed, count = int(os.getenv("TINYTPU_HARNESS_SEED", "0")), int(os.getenv("TINYTPU_HARNESS_COUNT", "200"))
  report = tmp_path / "results.json"
  # the harness forks a case per process: it runs in a fresh interpreter, where no device thread is running yet
  out = subprocess.run([sys.executable, str(HARNESS), "--seed", str(seed), "--count", str(count), "--jobs", "2", "--timeout", "60",
                        "--json", str(report)], capture_output=True, text=True)
  assert report.exists(), out.stdout + out.stderr
  results = json.loads(report.read_text())
  assert sorted(r["seed"] for r in results) == list(range(seed, seed + count))
  summary = out.stdout.splitlines()[0] if out.stdout else out.stderr
  unknown = [r for r in results if r["status"] not in (*PASSES, "clean error", *FAILURES)]
  assert not unknown, summary + "\nstatuses this test does not know:\n" + reproducers(unknown)
  bad = [r for r in results if r["status"] in FAILURES]
  assert not bad, summary + "\n" + reproducers(bad)
  refused = [r for r in results if r["status"] == "clean error"]
  not_allowed = [r for r in refused if not refusal_allowed(r["detail"])]
  assert not not_allowed, summary + "\nrefusals not in ALLOWED_REFUSALS:\n" + reproducers(not_allowed)
  assert out.returncode == 0, summary + "\n" + out.stderr[-2000:]  # the harness's own verdict: no case in its FAILURES

SELF_TEST = """
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import random_programs
def case(seed):
  if seed == 1: os.kill(os.getpid(), signal.SIGSEGV)
  if seed == 2: time.sleep(60)
  if seed == 3: os._exit(3)
  if seed in (4, 5):  # dies while running on a device, as the harness reports it
    print(random_programs.RUNNING + ("CPU" if seed == 4 else "TINYTPU"), file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGFPE)
  return {"seed": seed, "status": "exact"}
print(json.dumps({r["seed"]: r["status"] for r in random_programs.run_forked(range(7), 2, 2.0, case=case)}))
"""

def test_harness_reports_crashes_and_hangs_and_runs_on():
  # a crash of a reference device is the reference's fault, not TINYTPU's
  out = subprocess.run([sys.executable, "-c", SELF_TEST, str(HARNESS.parent)], capture_output=True, text=True, timeout=60)
  assert out.returncode == 0, out.stderr
  assert json.loads(out.stdout) == {"0": "exact", "1": "crash", "2": "hang", "3": "crash", "4": "reference error", "5": "crash",
                                    "6": "exact"}
