# pytest plugin (-p tinytpu_expected) for tinygrad's own test files run on TINYTPU.
# It marks the tests listed in expected.tsv (xfail, skip, or timeout: skipped unless TINYTPU_UPSTREAM_RUN_TIMEOUTS=1),
# appends one JSON line per test to $TINYTPU_UPSTREAM_LOG (a line when a test starts, so a runner can name the test a
# dead process was in), and fails the session on a new failure or an unexpected pass.
# An xfail entry names the failure it expects, 'Type: part of the message' (or several, ' | ' between them, for a test
# that fails one way or another by what is installed): a listed test failing otherwise (another exception or message,
# in any of its subtests, setup or call) is a new failure that names both.
import json, os, pathlib, re, time
import pytest

EXPECTED_TSV = pathlib.Path(os.getenv("TINYTPU_UPSTREAM_EXPECTED") or pathlib.Path(__file__).with_name("expected.tsv"))
OUTCOMES = ("xfail", "skip", "timeout")
SEVERITY = ("passed", "skipped", "xpassed", "xfailed", "failed")  # a failed subTest of a listed test makes an xpassed call xfailed
LISTED_TIMEOUT = 300  # what a 'timeout' entry means: longer than upstream's default watchdog
WATCHDOG = int(os.getenv("TEST_TIMEOUT", LISTED_TIMEOUT))  # upstream's conftest aborts a test after this many seconds

ONE_FAILURE = r"[A-Za-z_][\w.]*(: (?:(?! \| ).)*\S)?"  # 'Type' or 'Type: part of the message'
RAISES = re.compile(rf"{ONE_FAILURE}( \| {ONE_FAILURE})*")  # one or more, ' | ' between them

def load_expected(path=EXPECTED_TSV) -> dict[str, tuple[str, str, str]]:
  """nodeid -> (outcome, reason, raises); raises is '' for skip and timeout entries."""
  expected = {}
  for n, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
    if not line.strip() or line.startswith("#"): continue
    fields = line.split("\t")
    want = 4 if len(fields) > 1 and fields[1] == "xfail" else 3
    if len(fields) != want or fields[1] not in OUTCOMES or not fields[2].strip() or (want == 4 and not RAISES.fullmatch(fields[3])):
      raise ValueError(f"{path}:{n}: want 'nodeid<TAB>xfail<TAB>reason<TAB>Type: part of the message' or "
                       f"'nodeid<TAB>skip|timeout<TAB>reason', got {line!r}")
    if fields[0] in expected: raise ValueError(f"{path}:{n}: {fields[0]} listed twice")
    expected[fields[0]] = (fields[1], fields[2], fields[3] if want == 4 else "")
  return expected

def failure_of(exc: BaseException) -> str:
  """'Type: message' of an exception, as `matches` reads it."""
  return f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}".removeprefix("builtins.")

def matches(raises: str, failure: str) -> bool:
  """Whether a failure 'Type: message' is a listed one: 'Type' or 'Type: part of the message', ' | ' between several.
  A type matches by its name or dotted suffix (URLError, urllib.error.URLError); the part must be in the message."""
  got_type, _, message = failure.partition(": ")
  if not re.fullmatch(r"[A-Za-z_][\w.]*", got_type): return False
  for one in raises.split(" | "):
    want_type, _, part = one.partition(": ")
    if ("." + got_type).endswith("." + want_type) and part in message: return True
  return False

def outcome_of(report) -> str | None:
  if report.when == "call" or (report.when == "setup" and not report.passed) or (report.when == "teardown" and report.failed):
    if hasattr(report, "wasxfail"): return "xpassed" if report.passed else "xfailed"
    return report.outcome
  return None

def is_unexpected_pass(outcome: str, duration: float, expected_outcome: str) -> bool:
  # a listed xfail that passed, or a listed timeout that passed within 300 s (run with TINYTPU_UPSTREAM_RUN_TIMEOUTS=1)
  return outcome == "xpassed" or (outcome == "passed" and expected_outcome == "timeout" and duration < LISTED_TIMEOUT)

def short_message(report) -> str:
  if hasattr(report, "tinytpu_mismatch"): return report.tinytpu_mismatch[:300]
  if hasattr(report, "tinytpu_failure"): return report.tinytpu_failure.splitlines()[0][:300]
  if report.skipped and isinstance(report.longrepr, tuple): return report.longrepr[2]
  text = getattr(report, "wasxfail", "") if report.outcome != "failed" else str(report.longrepr)
  lines = [l for l in text.splitlines() if l.startswith("E ")] or text.splitlines() or [""]
  return lines[-1].removeprefix("E").strip()[:300]

