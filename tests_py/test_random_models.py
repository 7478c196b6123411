"""The random model harness (harness/random_models.py) in short mode: a fixed range of seeds, each a small model run
forward and backward on TINYTPU (a random configuration, the chip's cores sharded included) and on tinygrad's CPU
device, in a process of its own. None may crash, hang, raise or give a result that matches neither CPU nor PYTHON.
TINYTPU_MODELS_SEED and TINYTPU_MODELS_COUNT pick another range for a local run."""
import json, os, subprocess, sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness" / "random_models.py"

def test_random_models_agree_with_cpu_or_python(tmp_path):
  seed, count = int(os.getenv("TINYTPU_MODELS_SEED", "0")), int(os.getenv("TINYTPU_MODELS_COUNT", "24"))
  report = tmp_path / "results.json"
  out = subprocess.run([sys.executable, str(HARNESS), "--seed", str(seed), "--count", str(count), "--jobs", "2", "--timeout", "300",
                        "--json", str(report)], capture_output=True, text=True)
  assert report.exists(), out.stdout + out.stderr
  results = json.loads(report.read_text())
  assert sorted(r["seed"] for r in results) == list(range(seed, seed + count))
  bad = [r for r in results if r["status"] != "agrees"]
  assert not bad, out.stdout
  assert out.returncode == 0, out.stdout + out.stderr[-2000:]
  if (seed, count) != (0, 24): return
  # the fixed set covers each layer kind and the chip's sharding over 2 and 4 cores, async on and off
  models = [json.loads(r["model"]) for r in results]
  layers = [k for m in models for layer in m["layers"] for k in ("conv", "linear", "attention", "embedding") if k in layer]
  assert {"conv", "linear", "attention", "embedding"} <= set(layers)
  assert any(l.get("bn") for m in models for l in m["layers"]) and any(l.get("ln") for m in models for l in m["layers"])
  assert {m["shards"] for m in models} == {0, 2, 4} and {m["async"] for m in models} == {0, 1}

SHARDED = {"config": "chip4", "shards": 2, "async": 1, "batch": 4, "classes": 3, "loss": "cross_entropy", "seed": 7,
           "input": {"image": [2, 6]}, "layers": [{"conv": 4, "k": 3, "pad": 1, "stride": 1, "bn": True, "act": "relu", "pool": "max"},
                                                  {"linear": 8, "ln": True, "act": "gelu"}]}

def test_a_model_sharded_over_two_cores():
  # in the foreground (no fork), so a thread sanitizer sees the cores' threads (make test-tsan runs it)
  out = subprocess.run([sys.executable, str(HARNESS), "--model", json.dumps(SHARDED)], capture_output=True, text=True, timeout=900)
  assert out.returncode == 0, out.stderr[-3000:]
  assert out.stdout.splitlines()[-1].startswith("agrees"), out.stdout

SHRINK = """
import sys
sys.path.insert(0, sys.argv[1])
import random_models as rm
def case(seed, spec):  # fails while the model keeps a convolution with BatchNorm
  bad = any("conv" in l and l["bn"] for l in spec["layers"])
  return {"seed": seed, "status": "wrong" if bad else "agrees", "detail": ""}
spec = {"config": "chip4", "shards": 4, "async": 1, "batch": 8, "classes": 7, "loss": "cross_entropy", "seed": 3,
        "input": {"image": [3, 8]}, "layers": [{"conv": 6, "k": 3, "pad": 1, "stride": 1, "bn": False, "act": "relu", "pool": "avg"},
                                               {"conv": 5, "k": 2, "pad": 0, "stride": 2, "bn": True, "act": "gelu", "pool": "none"},
                                               {"linear": 12, "ln": True, "act": "silu"}]}
print(rm.describe(rm.shrink(spec, 60, case)))
"""

def test_the_shrinker_reduces_a_failing_model_to_the_part_that_fails():
  out = subprocess.run([sys.executable, "-c", SHRINK, str(HARNESS.parent)], capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  smallest = json.loads(out.stdout.splitlines()[-1])
  assert smallest["layers"] == [{"conv": 1, "k": 1, "pad": 0, "stride": 1, "bn": True, "act": "none", "pool": "none"}]
  assert (smallest["config"], smallest["shards"], smallest["async"], smallest["batch"]) == ("reference", 0, 0, 1)
  assert smallest["input"] == {"image": [1, 2]} and smallest["classes"] == 2 and smallest["loss"] == "mse"
