"""The real workload set (tinytpu.real, tinytpu.workloads REAL): each runs on TINYTPU with its result checked against
tinygrad's CPU device inside the run, and counts what it did; one that cannot run here says why in its row."""
import json, os, subprocess, sys

def test_the_real_set_runs_checked_and_a_missing_checkout_is_named():
  env = {k: v for k, v in os.environ.items() if k != "TINYGRAD_TESTS"}
  p = subprocess.run([sys.executable, "-m", "tinytpu.workloads", "real"], capture_output=True, text=True, env=env, timeout=1200)
  assert p.returncode == 0, p.stderr
  rows = {r["name"]: r for r in json.loads(p.stdout)}
  assert list(rows) == ["mnist_step", "attention", "int8_digits", "gpt2_decode"]
  for name in ("mnist_step", "attention", "int8_digits"):
    r = rows[name]
    assert r["checked"] and r["cycles"] > 0 and r["counters"]["cycles"] == r["cycles"], r
  assert rows["mnist_step"]["counters"]["vpu_fp_mul_ops"] > 0  # a float32 training step: the VPU's float datapath
  assert rows["int8_digits"]["counters"]["mxu_macs"] > 0  # int8 layers on the MXU
  gpt2 = rows["gpt2_decode"]  # not run here: not a failure, and the row says what it needs
  assert not gpt2["checked"] and "TINYGRAD_TESTS" in gpt2["unavailable"] and "error" not in gpt2 and "cycles" not in gpt2