class ExpectedFailures:
  def __init__(self):
    self.expected = load_expected()
    self.log = open(os.environ["TINYTPU_UPSTREAM_LOG"], "a") if os.getenv("TINYTPU_UPSTREAM_LOG") else None
    self.run_timeouts = os.getenv("TINYTPU_UPSTREAM_RUN_TIMEOUTS") == "1"
    self.current: dict[str, tuple[str, float, str]] = {}
    self.counts: dict[str, int] = {}
    self.new_failures: list[tuple[str, str]] = []
    self.unexpected_passes: list[str] = []
    self.mismatches: dict[str, str] = {}  # nodeid -> a failure of a listed test that is not the listed one

  def write(self, **record):
    if self.log is None: return
    self.log.write(json.dumps(record) + "\n")
    self.log.flush()

  def pytest_collection_modifyitems(self, config, items):
    # tests already run by an earlier process of the same file (pytest's --deselect would also drop every nodeid it prefixes)
    done = set(pathlib.Path(os.environ["TINYTPU_UPSTREAM_DONE"]).read_text().splitlines()) if os.getenv("TINYTPU_UPSTREAM_DONE") else set()
    if done:
      config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
      items[:] = [item for item in items if item.nodeid not in done]
    for item in items:
      outcome, reason, _ = self.expected.get(item.nodeid, (None, None, None))
      if outcome == "xfail": item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
      elif outcome == "skip" or (outcome == "timeout" and not self.run_timeouts): item.add_marker(pytest.mark.skip(reason=f"{outcome}: {reason}"))

  @pytest.hookimpl(wrapper=True, tryfirst=True)
  def pytest_runtest_makereport(self, item, call):
    # outside pytest's xfail handling: a listed test's failure (setup, call or a subtest) that is not the listed one fails
    report = yield
    exc = call.excinfo.value if call.excinfo is not None else None
    if exc is None or isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception)): return report
    report.tinytpu_failure = failure_of(exc)
    outcome, _, raises = self.expected.get(item.nodeid, ("", "", ""))
    if outcome == "xfail" and not matches(raises, report.tinytpu_failure):
      report.tinytpu_mismatch = f"not the listed failure: expected {raises!r}, got {report.tinytpu_failure.splitlines()[0]!r}"
      report.outcome = "failed"
      if hasattr(report, "wasxfail"): del report.wasxfail
    return report

  def pytest_runtest_logstart(self, nodeid):
    self.write(nodeid=nodeid, event="start", time=time.time())

  def pytest_runtest_logreport(self, report):
    # a test's outcome is the worst of its reports: its call (or a setup that did not pass, or a failing teardown) and
    # any unittest subTest, which reports under the same nodeid
    outcome = outcome_of(report)
    if outcome is None: return
    if hasattr(report, "tinytpu_mismatch"): self.mismatches.setdefault(report.nodeid, report.tinytpu_mismatch[:300])
    worst, duration, message = self.current.get(report.nodeid, ("passed", 0.0, ""))
    if SEVERITY.index(outcome) >= SEVERITY.index(worst): worst, message = outcome, short_message(report)
    self.current[report.nodeid] = (worst, duration + report.duration, message)

  def pytest_runtest_logfinish(self, nodeid):
    outcome, duration, message = self.current.pop(nodeid, ("passed", 0.0, ""))
    mismatch = self.mismatches.pop(nodeid, None)
    if mismatch is not None: outcome, message = "failed", mismatch
    self.counts[outcome] = self.counts.get(outcome, 0) + 1
    expected_outcome = self.expected.get(nodeid, ("",))[0]
    if outcome == "failed" and (not expected_outcome or mismatch is not None): self.new_failures.append((nodeid, message))
    if is_unexpected_pass(outcome, duration, expected_outcome): self.unexpected_passes.append(nodeid)
    self.write(nodeid=nodeid, event="end", outcome=outcome, duration=round(duration, 3), message=message,
               **({"mismatch": True} if mismatch is not None else {}))

  def pytest_sessionfinish(self, session):
    # listed failures do not fail the session (a failing subTest of a listed test is not turned into an xfail by pytest)
    if session.exitstatus in (0, 1): session.exitstatus = 1 if self.new_failures or self.unexpected_passes else 0

  def pytest_terminal_summary(self, terminalreporter):
    tr = terminalreporter
    for nodeid, message in self.new_failures: tr.write_line(f"NEW FAILURE {nodeid}: {message}")
    for nodeid in self.unexpected_passes: tr.write_line(f"UNEXPECTED PASS {nodeid} (remove it from tests_upstream/expected.tsv)")
    c = self.counts
    tr.write_line(f"tinytpu upstream: {c.get('passed', 0)} passed, {c.get('xfailed', 0)} xfailed, {c.get('skipped', 0)} skipped, "
                  f"{len(self.new_failures)} new failures, {len(self.unexpected_passes)} unexpected passes")

def pytest_configure(config):
  config.pluginmanager.register(ExpectedFailures(), "tinytpu_expected_failures")
