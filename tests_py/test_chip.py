"""A chip of several cores (the chip4 configuration): TINYTPU:0..3 are its cores, each running its kernels on a thread of
its own; the chip's timeline overlaps their kernels and counts the NoC's cycles for copies between them. Each test runs
in a process of its own, whose devices open on the chip configuration (TINYTPU_CONFIG)."""
import json, os, subprocess, sys, textwrap

def run_on_chip(code: str, **env) -> dict:
  """Runs `code` (which sets `out`, a dict) in a fresh process on the chip4 configuration; returns `out`."""
  script = "import json, numpy as np, tinytpu\nfrom tinygrad import Tensor, Device\nout = {}\n" + textwrap.dedent(code) + \
           "\nprint('OUT' + json.dumps(out))\n"
  proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                        env={**os.environ, "TINYTPU_CONFIG": "chip4", **env})
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("OUT"))[3:])

SHARDED = """
devs = tuple(f"TINYTPU:{i}" for i in range(4))
a = (np.arange(64 * 32, dtype=np.int32).reshape(64, 32) % 37) - 18
b = (np.arange(32 * 16, dtype=np.int32).reshape(32, 16) % 11) - 5
x, w = Tensor(a).shard(devs, axis=0).realize(), Tensor(b).to(devs).realize()
tinytpu.reset_counters()
got = (x @ w).relu().sum(axis=0).numpy()
out["exact"] = got.tolist() == np.maximum(a @ b, 0).sum(axis=0).tolist()
out["counters"] = tinytpu.counters()
out["per_core"] = [tinytpu.counters(d)["cycles"] for d in ("TINYTPU", "TINYTPU:1", "TINYTPU:2", "TINYTPU:3")]
"""

def test_cores_of_a_chip_overlap_and_copy_over_the_noc():
  out = run_on_chip(SHARDED)
  c = out["counters"]
  assert out["exact"], "a sharded matmul on the chip's cores differs from tinygrad's CPU device"
  assert all(cycles > 0 for cycles in out["per_core"]) and sum(out["per_core"]) == c["cycles"]
  # the cores run at once: the chip's elapsed cycles are its busiest core's and the all-reduce's copies
  assert max(out["per_core"]) < c["chip_cycles"] < c["cycles"]
  assert c["noc_bytes"] > 0

# Whether a launch ran in order, in which batch, and whether it was also ticked to check it, depends on which core's
# thread first filled the timing cache its cores share (the first launch of a timing key ticks); the results and
# every simulated counter must not.
HOST_RUN_STATS = ("in_order", "checked", "batches")

def test_a_chip_runs_the_same_with_its_cores_one_after_another():
  one_after_another, at_once = run_on_chip(SHARDED, TINYTPU_ASYNC="0"), run_on_chip(SHARDED)
  for out in (one_after_another, at_once):
    for name in HOST_RUN_STATS: out["counters"].pop(name)
  assert one_after_another == at_once

def test_a_core_the_chip_does_not_have_is_an_error():
  out = run_on_chip("""
try: Device["TINYTPU:4"]
except ValueError as e: out["error"] = str(e)
""")
  assert "has 4 cores, TINYTPU:0 to TINYTPU:3" in out["error"]

def test_an_error_on_a_core_is_raised_at_the_next_wait_and_nothing_after_it_passes_for_whole():
  """A queued kernel that fails raises when Python next waits for its core or queues on it; the buffers it and the
  kernels after it store into read as incomplete, never as results."""
  out = run_on_chip("""
from tinytpu import device
x = Tensor(np.arange(16, dtype=np.float32), device="TINYTPU:1").realize()
device._incomplete.append((*device._span(x.uop.buffer._buf), "made up"))  # as a kernel stopped while writing it
errors = []
def attempt(f):
  try: f()
  except RuntimeError as e: errors.append(str(e))
y, z = x + 1, x * 2
for f in (y.realize, z.realize, y.numpy, z.numpy, y.numpy): attempt(f)
out["errors"] = errors
out["after"] = (Tensor(np.ones(4, dtype=np.float32), device="TINYTPU:1") * 3).numpy().tolist()  # the core goes on
""")
  # y's kernel fails reading x: raised once, at z.realize or at the first y.numpy (the race is the core's thread's);
  # then y reads as incomplete, and so does z, which never ran
  errors = out["errors"]
  assert "this data is incomplete: made up" in errors[0] and sum("made up" in e for e in errors) == 1
  assert all("stopped before its end (RuntimeError)" in e for e in errors[1:-2])
  assert "did not run: an earlier kernel on TINYTPU:1 failed" in errors[-2]
  assert "stopped before its end (RuntimeError)" in errors[-1]
  assert out["after"] == [3.0] * 4

