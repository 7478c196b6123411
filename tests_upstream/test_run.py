# The upstream harness on a made-up tinygrad checkout: listed and unlisted failures, a crash and a watchdog abort
# in the middle of a file, a file that fails to import.
import json, os, pathlib, subprocess, sys
import pytest
from tinytpu_expected import load_expected

RUN = pathlib.Path(__file__).with_name("run.py")
FAKE_TESTS = """
import os, time, unittest
class TestFake(unittest.TestCase):
  def test_a_pass(self): pass
  def test_b_new_failure(self): self.assertEqual(1, 2)
  def test_c_listed_failure(self): self.assertEqual(1, 3)
  def test_d_listed_pass(self): pass
  def test_e_subtest(self):
    for i in range(3):
      with self.subTest(i=i): self.assertNotEqual(i, 1)
  def test_f_crash(self): os.abort()
  def test_f_crash_prefixes_me(self): pass
  def test_g_watchdog(self):  # what upstream's conftest does to a test that runs past TEST_TIMEOUT
    time.sleep(float(os.environ["TEST_TIMEOUT"]) + 0.2)
    os.abort()
  def test_h_listed_timeout(self): time.sleep(60)
  def test_i_after(self): pass
"""
FAKE = "test/backend/test_fake.py::TestFake::"

def run(tmp_path, expected_lines):
  for d in ("test", "test/backend", "test/models"):
    (tmp_path / "tinygrad" / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "tinygrad" / d / "__init__.py").touch()
  (tmp_path / "tinygrad/test/backend/test_fake.py").write_text(FAKE_TESTS)
  (tmp_path / "tinygrad/test/models/test_broken.py").write_text("import no_such_module\n")
  (tmp_path / "expected.tsv").write_text("".join("\t".join(fields) + "\n" for fields in expected_lines))
  env = {**os.environ, "TEST_TIMEOUT": "1", "TINYTPU_UPSTREAM_EXPECTED": str(tmp_path / "expected.tsv")}
  proc = subprocess.run([sys.executable, RUN, tmp_path / "tinygrad", "--work", tmp_path / "work"], env=env, capture_output=True, text=True, timeout=120)
  results = {r["nodeid"]: r["outcome"] for r in json.loads((tmp_path / "work/results.json").read_text())}
  return proc, results

def test_new_failures_and_unexpected_passes(tmp_path):
  proc, results = run(tmp_path, [(FAKE + "test_c_listed_failure", "xfail", "made up"), (FAKE + "test_d_listed_pass", "xfail", "made up"),
                                 (FAKE + "test_h_listed_timeout", "timeout", "made up")])
  assert proc.returncode == 1, proc.stdout + proc.stderr
  assert results == {FAKE + "test_a_pass": "passed", FAKE + "test_b_new_failure": "failed", FAKE + "test_c_listed_failure": "xfailed",
                     FAKE + "test_d_listed_pass": "xpassed", FAKE + "test_e_subtest": "failed", FAKE + "test_f_crash": "crashed",
                     FAKE + "test_f_crash_prefixes_me": "passed", FAKE + "test_g_watchdog": "timeout",
                     FAKE + "test_h_listed_timeout": "skipped", FAKE + "test_i_after": "passed", "test/models/test_broken.py": "error"}
  lines = proc.stdout.splitlines()
  assert sorted(l.split(" [")[0] for l in lines if l.startswith("NEW FAILURE")) == [
    "NEW FAILURE " + n for n in (FAKE + "test_b_new_failure", FAKE + "test_e_subtest", FAKE + "test_f_crash", FAKE + "test_g_watchdog",
                                 "test/models/test_broken.py")]
  assert [l for l in lines if l.startswith("UNEXPECTED PASS")] == [f"UNEXPECTED PASS {FAKE}test_d_listed_pass (remove it from tests_upstream/expected.tsv)"]
  assert "No module named 'no_such_module'" in proc.stdout
  assert lines[-1] == "tinytpu upstream: 3 passed, 1 xfailed, 1 skipped, 5 new failures, 1 unexpected passes"

def test_everything_listed_passes(tmp_path):
  listed = [(FAKE + name, "xfail", "made up") for name in ("test_b_new_failure", "test_c_listed_failure", "test_e_subtest", "test_f_crash")]
  listed += [(FAKE + "test_g_watchdog", "timeout", "made up"), (FAKE + "test_h_listed_timeout", "timeout", "made up"),
             ("test/models/test_broken.py", "xfail", "made up")]
  proc, results = run(tmp_path, listed)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert proc.stdout.splitlines()[-1] == "tinytpu upstream: 4 passed, 5 xfailed, 2 skipped, 0 new failures, 0 unexpected passes"

@pytest.mark.parametrize("line", ["test/x.py::t\txfail", "test/x.py::t\tbroken\twhy", "test/x.py::t\txfail\t "])
def test_bad_list_line(tmp_path, line):
  (tmp_path / "expected.tsv").write_text(line + "\n")
  with pytest.raises(ValueError, match="expected.tsv:1: want"): load_expected(tmp_path / "expected.tsv")
