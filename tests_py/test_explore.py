"""TensorCore variants from the command line: `configs`, TINYTPU_CONFIG, `bench/benchmark.py --config` and the
design-space search `explore` (its table, plot, data and budget search)."""
import json, os, pathlib, subprocess, sys
import pytest
from PIL import Image
from tinytpu import configs

ROOT = pathlib.Path(__file__).resolve().parent.parent

def run(*args, **env):
  return subprocess.run([sys.executable, *args], capture_output=True, text=True, env={**os.environ, **env})

def test_configs_lists_the_variants_with_their_cost():
  p = run("-m", "tinytpu", "configs", "--json")
  assert p.returncode == 0, p.stderr
  rows = json.loads(p.stdout)
  assert [r["name"] for r in rows] == [n.name for core in configs.CORES for n in core.named_configs()] and rows[0]["name"] == "reference"
  for r in rows:
    # a chip counts each of its cores
    assert r["change"] and r["pes"] == r["config"]["cores"] * r["config"]["rows"] ** 2 and r["sram_bytes"] > 0
    assert r["ports"] >= 0 and r["area"] > 0
  chip, core = (next(r for r in rows if r["name"] == n) for n in ("chip4", "hbm"))  # chip4: four hbm cores
  assert chip["config"]["cores"] == 4 and chip["config"]["sparse_core"] == 1  # each with a SparseCore
  assert chip["area"] == 4 * configs.cost(configs.from_spec("hbm,sparse_core=1"))["area"] == 4 * (core["area"] + 2)
  assert core["config"]["hbm_channels"] == 1 and core["ports"] == next(r for r in rows if r["name"] == "all")["ports"] + 1
  assert {r["config"]["rows"] for r in rows} == {4, 8, 16} and {"8x8-all", "16x16-all"} <= {r["name"] for r in rows}
  assert {"reference", "overlap", "beat", "overlap-beat"} <= {r["name"] for r in rows}
  text = run("-m", "tinytpu", "configs").stdout
  assert all(r["name"] in text for r in rows) and "TINYTPU_CONFIG" in text

SCRIPT = "from tinygrad import Tensor, Device\nimport tinytpu\nprint((Tensor([1, 2, 3], device='TINYTPU') * 5).tolist(), Device['TINYTPU'].config)"

def test_tinytpu_config_selects_the_devices_core():
  p = run("-c", SCRIPT, TINYTPU_CONFIG="overlap-beat,depth=16")
  assert p.returncode == 0, p.stderr
  assert "[5, 10, 15]" in p.stdout and "depth=16" in p.stdout and "fetch_overlap=1" in p.stdout and "record_cycles=1" in p.stdout
  wide = run("-c", SCRIPT + "\nprint(Device['TINYTPU'].core.__name__)", TINYTPU_CONFIG="all,rows=8")
  assert wide.returncode == 0, wide.stderr
  assert "[5, 10, 15]" in wide.stdout and "tinytpu._core8" in wide.stdout and "dma_overlap=1" in wide.stdout
  bad = run("-c", SCRIPT, TINYTPU_CONFIG="wide")
  assert bad.returncode != 0 and "TINYTPU_CONFIG=wide: no TensorCore configuration named 'wide'" in bad.stderr

def test_benchmark_on_a_variant_keeps_its_json():
  p = run(str(ROOT / "bench" / "benchmark.py"), "--config", "overlap-beat", "--filter", "add_16", "--json")
  assert p.returncode == 0, p.stderr
  out = json.loads(p.stdout)
  assert out["config"] == "overlap-beat" and out["geomean_elems_per_cycle"] > 0
  assert out["kernels"][0]["cycles"] == 21  # add_16: R=8 records at one cycle, P=8 overlapped, M=1, +4
  assert run(str(ROOT / "bench" / "benchmark.py"), "--config", "wide").returncode == 2

GRID = ["--grid", "rows=4", "--grid", "fetch_overlap=0,1", "--grid", "record_cycles=2,1", "--grid", "dma_overlap=0", "--grid",
        "prefetch_launches=0", "--grid", "resident_program=0", "--grid", "depth=32", "--grid", "vregs=16",
        "--grid", "psum_buckets=8"]