def test_a_trace_records_a_chips_cores_one_after_another():
  """While a trace records, a chip's cores run their calls in the caller, in order: one log, no thread writing it
  beside another."""
  out = run_on_chip("""
from tinytpu import trace
log = trace.start()
x = Tensor(np.arange(64, dtype=np.int32)).shard(("TINYTPU:0", "TINYTPU:1"), axis=0)
out["sum"] = (x * 2).sum().item()
trace.stop()
out["events"] = log.num_events
""")
  assert out["sum"] == 2 * sum(range(64)) and out["events"] > 0

def test_a_lone_core_counts_its_cycles_as_its_chip_cycles():
  c = run_on_chip("""
tinytpu.reset_counters()
(Tensor(np.arange(256, dtype=np.int32), device="TINYTPU") + 1).numpy()
out.update(tinytpu.counters())
""", TINYTPU_CONFIG="reference")
  assert c["chip_cycles"] == c["cycles"] > 0 and c["noc_bytes"] == 0

HBM_ADD = """
rng = np.random.default_rng(3)
a, b = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
x, y = Tensor(a, device="TINYTPU").realize(), Tensor(b, device="TINYTPU").realize()
tinytpu.reset_counters()
out["exact"] = bool(np.array_equal((x + y).numpy(), a + b))
out["counters"] = tinytpu.counters()
"""

def test_a_core_fed_from_hbm_counts_the_bytes_its_dma_engine_moves():
  """On the hbm configuration (one channel of 16 bytes a cycle) an add's launches read their operands from HBM and
  write their sums back: the counters hold every byte, the cycles are no fewer than the channel needs for them, and
  ticking every launch gives the same cycles as running them in order."""
  out = run_on_chip(HBM_ADD, TINYTPU_CONFIG="hbm")
  c = out["counters"]
  assert out["exact"]
  data = 3 * 4096 * 4  # two operands in, the sum out
  assert data <= c["hbm_bytes"] < data + 1024  # and the first launch's program and output list
  assert c["cycles"] * 16 >= c["hbm_bytes"]
  assert c["cycles"] * 16 < 1.1 * c["hbm_bytes"]  # the add is bound by the channel: within 10% of its bandwidth
  assert run_on_chip(HBM_ADD, TINYTPU_CONFIG="hbm", TINYTPU_FUNCTIONAL="0")["counters"]["cycles"] == c["cycles"]
  assert run_on_chip(HBM_ADD, TINYTPU_CONFIG="reference")["counters"]["hbm_bytes"] == 0

def test_a_trace_of_a_chip_has_a_process_per_core_with_its_kernels_and_the_copies_into_it():
  """Traced, each core's kernels sit at their place on the chip's timeline (kernels of different cores overlap), the
  copies between cores are slices of the NoC track of the core they go to, and the profile reports each core."""
  out = run_on_chip("""
import io
from tinytpu import configs, events, profile, trace
""" + SHARDED.replace("tinytpu.reset_counters()", "tinytpu.reset_counters()\nlog = trace.start()") + """
trace.stop()
tr = events.Trace(log)
f = io.StringIO()
events.write_json(tr, f)
doc = json.loads(f.getvalue())["traceEvents"]
out["processes"] = sorted(e["args"]["name"] for e in doc if e["ph"] == "M" and e["name"] == "process_name")
out["kernels"] = [(e["pid"], e["ts"], e["ts"] + e["dur"]) for e in doc if e.get("cat") == "kernel"]
out["copies"] = [(e["pid"], e["name"], e["ts"] + e["dur"]) for e in doc if e.get("cat") == "noc"]
out["report"] = profile.report(tr, counters=tinytpu.counters(), config=configs.from_spec())
""")
  assert out["exact"]
  assert out["processes"] == [f"TinyTPU core {i} (TINYTPU:{i})" for i in range(4)]
  kernels, c = out["kernels"], out["counters"]
  assert sum(e - b for _, b, e in kernels) == c["cycles"]
  assert any(p != q and b1 < e2 and b2 < e1 for p, b1, e1 in kernels for q, b2, e2 in kernels)  # cores at once
  copied = [int(name.split()[1]) for _, name, _ in out["copies"]]  # "copy N B from core S"
  assert copied and sum(copied) == c["noc_bytes"]
  assert max(e for *_, e in kernels + out["copies"]) == c["chip_cycles"]
  assert all(f"==== core {i} (TINYTPU:{i})" in out["report"] for i in range(4))
  assert "HBM: " in out["report"] and f"NoC: {c['noc_bytes']:,} bytes" in out["report"]

