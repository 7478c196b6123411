"""Tracing and profiling: the Chrome trace JSON (structure, order, cycle accounting) on the golden programs
and on tinygrad kernels, TINYTPU_TRACE, `run --trace`, `profile` and its pipeline page in headless Chromium."""
import io, json, pathlib, shutil, struct, subprocess, sys, zlib
import numpy as np
import pytest
import tinytpu
from tinytpu import _core, events

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = sorted((ROOT / "kernels" / "seed").glob("*.tasm")) + sorted((ROOT / "kernels" / "reference").glob("*.bundle"))
SCRIPT = """
import numpy as np
from tinygrad import Tensor
import tinytpu
a = Tensor(np.arange(64, dtype=np.int32).reshape(8, 8))
print((a + 1).sum(axis=1).numpy().tolist())
x = Tensor(np.arange(-32, 32, dtype=np.int8).reshape(8, 8))
print((x.cast("int32") @ x.cast("int32")).numpy()[0].tolist())
print("COUNTERS", tinytpu.counters())
"""

def cli(*args, env=None, cwd=None):
  return subprocess.run([sys.executable, "-m", "tinytpu", *args], capture_output=True, text=True, env=env, cwd=cwd)

def chrome_json(log) -> dict:
  f = io.StringIO()
  events.write_json(events.Trace(log), f)
  return json.loads(f.getvalue())

def slices(doc: dict, cat: str) -> list[dict]:
  return [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == cat]

def check_structure(doc: dict) -> None:
  """Valid Chrome trace: named tracks, timed events in cycle order, slices nested within their track."""
  names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
  assert {"SXU", "MXU", "VPU", "XLU", "VMEM"} <= names
  timed = [e for e in doc["traceEvents"] if e["ph"] != "M"]
  assert timed and all(e["ph"] in ("X", "C") for e in timed) and any(e["ph"] == "C" for e in timed)
  assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed)
  for e in timed:
    assert isinstance(e["ts"], int) and e["ts"] >= 0
    if e["ph"] == "X": assert e["dur"] >= 0 and e["name"]
    else: assert set(e["args"].values()) <= {0, 1}  # busy counters

def check_tiles(evs: list[dict], begin: int, end: int) -> None:
  evs = sorted(evs, key=lambda e: e["ts"])
  assert evs[0]["ts"] == begin and evs[-1]["ts"] + evs[-1]["dur"] == end
  assert all(a["ts"] + a["dur"] == b["ts"] for a, b in zip(evs, evs[1:]))

def test_golden_programs_are_there():
  # the 11 seed kernels and the 49 recorded reference programs: a lost directory must not shrink the next test unseen
  assert len(GOLDEN) >= 60, [p.name for p in GOLDEN]

# Every golden program runs to HALT: each recorded .expected ends "status ok" (the reference testbench stopped
# none of them), and the seed kernels are the benchmark's. So no SimError is expected of any, and one fails the test.
@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_trace_of_golden_program_accounts_every_cycle(path):
  log = _core.TraceLog()
  r = tinytpu.run_bundle(path.read_text(), trace=log)
  assert r.cycles == tinytpu.run_bundle(path.read_text()).cycles  # tracing changes nothing
  doc = chrome_json(log)
  check_structure(doc)
  check_tiles(slices(doc, "loader"), 0, r.cycles)  # every cycle of the run is in one testbench state
  run = next(e for e in slices(doc, "loader") if e["name"] == "run")
  check_tiles(slices(doc, "sxu"), run["ts"], run["ts"] + run["dur"])  # ... and the SXU's in one instruction
  assert sum(e["dur"] for e in slices(doc, "sxu")) == r.sxu_cycles
  assert sum(e["dur"] for e in slices(doc, "sxu.stall")) == r.unit_busy["sxu_stall"]
  for unit in ("mxu", "vpu", "xlu"):
    assert sum(e["dur"] for e in slices(doc, unit)) == r.unit_busy[unit]