def test_explore_table_plot_and_data(tmp_path):
  p = run("-m", "tinytpu", "explore", "--set", "kernels", *GRID, "--objectives", "time,area", "--jobs", "2", "--out", str(tmp_path))
  assert p.returncode == 0, p.stderr
  data = json.loads((tmp_path / "explore.json").read_text())
  rows = {r["spec"]: r for r in data["rows"]}
  assert {n["name"] for n in configs.named()} <= set(rows)
  assert all("perf" in r for r in rows.values()), [r.get("error") for r in rows.values()]
  for r in rows.values():  # time at the core's clock, energy from the counters, each workload checked
    assert r["time_s"] == pytest.approx(sum(w["time_s"] for w in r["workloads"])) and r["energy_j"] > 0
    assert len(r["workloads"]) == 11 and all(w["checked"] and w["time_s"] == w["cycles"] / (r["fields"]["clock_mhz"] * 1e6)
                                             for w in r["workloads"])
  # overlapped fetch and a one-beat loader each only help
  assert rows["overlap-beat"]["time_s"] < rows["overlap"]["time_s"] < rows["reference"]["time_s"]
  assert rows["overlap-beat"]["time_s"] < rows["beat"]["time_s"] < rows["reference"]["time_s"]
  front = data["pareto"]  # time against area: along it, more area buys less time
  assert front and all(rows[a]["area"] <= rows[b]["area"] and rows[a]["time_s"] > rows[b]["time_s"] for a, b in zip(front, front[1:]))
  for r in rows.values():  # nothing off the front beats a front point on both
    assert not any(r["area"] < rows[f]["area"] and r["time_s"] < rows[f]["time_s"] for f in front)
  assert "Pareto front of time against area" in p.stdout and "overlap-beat" in p.stdout
  with Image.open(tmp_path / "explore.png") as img: assert img.format == "PNG" and img.width >= 600 and img.height >= 400

def test_explore_json_rows_and_a_budget_proposal(tmp_path):
  p = run("-m", "tinytpu", "explore", "--set", "kernels", *GRID, "--budget", "44", "--json", "--jobs", "2", "--out", str(tmp_path))
  assert p.returncode == 0, p.stderr
  rows = json.loads(p.stdout)
  assert rows and all({"config", "workload", "time_s", "energy_j", "area", "checked"} <= set(r) for r in rows)
  assert all(r["checked"] and r["area"] <= 44 for r in rows)  # only cores inside the budget are measured
  totals = {}
  for r in rows: totals[r["config"]] = totals.get(r["config"], 0) + r["time_s"]
  best = min(totals, key=totals.get)
  assert f"proposal for area <= 44.0: {best} " in p.stderr and totals[best] < totals["reference"]

def test_a_grid_stopped_midway_measures_only_what_it_had_not(tmp_path):
  args = ["-m", "tinytpu", "explore", "--set", "kernels", *GRID, "--budget", "44", "--json", "--jobs", "0", "--out", str(tmp_path)]
  first = run(*args)
  assert first.returncode == 0, first.stderr
  kept = (tmp_path / "measured.jsonl").read_text().splitlines()
  assert len(kept) >= 3
  (tmp_path / "measured.jsonl").write_text("\n".join(kept[:-2]) + "\n" + kept[-2][:40])  # the last two lost, one cut short
  again = run(*args)
  assert again.returncode == 0, again.stderr
  assert json.loads(again.stdout) == json.loads(first.stdout)  # the same rows, two of them measured again
  assert f"{len(kept) - 2} of the {len(kept)} configurations were measured by this build before" in again.stderr
  assert "proposal for area <= 44.0" in again.stderr and "(2 configurations measured)" in again.stderr

def start_dask(tmp_path, port: int):
  """A real dask scheduler and two worker processes on localhost (the dask command line)."""
  env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
  procs = [subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)]
  import time
  from distributed import Client
  for _ in range(100):
    try:
      with Client(f"tcp://127.0.0.1:{port}", timeout=2): break
    except OSError: time.sleep(0.3)
  procs += [subprocess.Popen(["dask", "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--no-dashboard"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path) for _ in range(2)]
  with Client(f"tcp://127.0.0.1:{port}", timeout=10) as c: c.wait_for_workers(2, timeout=120)
  return procs

def test_a_study_on_a_dask_cluster_measures_what_a_serial_run_measures(tmp_path):
  import socket
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  procs = start_dask(tmp_path, port)
  try:
    args = ["-m", "tinytpu", "explore", "--set", "kernels", "--search", "optuna", "--trials", "4", "--seed", "3",
            "--objectives", "time,area", *GRID, "--json"]
    on_dask = run(*args, "--scheduler", f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "dask"))
  finally:
    for p in procs: p.kill()
  serial = run(*args, "--jobs", "0", "--out", str(tmp_path / "serial"))
  assert on_dask.returncode == 0, on_dask.stderr
  assert serial.returncode == 0, serial.stderr
  key = lambda r: (r["config"], r["workload"])
  measured = lambda p: sorted((key(r), r["cycles"], r["time_s"], r["energy_j"], r["checked"]) for r in json.loads(p.stdout))
  assert measured(on_dask) == measured(serial) and len({r["config"] for r in json.loads(serial.stdout)}) == 4