EMBEDDINGS = """
from tinygrad import Variable
rng = np.random.default_rng(0)
W, P = rng.standard_normal((32, 64)).astype(np.float32), rng.standard_normal((16, 64)).astype(np.float32)
wte, wpe = Tensor(W, device="TINYTPU").realize(), Tensor(P, device="TINYTPU").realize()
out["runs"] = []
for tok, pos in [(5, 0), (17, 1), (31, 2)]:  # a decode step's token and position embeddings (tinygrad's gpt2)
  t, p = Variable("tok", 0, 31).bind(tok), Variable("pos", 0, 15).bind(pos)
  tinytpu.reset_counters()
  got = (wte.shrink(((t, t + 1), None)) + wpe.shrink(((p, p + 1), None))).numpy()
  c = tinytpu.counters()
  out["runs"].append([bool(np.array_equal(got, W[tok:tok + 1] + P[pos:pos + 1])), c["cycles"], c["sc_lookups"]])
"""

def test_cores_sharing_hbm_take_a_share_of_its_channels():
  """chip4 with hbm_shared: its cores share the one channel, each owning a cycle in four (config_fields.def), so an
  add on one core moves the same bytes at a quarter of the bandwidth, ticked or run in order alike."""
  spec = "chip4,hbm_shared=1"
  shared, own = run_on_chip(HBM_ADD, TINYTPU_CONFIG=spec), run_on_chip(HBM_ADD, TINYTPU_CONFIG="chip4")
  c = shared["counters"]
  assert shared["exact"] and c["hbm_bytes"] == own["counters"]["hbm_bytes"]
  assert c["cycles"] * 16 >= 4 * c["hbm_bytes"]
  assert c["cycles"] * 16 < 1.1 * 4 * c["hbm_bytes"]  # bound by its quarter of the channel
  assert run_on_chip(HBM_ADD, TINYTPU_CONFIG=spec, TINYTPU_FUNCTIONAL="0")["counters"]["cycles"] == c["cycles"]

def test_one_cores_counters_and_reset_wait_for_every_core_of_its_chip():
  """The chip's timeline counts every core's work: asked about TINYTPU:0 while TINYTPU:1 still runs its queue, the
  chip's cycles are the whole chip's, and a reset through TINYTPU:0 leaves none of TINYTPU:1's queued work behind."""
  out = run_on_chip("""
x = Tensor(np.ones((64, 64), np.float32), device="TINYTPU:1").realize()
Tensor([1.0], device="TINYTPU").realize()  # core 0 opened
tinytpu.reset_counters()
(x @ x).realize()  # queued on core 1's thread
out["one"] = tinytpu.counters("TINYTPU")["chip_cycles"]
out["all"] = tinytpu.counters()["chip_cycles"]
(x @ x).realize()
tinytpu.reset_counters("TINYTPU")
out["after_reset"] = tinytpu.counters()["chip_cycles"]
""")
  assert out["one"] == out["all"] > 0 and out["after_reset"] == 0

def test_a_device_given_another_configuration_runs_its_kernels_compiled_for_it():
  """tinygrad keeps a device's programs: one given another configuration of its geometry runs them as compiled for
  the new one (here an add on hbm moves its bytes from HBM, then on the reference moves none)."""
  out = run_on_chip("""
from tinytpu import configs
a = np.arange(256, dtype=np.float32)
for spec in ("hbm", "reference", "hbm"):
  Device["TINYTPU:1"].config = configs.from_spec(spec)
  x = Tensor(a, device="TINYTPU:1").realize()
  tinytpu.reset_counters()
  assert ((x + 1).numpy() == a + 1).all()
  out[spec] = out.get(spec, []) + [tinytpu.counters()["hbm_bytes"]]
""", TINYTPU_CONFIG="reference")
  assert out["reference"] == [0] and out["hbm"][0] == out["hbm"][1] > 0