def test_sxu_slices_carry_the_tasm_and_pc():
  log = _core.TraceLog()
  tinytpu.run_tasm((ROOT / "kernels" / "seed" / "add_16.tasm").read_text(), trace=log)
  sxu = slices(chrome_json(log), "sxu")
  assert [(e["name"], e["args"]["pc"], e["dur"]) for e in sxu] == [
    ("LOAD v0, VMEM[0]", 0, 3), ("LOAD v1, VMEM[1]", 1, 3), ("VPU v2 = ADD(v0, v1)", 2, 3), ("STORE VMEM[2], v2", 3, 2),
    ("HALT", 4, 1)]

def test_run_cli_writes_a_trace(tmp_path):
  out = tmp_path / "t.json"
  p = cli("run", "--trace", str(out), str(ROOT / "kernels" / "seed" / "gemm_1x4x4.tasm"))
  assert p.returncode == 0, p.stderr
  doc = json.loads(out.read_text())
  check_structure(doc)
  assert "cycles 37" in p.stdout
  assert [e["name"] for e in slices(doc, "mxu.phase")] == ["load weights", "stream", "drain"]

def test_run_cli_trace_of_bad_input_is_an_error(tmp_path):
  bad = tmp_path / "bad.tasm"
  bad.write_text("FROB v1\nHALT\nEND\n")
  p = cli("run", "--trace", str(tmp_path / "t.json"), str(bad))
  assert p.returncode == 1 and "FROB" in p.stderr and not (tmp_path / "t.json").exists()

def test_tinytpu_trace_env_traces_every_kernel(tmp_path):
  script, out = tmp_path / "s.py", tmp_path / "trace.json"
  script.write_text(SCRIPT)
  env = {**__import__("os").environ, "DEV": "TINYTPU", "TINYTPU_TRACE": str(out)}
  p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
  assert p.returncode == 0, p.stderr
  counters = eval(p.stdout.split("COUNTERS", 1)[1])
  doc = json.loads(out.read_text())
  check_structure(doc)
  kernels, launches = slices(doc, "kernel"), slices(doc, "kernel.launch")
  assert len(kernels) == counters["kernels"] and len(launches) == counters["launches"]
  check_tiles(kernels, 0, counters["cycles"])  # kernels one after another on the cycle timeline
  check_tiles(launches, 0, counters["cycles"])
  assert sum(e["dur"] for e in slices(doc, "sxu")) == counters["sxu_cycles"]
  assert sum(e["dur"] for e in slices(doc, "loader")) == counters["cycles"]
  assert slices(doc, "mxu")  # the int8 matmul ran on the MXU

def test_profile_report(tmp_path):
  script = tmp_path / "s.py"
  script.write_text(SCRIPT)
  p = cli("profile", str(script), cwd=tmp_path)
  assert p.returncode == 0, p.stderr
  out = p.stdout
  counters = eval(out.split("COUNTERS", 1)[1].splitlines()[0])
  assert f"{counters['kernels']} kernel calls, {counters['launches']} launches, {counters['cycles']:,} cycles" in out
  overall = next(l for l in out.splitlines() if l.startswith("overall"))
  assert f"{counters['cycles']:,}" in overall and "100.0%" in overall
  for section in ("instruction mix: ", "top stall causes: ", "hot instructions:"):
    assert out.count(section) >= 2  # per kernel and overall
  assert "MXU busy" in out or "MXU result" in out  # the matmul's stalls are named

def test_profile_rejects_an_unknown_kernel(tmp_path):
  script = tmp_path / "s.py"
  script.write_text(SCRIPT)
  p = cli("profile", "--html", str(tmp_path / "p.html"), "--kernel", "no_such_kernel", str(script))
  assert p.returncode == 1 and "no kernel named 'no_such_kernel'" in p.stderr