def test_an_optuna_study_stopped_midway_resumes_without_measuring_again(tmp_path):
  """A study stopped midway, after two configurations and with a third trial left running (as a killed run leaves
  it), goes on where it stopped: run again for six, it measures only the four it has not. (The stop is made
  deterministic: a run killed once two were measured raced with the trials, and on a warm, idle machine the run
  finished all six first.)"""
  import optuna
  args = ["-m", "tinytpu", "explore", "--set", "kernels", "--search", "optuna", "--seed", "1",
          "--objectives", "time", "--grid", "fetch_overlap=0,1", "--grid", "record_cycles=2,1", "--grid", "rows=4",
          "--grid", "dma_overlap=0,1", "--grid", "prefetch_launches=0", "--grid", "resident_program=0,1",
          "--grid", "depth=32", "--grid", "vregs=16", "--grid", "psum_buckets=8", "--jobs", "0", "--out", str(tmp_path)]
  storage, study = f"sqlite:///{tmp_path / 'explore.db'}", "kernels:time:budget=None:seed=1"
  done = lambda: [t for t in optuna.load_study(study_name=study, storage=storage).trials if t.state.name == "COMPLETE"]
  first = run(*args, "--trials", "2")
  assert first.returncode == 0, first.stderr
  before = {t.user_attrs["spec"] for t in done()}
  assert len(before) == 2
  optuna.load_study(study_name=study, storage=storage).ask()  # a trial left running, never told
  p = run(*args, "--trials", "6")
  assert p.returncode == 0, p.stderr
  assert "(4 configurations measured)" in p.stdout  # only the ones the first run did not measure
  after = {t.user_attrs["spec"] for t in done()}
  assert len(after) == 6 and before <= after

STUDY_ARGS = ["-m", "tinytpu", "explore", "--set", "kernels", "--search", "optuna", "--seed", "1", "--trials", "1",
              "--objectives", "time", "--jobs", "0"]

def _foreign_sqlite(path):
  import sqlite3
  with sqlite3.connect(path) as db: db.execute("CREATE TABLE mine (x INTEGER)")

@pytest.mark.parametrize("make, says", [
  (lambda p: p.write_bytes(b"not a database, but a user's notes\n" * 20), "is not a SQLite database"),
  (_foreign_sqlite, "holds tables of something else (mine), not an Optuna study; it is left as it is"),
])
def test_explore_never_touches_a_storage_file_that_is_not_a_study(tmp_path, make, says):
  """--storage naming a file that is not an Optuna study (a corrupt one, another program's SQLite database) is refused
  before anything runs, and the file is left byte for byte as it was."""
  db = tmp_path / "explore.db"
  make(db)
  before = db.read_bytes()
  p = run(*STUDY_ARGS, "--out", str(tmp_path))
  assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
  assert db.read_bytes() == before

def test_explore_names_a_storage_it_cannot_use_and_a_scheduler_that_does_not_answer(tmp_path):
  """A storage in no directory, a study database another run holds locked, a --scheduler with no Dask scheduler behind
  it: each a one-line error saying which argument and what is wrong, in seconds, never a hang."""
  import socket, sqlite3, optuna
  p = run(*STUDY_ARGS, "--out", str(tmp_path), "--storage", f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")
  assert p.returncode == 1 and f"{tmp_path / 'nowhere'} is not a directory" in p.stderr, p.stderr
  storage = f"sqlite:///{tmp_path / 'locked.db'}"
  optuna.create_study(study_name="other", storage=storage)
  with sqlite3.connect(tmp_path / "locked.db") as db:
    db.execute("BEGIN EXCLUSIVE")  # another run writing it
    p = run(*STUDY_ARGS, "--out", str(tmp_path), "--storage", storage)
  assert p.returncode == 1 and f"{tmp_path / 'locked.db'} is locked" in p.stderr and "is another run writing it?" \
    in p.stderr and "Traceback" not in p.stderr, p.stderr
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]  # closed again: nothing listens there
  p = run(*STUDY_ARGS, "--out", str(tmp_path / "dask"), "--scheduler", f"tcp://127.0.0.1:{port}")
  assert p.returncode == 1 and f"--scheduler tcp://127.0.0.1:{port}: no Dask scheduler answered there" in p.stderr, p.stderr