def test_embedding_rows_a_variable_picks_go_to_the_sparse_core_where_it_has_them_in_sooner():
  """On chip4 (a SparseCore beside each core) the rows of the two embeddings are looked up partly by the SparseCore,
  beside the DMA engine's reads: the same sums, in fewer cycles than with the DMA engine alone, and the same cycles
  with every launch ticked."""
  sparse, alone = run_on_chip(EMBEDDINGS), run_on_chip(EMBEDDINGS, TINYTPU_CONFIG="chip4,sparse_core=0")
  assert all(exact for exact, _, _ in sparse["runs"] + alone["runs"])
  assert all(lookups > 0 for *_, lookups in sparse["runs"]) and all(lookups == 0 for *_, lookups in alone["runs"])
  assert all(s[1] < a[1] for s, a in zip(sparse["runs"], alone["runs"]))
  assert run_on_chip(EMBEDDINGS, TINYTPU_FUNCTIONAL="0") == sparse

def test_a_sparse_core_without_hbm_is_an_error():
  out = run_on_chip("""
try: Tensor([1.0], device="TINYTPU").realize()
except ValueError as e: out["error"] = str(e)
""", TINYTPU_CONFIG="reference,sparse_core=1")
  assert "sparse_core = 1 needs HBM" in out["error"]

def test_a_tensor_freed_while_a_cores_queue_still_reads_it_is_read_whole():
  """A queued matmul's input freed by Python before the core's thread runs it, and its memory (tinygrad's allocator
  caches freed buffers) taken at once by a new tensor of the same size: the matmul reads the input it was given."""
  out = run_on_chip("""
rng = np.random.default_rng(7)
a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
x = Tensor(a, device="TINYTPU:1").realize()
ys = [(x @ x).contiguous() for _ in range(3)]
for y in ys: y.realize()  # queued on core 1's thread
del x
z = Tensor(b, device="TINYTPU:1").realize()  # may take x's freed buffer
out["ok"] = all(np.allclose(y.numpy(), a @ a, rtol=1e-5, atol=1e-4) for y in ys) and np.array_equal(z.numpy(), b)
""")
  assert out["ok"]

def test_a_sharded_training_step_repeated_gives_the_same_losses_and_from_the_second_the_same_cycles():
  """bench/mnist_multigpu's training, its batch sharded over two cores, run three times from one seed in one process
  (bench/chip_soak.py runs it for minutes): the same losses every time, and the same chip cycles from the second on
  (the first starts with no program resident in the cores' program memories)."""
  out = run_on_chip("""
import os, sys
sys.path.insert(0, os.getcwd())
from bench.mnist_multigpu import train
runs = [train("TINYTPU", 2, 8, 2) for _ in range(3)]
out["losses"], out["cycles"] = [r[0] for r in runs], [r[2] for r in runs]
""")
  assert out["losses"][0] == out["losses"][1] == out["losses"][2] and all(l > 0 for l in out["losses"][0])
  assert out["cycles"][1] == out["cycles"][2] and all(c > 0 for c in out["cycles"][1])

def test_python_threads_driving_different_cores_each_get_their_own_results():
  """Four Python threads, each driving one core (int32 matmul chains, exact): tinygrad is not thread-safe (its
  Context is process-wide: a second thread met "usage of device TINYTPU:1 disallowed" while the first compiled), so
  tinygrad's entry points take one lock (device.tinygrad_lock) and the threads take turns in it."""
  out = run_on_chip("""
import threading
rng = np.random.default_rng(0)
data = [rng.integers(-50, 50, (16, 16)).astype(np.int32) for _ in range(4)]
ws = [rng.integers(-3, 4, (16, 16)).astype(np.int32) for _ in range(4)]
got, errors = {}, []
def drive(i):
  try:
    x, w = Tensor(data[i], device=f"TINYTPU:{i}"), Tensor(ws[i], device=f"TINYTPU:{i}")
    for _ in range(6): x = (x @ w).clip(-1000, 1000) + i
    got[i] = x.numpy()
  except Exception as e: errors.append(f"core {i}: {type(e).__name__}: {e}")
threads = [threading.Thread(target=drive, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
def want(i):
  x = data[i]
  for _ in range(6): x = np.clip(x @ ws[i], -1000, 1000) + i
  return x
out["errors"], out["exact"] = errors, [bool(i in got and np.array_equal(got[i], want(i))) for i in range(4)]
""")
  assert out["errors"] == [] and out["exact"] == [True] * 4