def png_pixels(path: pathlib.Path) -> np.ndarray:
  """RGB(A) pixels of an 8-bit non-interlaced PNG (what Chromium writes)."""
  data, pos, idat, hdr = path.read_bytes(), 8, b"", None
  while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": hdr = struct.unpack(">IIBBBBB", body)
    if kind == b"IDAT": idat += body
    pos += 12 + n
  w, h, depth, ctype = hdr[:4]
  assert depth == 8 and ctype in (2, 6)
  bpp = 3 if ctype == 2 else 4
  raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w * bpp + 1)
  out = np.zeros((h, w * bpp), np.int32)
  for y in range(h):  # undo the per-row filters (PNG spec §9)
    f, row, up = raw[y, 0], raw[y, 1:].astype(np.int32), out[y - 1] if y else np.zeros(w * bpp, np.int32)
    if f == 0: out[y] = row
    elif f == 2: out[y] = (row + up) & 255
    else:
      cur = out[y]
      for x in range(w * bpp):
        a = cur[x - bpp] if x >= bpp else 0
        b, c = up[x], (up[x - bpp] if x >= bpp else 0)
        if f == 1: pred = a
        elif f == 3: pred = (a + b) // 2
        else:
          p = a + b - c
          pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
          pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
        cur[x] = (row[x] + pred) & 255
  return out.reshape(h, w, bpp)

