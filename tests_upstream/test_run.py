# The upstream harness on a made-up tinygrad checkout: listed and unlisted failures, a crash and a watchdog abort
# in the middle of a file, a file that fails to import, listed failures that fail otherwise than listed.
import json, os, pathlib, subprocess, sys
import pytest
from tinytpu_expected import load_expected, matches

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
  def test_j_mixed_subtests(self):
    for i in range(3):
      with self.subTest(i=i):
        if i == 2 and os.getenv("FAKE_OTHER_SUBTEST"): raise KeyError("another")
        if i > 0: raise ValueError("the listed one")
class TestFakeSetup(unittest.TestCase):
  @classmethod
  def setUpClass(cls): raise ConnectionError("no network")
  def test_k_setup_fails(self): pass
"""
FAKE = "test/backend/test_fake.py::TestFake::"
SETUP = "test/backend/test_fake.py::TestFakeSetup::test_k_setup_fails"

def run(tmp_path, expected_lines, **env):
  for d in ("test", "test/backend", "test/models"):
    (tmp_path / "tinygrad" / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "tinygrad" / d / "__init__.py").touch()
  (tmp_path / "tinygrad/test/backend/test_fake.py").write_text(FAKE_TESTS)
  (tmp_path / "tinygrad/test/models/test_broken.py").write_text("import no_such_module\n")
  (tmp_path / "expected.tsv").write_text("".join("\t".join(fields) + "\n" for fields in expected_lines))
  env = {**os.environ, "TEST_TIMEOUT": "1", "TINYTPU_UPSTREAM_EXPECTED": str(tmp_path / "expected.tsv"), **env}
  proc = subprocess.run([sys.executable, RUN, tmp_path / "tinygrad", "--work", tmp_path / "work"], env=env, capture_output=True, text=True,
                        timeout=120)
  results = {r["nodeid"]: r["outcome"] for r in json.loads((tmp_path / "work/results.json").read_text())}
  return proc, results

# what each listed failure fails with, as the list records it ('Type: part of the message')
RAISES = {FAKE + "test_b_new_failure": "AssertionError: 1 != 2", FAKE + "test_c_listed_failure": "AssertionError: 1 != 3",
          FAKE + "test_d_listed_pass": "AssertionError", FAKE + "test_e_subtest": "AssertionError: 1 == 1",
          FAKE + "test_f_crash": "crashed: exit code -6", FAKE + "test_j_mixed_subtests": "ValueError: the listed one",
          SETUP: "ConnectionError: no network",
          "test/models/test_broken.py": "ModuleNotFoundError: No module named 'no_such_module'"}
def xfail(nodeid, raises=None): return (nodeid, "xfail", "made up", raises or RAISES[nodeid])

def test_new_failures_and_unexpected_passes(tmp_path):
  proc, results = run(tmp_path, [xfail(FAKE + "test_c_listed_failure"), xfail(FAKE + "test_d_listed_pass"), xfail(SETUP),
                                 (FAKE + "test_h_listed_timeout", "timeout", "made up")])
  assert proc.returncode == 1, proc.stdout + proc.stderr
  assert results == {FAKE + "test_a_pass": "passed", FAKE + "test_b_new_failure": "failed", FAKE + "test_c_listed_failure": "xfailed",
                     FAKE + "test_d_listed_pass": "xpassed", FAKE + "test_e_subtest": "failed", FAKE + "test_f_crash": "crashed",
                     FAKE + "test_f_crash_prefixes_me": "passed", FAKE + "test_g_watchdog": "timeout",
                     FAKE + "test_h_listed_timeout": "skipped", FAKE + "test_i_after": "passed", FAKE + "test_j_mixed_subtests": "failed",
                     SETUP: "xfailed", "test/models/test_broken.py": "error"}
  lines = proc.stdout.splitlines()
  assert sorted(l.split(" [")[0] for l in lines if l.startswith("NEW FAILURE")) == [
    "NEW FAILURE " + n for n in (FAKE + "test_b_new_failure", FAKE + "test_e_subtest", FAKE + "test_f_crash", FAKE + "test_g_watchdog",
                                 FAKE + "test_j_mixed_subtests", "test/models/test_broken.py")]
  assert [l for l in lines if l.startswith("UNEXPECTED PASS")] == \
    [f"UNEXPECTED PASS {FAKE}test_d_listed_pass (remove it from tests_upstream/expected.tsv)"]
  assert "No module named 'no_such_module'" in proc.stdout
  assert lines[-1] == "tinytpu upstream: 3 passed, 2 xfailed, 1 skipped, 6 new failures, 1 unexpected passes"

def test_everything_listed_passes(tmp_path):
  listed = [xfail(FAKE + name) for name in ("test_b_new_failure", "test_c_listed_failure", "test_e_subtest", "test_f_crash",
                                            "test_j_mixed_subtests")]
  listed += [xfail(SETUP), xfail("test/models/test_broken.py"), (FAKE + "test_g_watchdog", "timeout", "made up"),
             (FAKE + "test_h_listed_timeout", "timeout", "made up")]
  proc, results = run(tmp_path, listed)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert proc.stdout.splitlines()[-1] == "tinytpu upstream: 4 passed, 7 xfailed, 2 skipped, 0 new failures, 0 unexpected passes"

# each a listed failure that fails otherwise than listed (why), two runs of the harness: a nodeid once a run
MISLISTED = [[
  (FAKE + "test_c_listed_failure", "AssertionError: 1 != 4", "another message"),
  (FAKE + "test_e_subtest", "AssertionError: 1 == 2", "a subtest's other message"),
  (FAKE + "test_j_mixed_subtests", RAISES[FAKE + "test_j_mixed_subtests"], "one subtest of several fails otherwise (KeyError)"),
  (SETUP, "ConnectionError: no disk", "a setup error's other message"),
  (FAKE + "test_f_crash", "AssertionError", "a crash where an exception was listed"),
  (FAKE + "test_g_watchdog", "AssertionError", "a watchdog abort where an exception was listed"),
  ("test/models/test_broken.py", "ModuleNotFoundError: No module named 'numpy'", "another import error"),
], [
  (FAKE + "test_c_listed_failure", "ValueError: 1 != 3", "another exception"),
  ("test/models/test_broken.py", "ImportError", "a base class of the exception is not its name"),
]]

@pytest.mark.parametrize("mislisted", MISLISTED)
def test_a_listed_failure_failing_otherwise_is_a_new_failure(tmp_path, mislisted):
  listed = [xfail(nodeid, raises) for nodeid, raises, _ in mislisted] + [(FAKE + "test_h_listed_timeout", "timeout", "made up")]
  proc, results = run(tmp_path, listed, FAKE_OTHER_SUBTEST="1")
  assert proc.returncode == 1, proc.stdout + proc.stderr
  new = {l.split(" [")[0].removeprefix("NEW FAILURE "): l for l in proc.stdout.splitlines() if l.startswith("NEW FAILURE")}
  for nodeid, raises, why in mislisted:
    assert nodeid in new, why + "\n" + proc.stdout
    assert f"expected {raises!r}" in new[nodeid] or f"(not the listed failure {raises!r})" in new[nodeid], why + "\n" + new[nodeid]

@pytest.mark.parametrize("raises,failure,want", [
  ("URLError", "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure>", True),
  ("urllib.error.URLError: urlopen error", "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure>", True),
  ("error.URLError", "urllib.error.URLError: <urlopen error>", True),
  ("rror.URLError", "urllib.error.URLError: <urlopen error>", False),
  ("URLError: timed out", "urllib.error.URLError: <urlopen error [Errno -3]>", False),
  ("AssertionError", "process died (exit code -6)", False),
  ("crashed: exit code -6", "crashed: process died (exit code -6)", True),
  ("ModuleNotFoundError: No module named 'PIL' | URLError: urlopen error", "urllib.error.URLError: <urlopen error [Errno -2]>", True),
  ("ModuleNotFoundError: No module named 'PIL' | URLError: urlopen error", "ModuleNotFoundError: No module named 'PIL'", True),
  ("ModuleNotFoundError: No module named 'PIL' | URLError: urlopen error", "ModuleNotFoundError: No module named 'np'", False),
])
def test_matches(raises, failure, want):
  assert matches(raises, failure) is want

@pytest.mark.parametrize("line", ["test/x.py::t\txfail", "test/x.py::t\tbroken\twhy", "test/x.py::t\txfail\t \tValueError",
                                  "test/x.py::t\txfail\twhy", "test/x.py::t\txfail\twhy\t", "test/x.py::t\txfail\twhy\tnot a type",
                                  "test/x.py::t\txfail\twhy\tValueError: ", "test/x.py::t\tskip\twhy\tValueError",
                                  "test/x.py::t\txfail\twhy\tValueError |", "test/x.py::t\txfail\twhy\tValueError | not a type"])
def test_bad_list_line(tmp_path, line):
  (tmp_path / "expected.tsv").write_text(line + "\n")
  with pytest.raises(ValueError, match="expected.tsv:1: want"): load_expected(tmp_path / "expected.tsv")
