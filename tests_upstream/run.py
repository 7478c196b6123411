#!/usr/bin/env python3
# Runs tinygrad's test/backend and test/models files from a tinygrad checkout on TINYTPU, each file in its own pytest
# process with the tinytpu_expected plugin, so a test that crashes or trips upstream's 300 s watchdog (SIGABRT) ends
# only its own process: it is recorded and the file goes on without it. Prints every new failure and unexpected pass
# and one summary line; exits 1 on either.
import argparse, concurrent.futures, json, os, pathlib, signal, subprocess, sys, time
from tinytpu_expected import WATCHDOG, is_unexpected_pass, load_expected, matches

HERE = pathlib.Path(__file__).resolve().parent

def stage(checkout: pathlib.Path, stage_dir: pathlib.Path):
  # tests, their helpers and upstream's conftest/pytest config, but not the checkout's tinygrad/: the tests import the
  # installed tinygrad (the pinned version tinytpu is built for)
  stage_dir.mkdir(parents=True, exist_ok=True)
  for name in ("test", "extra", "examples", "conftest.py", "pyproject.toml"):
    link = stage_dir / name
    if link.is_symlink(): link.unlink()
    if (checkout / name).exists(): link.symlink_to(checkout / name)

def read_log(path: pathlib.Path) -> list[dict]:
  return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

def run_file(stage_dir: pathlib.Path, test_file: str, log_dir: pathlib.Path, pytest_args: list[str]) -> list[dict]:
  log = log_dir / (test_file.replace("/", "_") + ".jsonl")
  done, out = log.with_suffix(".done"), log.with_suffix(".out")
  for path in (log, done, out): path.unlink(missing_ok=True)
  env = {**os.environ, "DEV": "TINYTPU", "RUN_SLOW": "1", "TINYTPU_UPSTREAM_LOG": str(log), "TINYTPU_UPSTREAM_DONE": str(done),
         "PYTHONPATH": os.pathsep.join([str(HERE), os.getenv("PYTHONPATH", "")])}
  dead: list[dict] = []
  while True:
    records = read_log(log)
    finished = {r["nodeid"] for r in records if r["event"] == "end"} | {r["nodeid"] for r in dead}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tinytpu_expected", test_file, *pytest_args]
    done.write_text("".join(nodeid + "\n" for nodeid in sorted(finished)))
    start = time.time()
    proc = subprocess.run(cmd, cwd=stage_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with out.open("a") as f: f.write(proc.stdout)
    if proc.returncode in (0, 1, 5): break
    records = read_log(log)
    ended = {r["nodeid"] for r in records if r["event"] == "end"}
    started = [r for r in records if r["event"] == "start" and r["time"] >= start and r["nodeid"] not in ended]
    if not started:  # died outside any test (collection, interpreter): the whole file is one result
      lines = proc.stdout.strip().splitlines()
      message = ([l.removeprefix("E").strip() for l in lines if l.startswith("E ")] or lines or [f"exit code {proc.returncode}"])[-1]
      dead.append({"nodeid": test_file, "outcome": "error", "duration": round(time.time() - start, 1), "message": message[:300]})
      break
    seconds = round(time.time() - started[-1]["time"], 1)
    by_watchdog = proc.returncode == -signal.SIGABRT and seconds >= WATCHDOG
    why = f"killed by upstream's {WATCHDOG} s watchdog" if by_watchdog else f"process died (exit code {proc.returncode})"
    dead.append({"nodeid": started[-1]["nodeid"], "outcome": "timeout" if by_watchdog else "crashed", "duration": seconds, "message": why})
  return [r for r in read_log(log) if r["event"] == "end"] + dead

def main():
  parser = argparse.ArgumentParser(description="tinygrad's test/backend and test/models on TINYTPU against tests_upstream/expected.tsv",
                                   usage="%(prog)s [options] checkout [-- pytest arguments]")
  parser.add_argument("checkout", type=pathlib.Path, help="a tinygrad source checkout (with test/backend, test/models)")
  parser.add_argument("--files", nargs="*", help="test files relative to the checkout (default: test/backend and test/models)")
  parser.add_argument("-j", "--jobs", type=int, default=1, help="test files run at once (default 1)")
  parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("build/upstream-full"), help="staging and log directory")
  argv = sys.argv[1:]
  split = argv.index("--") if "--" in argv else len(argv)
  args, pytest_args = parser.parse_args(argv[:split]), argv[split + 1:]
  checkout = args.checkout.resolve()
  if not (checkout / "test" / "backend").is_dir(): parser.error(f"{checkout} is not a tinygrad checkout: it has no test/backend")
  if args.jobs < 1: parser.error("--jobs must be at least 1")
  files = args.files or sorted(str(p.relative_to(checkout)) for d in ("test/backend", "test/models") for p in (checkout / d).glob("test_*.py"))
  stage_dir, log_dir = args.work / "stage", args.work / "logs"
  stage(checkout, stage_dir)
  log_dir.mkdir(parents=True, exist_ok=True)

  expected = load_expected()
  results: list[dict] = []
  with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    futures = {pool.submit(run_file, stage_dir.resolve(), f, log_dir.resolve(), pytest_args): f for f in files}
    for future in concurrent.futures.as_completed(futures):
      file_results = future.result()
      results += file_results
      counts = {o: sum(r["outcome"] == o for r in file_results)
                for o in ("passed", "skipped", "xfailed", "failed", "error", "xpassed", "timeout", "crashed")}
      print(f"{futures[future]}: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n), flush=True)
  (args.work / "results.json").write_text(json.dumps(results, indent=1))

  def is_expected(r):
    outcome, _, raises = expected.get(r["nodeid"], ("", "", ""))
    if r.get("mismatch") or outcome not in (("timeout", "xfail") if r["outcome"] == "timeout" else ("xfail",)): return False
    # the plugin checked the failures of the tests that ran; a file that did not load, a crash or a watchdog abort is checked
    # here: 'Type: message' from the file's last error line, 'crashed: process died (...)', 'timeout: killed by ...'
    if outcome == "timeout" or r["outcome"] == "failed": return True
    return matches(raises, r["message"] if r["outcome"] == "error" else f"{r['outcome']}: {r['message']}")
  failures = [r for r in results if r["outcome"] in ("failed", "error", "timeout", "crashed")]
  new_failures = [r for r in failures if not is_expected(r)]
  unexpected_passes = [r for r in results if is_unexpected_pass(r["outcome"], r["duration"], expected.get(r["nodeid"], ("",))[0])]
  for r in new_failures:
    listed = expected.get(r["nodeid"], ("", "", ""))[2]
    not_listed = f" (not the listed failure {listed!r})" if listed and not r.get("mismatch") else ""
    print(f"NEW FAILURE {r['nodeid']} [{r['outcome']}, {r['duration']} s]: {r['message']}{not_listed}")
  for r in unexpected_passes: print(f"UNEXPECTED PASS {r['nodeid']} (remove it from tests_upstream/expected.tsv)")
  count = lambda outcome: sum(r["outcome"] == outcome for r in results)
  print(f"tinytpu upstream: {count('passed')} passed, {count('xfailed') + len(failures) - len(new_failures)} xfailed, {count('skipped')} skipped, "
        f"{len(new_failures)} new failures, {len(unexpected_passes)} unexpected passes")
  sys.exit(1 if new_failures or unexpected_passes else 0)

if __name__ == "__main__":
  main()