def test_pipeline_page_renders_in_headless_chromium(tmp_path):
  chromium = shutil.which("chromium")
  assert chromium, "needs Debian's chromium: `make deps` installs it"
  script, page, shot = tmp_path / "s.py", tmp_path / "p.html", tmp_path / "p.png"
  script.write_text(SCRIPT)
  p = cli("profile", "--html", str(page), str(script), cwd=tmp_path)
  assert p.returncode == 0, p.stderr
  html = page.read_text()
  assert "http://" not in html and "https://" not in html  # self-contained
  common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=900,400",
            "--virtual-time-budget=3000", "--user-data-dir=" + str(tmp_path / "profile")]
  dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
  assert "data-error" not in dom, dom[:2000]
  rendered = int(dom.split('data-rendered="', 1)[1].split('"', 1)[0])
  assert rendered > 10
  subprocess.run([*common, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
  px = png_pixels(shot)[..., :3]
  timeline = px[120:, 160:]  # right of the track labels, below the header
  colors = {tuple(c) for c in timeline.reshape(-1, 3)[::7]}
  assert len(colors) > 10 and (timeline != 255).any(axis=2).mean() > 0.05  # slices drawn, not a blank page

def test_pipeline_page_of_a_long_call_shows_its_start(monkeypatch):
  from tinytpu import pipeline
  log = _core.TraceLog()
  r = tinytpu.run_tasm((ROOT / "kernels" / "seed" / "add_256.tasm").read_text(), trace=log)
  tr = events.Trace(log)
  data = lambda page: json.loads(page.split('type="application/json">', 1)[1].split("</script>", 1)[0])
  whole = data(pipeline.html(tr))
  assert whole["cycles"] == r.cycles and len(whole["events"]) == len(tr) and whole["note"] == ""
  monkeypatch.setattr(pipeline, "MAX_EVENTS", 50)
  part = data(pipeline.html(tr))
  assert len(part["events"]) <= 50 and part["cycles"] < r.cycles and "showing cycles 0 to" in part["note"]
  assert all(e[2] < part["cycles"] for e in part["events"])

def test_profile_report_of_a_bundle_counts_its_instructions():
  from tinytpu import profile
  log = _core.TraceLog()
  r = tinytpu.run_tasm((ROOT / "kernels" / "seed" / "add_256.tasm").read_text(), trace=log)
  out = profile.report(events.Trace(log))
  assert f"1 kernel calls, 1 launches, {r.cycles:,} cycles" in out
  # add_256: 16 x (LOAD, LOAD, ADD, STORE) and HALT (hardware.md §4.4), at 3, 3, 2 and 1 cycles each
  assert "LOAD x32 (96 cyc)" in out and "VPU ADD x16 (48 cyc)" in out and "STORE x16 (32 cyc)" in out
  assert "HALT x1 (1 cyc)" in out

def traced_script(tmp_path, **env) -> tuple[subprocess.CompletedProcess, dict, dict]:
  """SCRIPT run with TINYTPU_TRACE and `env`: the process, its counters and its trace."""
  script, out = tmp_path / "s.py", tmp_path / "trace.json"
  script.write_text(SCRIPT)
  p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                     env={**__import__("os").environ, "DEV": "TINYTPU", "TINYTPU_TRACE": str(out), **env})
  assert p.returncode == 0, p.stderr
  return p, eval(p.stdout.split("COUNTERS", 1)[1]), json.loads(out.read_text())

def test_trace_cap_stops_recording_with_one_warning_and_a_whole_trace(tmp_path):
  _, full_counters, full = traced_script(tmp_path)
  p, counters, doc = traced_script(tmp_path, TINYTPU_TRACE_MAX_EVENTS="150")
  assert counters == full_counters  # the run goes on: same kernels, launches, cycles
  assert p.stderr.count("TraceCapWarning") == 1 and "recording stopped at cycle" in p.stderr
  check_structure(doc)
  stop = int(doc["otherData"]["coverage"].split("stopped at cycle ")[1].split()[0])
  assert 0 < stop < counters["cycles"]
  timed = [e for e in doc["traceEvents"] if e["ph"] == "X"]
  assert 150 <= len(timed) <= 160 < len([e for e in full["traceEvents"] if e["ph"] == "X"])
  assert all(e["ts"] + e["dur"] <= stop for e in timed)
  check_tiles(slices(doc, "loader"), 0, stop)  # every cycle up to the stop, nothing after
  check_tiles(slices(doc, "kernel"), 0, stop)

def test_trace_of_a_cycle_window_and_of_some_kernels(tmp_path):
  _, counters, doc = traced_script(tmp_path, TINYTPU_TRACE_CYCLES="100:300")
  check_structure(doc)
  check_tiles(slices(doc, "loader"), 100, 300)
  assert doc["otherData"]["coverage"] == "only cycles 100..300"
  _, _, full = traced_script(tmp_path)
  first, second = slices(full, "kernel")
  _, counters, doc = traced_script(tmp_path, TINYTPU_TRACE_KERNELS=f"^{second['name']}$")
  assert [(e["name"], e["ts"], e["dur"]) for e in slices(doc, "kernel")] == [(second["name"], second["ts"], second["dur"])]
  check_tiles(slices(doc, "loader"), second["ts"], counters["cycles"])  # the timeline is the whole script's

def test_bad_trace_bounds_are_named(tmp_path):
  for var, value, says in [("TINYTPU_TRACE_MAX_EVENTS", "lots", "not a whole number"),
                           ("TINYTPU_TRACE_CYCLES", "9:3", "not a cycle window"),
                           ("TINYTPU_TRACE_KERNELS", "(", "not a regular expression")]:
    p = subprocess.run([sys.executable, "-c", "import tinytpu"], capture_output=True, text=True,
                       env={**__import__("os").environ, "TINYTPU_TRACE": str(tmp_path / "t.json"), var: value})
    assert p.returncode == 1 and f"ValueError: {var}: '{value}' is {says}" in p.stderr

def test_run_cli_trace_cap(tmp_path):
  loop = tmp_path / "loop.tasm"
  loop.write_text("LOOP_BEGIN count=255\nVZERO v0\nVZERO v1\nLOOP_END\nHALT\nEND\n")
  plain = cli("run", str(loop))
  p = cli("run", "--trace", str(tmp_path / "t.json"), "--trace-max-events", "100", str(loop))
  assert p.returncode == 0 and p.stdout == plain.stdout
  assert p.stderr.startswith("tinytpu: warning: TINYTPU trace: recording stopped at cycle") and p.stderr.count("\n") == 1
  doc = json.loads((tmp_path / "t.json").read_text())
  check_structure(doc)
  assert 100 <= len([e for e in doc["traceEvents"] if e["ph"] == "X"]) <= 108

def test_profile_of_some_kernels(tmp_path):
  script = tmp_path / "s.py"
  script.write_text(SCRIPT)
  p = cli("profile", "--trace-kernels", "^r_8_8_8$", str(script), cwd=tmp_path)
  assert p.returncode == 0, p.stderr
  rows = [l.split()[0] for l in p.stdout.split("\n\n")[1].splitlines()[1:-1]]
  assert rows == ["r_8_8_8", "overall"]
  p = cli("profile", "--trace-max-events", "150", str(script), cwd=tmp_path)
  assert p.returncode == 0 and p.stderr.count("tinytpu: warning: TINYTPU trace: recording stopped at cycle") == 1
  assert "cycles\n  (a bounded trace: recording stopped at cycle" in p.stdout  # under the report's first line