def test_an_error_on_one_core_leaves_the_others_running_to_their_right_results():
  """Cores 0, 2 and 3 have matmuls queued when core 1's kernel fails: core 1's error is raised at its next wait and
  the other cores' results are right."""
  out = run_on_chip("""
from tinytpu import device
rng = np.random.default_rng(3)
a = [rng.standard_normal((48, 48)).astype(np.float32) for _ in range(4)]
ys = {i: (Tensor(a[i], device=f"TINYTPU:{i}") @ Tensor(a[i], device=f"TINYTPU:{i}")).relu().contiguous() for i in (0, 2, 3)}
for y in ys.values(): y.realize()  # queued on their cores' threads
x = Tensor(np.arange(16, dtype=np.float32), device="TINYTPU:1").realize()
device._incomplete.append((*device._span(x.uop.buffer._buf), "made up"))  # as a kernel stopped while writing it
try: (x + 1).numpy(); out["error"] = None
except RuntimeError as e: out["error"] = str(e)
out["right"] = [bool(np.allclose(ys[i].numpy(), np.maximum(a[i] @ a[i], 0), rtol=1e-5, atol=1e-4)) for i in (0, 2, 3)]
""")
  assert out["error"] is not None and "made up" in out["error"]
  assert out["right"] == [True] * 3

CTRL_C = """
import faulthandler, json, os, signal, sys
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's dump of every thread, should it not stop
# Ctrl-C as at a terminal: a process started in the background by a shell without job control (as a CI runner may
# start the tests) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, os.getcwd())
from bench.mnist_multigpu import train
first = train("TINYTPU", 2, 8, 1)[0]
print("READY", flush=True)
try:
  while True: train("TINYTPU", 2, 8, 1)
except KeyboardInterrupt: print("INTERRUPTED", flush=True)
print("OUT" + json.dumps({"first": first, "again": train("TINYTPU", 2, 8, 1)[0]}), flush=True)
"""

def test_ctrl_c_during_a_sharded_training_step_stops_it_and_the_next_step_is_right():
  """SIGINT (Ctrl-C) lands at a random moment of a training step sharded over two cores: it is raised as
  KeyboardInterrupt (no hang, no crash), and a step run after it gives the first step's loss. Python ignores a
  KeyboardInterrupt raised inside a finalizer ("Exception ignored in ...": a tensor's buffer freed as the signal
  arrives), so, as a user would, the test presses Ctrl-C again when one is ignored. The child runs without
  TINYTPU_VERIFY: ticking every launch as well makes a step minutes long on a loaded machine, and the test is
  about the interrupt."""
  import random, signal, time
  env = {**os.environ, "TINYTPU_CONFIG": "chip4", "TINYTPU_VERIFY": "0"}
  proc = subprocess.Popen([sys.executable, "-c", CTRL_C], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  try:
    assert proc.stdout.readline().strip() == "READY", proc.stderr.read()[-3000:]
    time.sleep(random.uniform(0.2, 3.0))  # inside a step: scheduling, compiling, or the cores running
    for presses in range(1, 4):
      proc.send_signal(signal.SIGINT)
      try:
        stdout, stderr = proc.communicate(timeout=180)
        break
      except subprocess.TimeoutExpired: pass
    else:
      proc.send_signal(signal.SIGUSR1)
      time.sleep(5)
      proc.kill()
      stdout, stderr = proc.communicate()
      raise AssertionError(f"three Ctrl-Cs did not stop the training loop; its threads:\n{stderr[-6000:]}")
  finally:
    proc.kill()
  assert proc.returncode == 0, stderr[-3000:]
  assert "INTERRUPTED" in stdout
  assert presses == 1 or "Exception ignored" in stderr, f"Ctrl-C needed {presses} presses:\n{stderr[-3000:]}"
  out = json.loads(next(l for l in stdout.splitlines() if l.startswith("OUT"))[3:])
  assert out["again"] == out["first"]
