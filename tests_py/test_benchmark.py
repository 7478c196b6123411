"""bench/benchmark.py: its arithmetic (geomean, work counts), exclusion of kernels with no device kernel,
and that a wrong result fails the run."""
import json
import math
import os
import sys
import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import benchmark as bm

def test_geomean():
  assert bm.geomean([2.0, 8.0]) == pytest.approx(4.0)
  assert bm.geomean([0.5, 0.5, 0.5]) == pytest.approx(0.5)
  assert bm.geomean([]) is None
  with pytest.raises(ValueError): bm.geomean([1.0, 0.0])

def test_reference_table_gives_the_reference_geomean():
  # the TinyTPU README's cycles with these work counts give its 0.663
  vals = [k.work / k.reference for k in bm.DEFAULT]
  assert bm.geomean(vals) == pytest.approx(0.663, abs=5e-4)

def test_work_counts_are_inputs_or_macs():
  work = {k.name: k.work for k in bm.DEFAULT}
  assert work == {"add_16": 16, "add_256": 256, "relu_64": 64, "reshape_64": 64, "sum_16_scalar": 16,
                  "sum_256_scalar": 256, "rowsum_8x8": 64, "colsum_8x8": 64, "gemm_1x4x4": 16, "gemm_4x4x4": 64,
                  "gemm_4x8x4": 128}

def test_a_kernel_result_is_counted_and_checked():
  r = bm.run_kernel(bm.DEFAULT[0], warm_runs=1)
  assert r["cycles"] > r["sxu_cycles"] > 0 and r["launches"] >= 1
  assert r["first_cycles"] == r["cycles"]  # the reference keeps nothing between calls
  assert r["elems_per_cycle"] == pytest.approx(16 / r["cycles"])
  assert r["bytes_per_cycle"] == pytest.approx(4 * 16 / r["cycles"])

def test_a_wrong_result_fails_the_run(monkeypatch, capsys):
  bad = bm.Kernel("add_16", bm.DEFAULT[0].expr, lambda: np.arange(16, dtype=np.int32), 16)
  with pytest.raises(bm.WrongResult): bm.run_kernel(bad, warm_runs=0)
  monkeypatch.setattr(bm, "DEFAULT", [bad])
  assert bm.main(["--json"]) == 1
  assert "wrong result" in capsys.readouterr().err

def test_no_device_kernel_is_left_out_of_the_geomean_with_a_note():
  counted = {"name": "a", "cycles": 10, "first_cycles": 10, "sxu_cycles": 5, "elems_per_cycle": 2.0, "compute_elems_per_cycle": 4.0,
             "bytes_per_cycle": 8.0, "launches": 1, "wall_ms": 1.0, "floor": 8, "reference": 12}
  none = {**counted, "name": "b", "cycles": None, "sxu_cycles": None, "elems_per_cycle": None,
          "compute_elems_per_cycle": None, "bytes_per_cycle": None}
  s = bm.summarize([counted, none])
  assert s["geomean_elems_per_cycle"] == 2.0 and s["geomean_compute_elems_per_cycle"] == 4.0
  assert s["excluded"] == ["b"]
  text = bm.table(s)
  assert "no device kernel" in text and "note: b" in text and not math.isinf(s["geomean_elems_per_cycle"])

def test_json_csv_and_record(tmp_path, capsys):
  assert bm.main(["--filter", "sum_16", "--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert [k["name"] for k in out["kernels"]] == ["sum_16_scalar"] and out["geomean_elems_per_cycle"] > 0
  assert bm.main(["--filter", "relu", "--csv"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith("name,cycles,first_cycles,sxu_cycles") and lines[1].startswith("relu_64,")
  path = tmp_path / "history.tsv"
  row = bm.record(out, "a note", str(path))
  text = path.read_text().splitlines()
  assert text[0].split("\t") == bm.HISTORY_FIELDS and text[1].split("\t")[-1] == "a note"
  assert float(row["geomean_elems_per_cycle"]) == pytest.approx(out["geomean_elems_per_cycle"], abs=1e-4)
