"""TensorCore variants from the command line: `configs`, TINYTPU_CONFIG, `bench/benchmark.py --config` and the
design-space search `explore` (its table, plot, data and budget search)."""
import json, os, pathlib, subprocess, sys
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
  p = run("-m", "tinytpu", "explore", "--set", "kernels", *GRID, "--out", str(tmp_path))
  assert p.returncode == 0, p.stderr
  data = json.loads((tmp_path / "explore.json").read_text())
  rows = {r["spec"]: r for r in data["rows"]}
  assert {n["name"] for n in configs.named()} <= set(rows)
  assert all("perf" in r for r in rows.values()), [r.get("error") for r in rows.values()]
  # overlapped fetch and a one-beat loader each only help
  assert rows["overlap-beat"]["perf"] > rows["overlap"]["perf"] > rows["reference"]["perf"]
  assert rows["overlap-beat"]["perf"] > rows["beat"]["perf"] > rows["reference"]["perf"]
  front = data["pareto"]
  assert front and all(rows[a]["area"] <= rows[b]["area"] and rows[a]["perf"] < rows[b]["perf"] for a, b in zip(front, front[1:]))
  for r in rows.values():  # nothing off the front beats a front point on both axes
    assert not any(r["area"] < rows[f]["area"] and r["perf"] > rows[f]["perf"] for f in front)
  assert "Pareto front" in p.stdout and "overlap-beat" in p.stdout
  with Image.open(tmp_path / "explore.png") as img: assert img.format == "PNG" and img.width >= 600 and img.height >= 400

def test_explore_budget_proposes_the_best_core_that_fits(tmp_path):
  p = run("-m", "tinytpu", "explore", "--set", "kernels", *GRID, "--budget", "44", "--out", str(tmp_path))
  assert p.returncode == 0, p.stderr
  rows = json.loads((tmp_path / "explore.json").read_text())["rows"]
  fits = [r for r in rows if r["area"] <= 44]
  best = max(fits, key=lambda r: r["perf"])
  assert f"proposal for area <= 44.0: {best['spec']} " in p.stdout
  assert best["perf"] > next(r["perf"] for r in rows if r["spec"] == "reference")
  assert all(r["area"] <= 44 for r in rows)  # the search measures only cores inside the budget

def test_budget_search_by_ascent_when_the_space_is_large(monkeypatch):
  from tinytpu import explore
  monkeypatch.setattr(explore, "EXHAUSTIVE", 0)  # as if the space were too large to measure whole
  space = {"fetch_overlap": [0, 1], "record_cycles": [2, 1], "dma_overlap": [0], "prefetch_launches": [0],
           "depth": [32], "vregs": [16], "psum_buckets": [8]}
  best, rows = explore.search(["kernels"], 46.0, 2, space)
  # reference (43) -> one field at a time: record_cycles=1 (44) is the best step, then fetch_overlap (46)
  assert best["spec"] == "reference,fetch_overlap=1,record_cycles=1"
  assert best["perf"] == max(r["perf"] for r in rows) and all(r["area"] <= 46.0 for r in rows)
  assert len(rows) < len(explore.grid(space))  # it did not measure the whole space
