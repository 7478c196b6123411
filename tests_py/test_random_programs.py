"""The random differential program harness (harness/random_programs.py) in short mode: a fixed range of seeds, each
program in its own process on TINYTPU and on a reference device. None may crash, hang or give a wrong answer.
TINYTPU_HARNESS_SEED and TINYTPU_HARNESS_COUNT pick another range for a local run."""
import json
import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness" / "random_programs.py"
MUST_NOT = ("crash", "hang", "wrong", "reference error", "generator error")  # the last two: the harness itself is broken

def test_random_programs_do_not_crash_hang_or_differ(tmp_path):
  seed, count = int(os.getenv("TINYTPU_HARNESS_SEED", "0")), int(os.getenv("TINYTPU_HARNESS_COUNT", "200"))
  report = tmp_path / "results.json"
  # the harness forks a case per process: it runs in a fresh interpreter, where no device thread is running yet
  out = subprocess.run([sys.executable, str(HARNESS), "--seed", str(seed), "--count", str(count), "--jobs", "2", "--timeout", "60",
                        "--json", str(report)], capture_output=True, text=True)
  assert report.exists(), out.stdout + out.stderr
  results = json.loads(report.read_text())
  assert len(results) == count
  bad = [r for r in results if r["status"] in MUST_NOT]
  assert not bad, out.stdout.splitlines()[0] + "\n" + "\n".join(
    f"{r['status']} seed {r['seed']}: {r['detail']}\n  python harness/random_programs.py --case {r['seed']}" for r in bad)

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
