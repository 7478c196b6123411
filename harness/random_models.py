#!/usr/bin/env python3
"""Random differential models: from an integer seed, a small random model (convolutions with BatchNorm and pooling,
linear layers with LayerNorm, attention, embeddings, and mixtures of them) runs forward and backward on TINYTPU, on
a random configuration, and on tinygrad's CPU device; its loss, outputs, weight gradients and input gradient are
compared. Every case runs in its own forked process (random_programs.run_forked), so a crash or a hang is a reported
case with its seed.

  python harness/random_models.py --count 200 --seed 0 --jobs 2      # summary, one line per failing case
  python harness/random_models.py --case 17                           # one case in the foreground
  python harness/random_models.py --model '{"config": ...}'           # a model as a failure printed it
  python harness/random_models.py --shrink 17                         # the smallest model that still fails

The configuration: any named single-core variant, or chip4 with the batch sharded over 2 or 4 of its cores (data
parallel: the weights on every core, their gradients summed over the cores by tinygrad); TINYTPU_ASYNC on or off.

The reference. TINYTPU rounds every float32 op as IEEE does (no fused multiply-add) and may sum a reduction in
another order (docs/accuracy.md). tinygrad's CPU device contracts a*b+c into one rounding, and its PYTHON device
computes every op in tinygrad's order, rounding each to float32. A model's gradients can amplify a last-bit
difference a lot (a training-mode BatchNorm over a batch of 4 divides by a small variance), so CPU and TINYTPU may
differ where both are right. A case passes when every result is within tolerance of CPU's, or else of PYTHON's;
it fails only when TINYTPU matches neither (PYTHON is run only then: it emulates every op in Python).
"""
from __future__ import annotations
import argparse, collections, json, math, os, random, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from random_programs import FAILURES, RUNNING, head, run_forked  # (also sets tinygrad's PARALLEL to 0 for the forks)
import tinytpu  # noqa: F401  registers TINYTPU
from tinytpu import configs
from tinygrad import Tensor

RTOL, ATOL = 1e-3, 1e-4  # |got - want| <= RTOL*|want| + ATOL*scale for every element of every result (differs)
CHIP = "chip4"
CONFIGS = [c["name"] for c in configs.named() if not c["name"].endswith("chip4")]  # the single-core variants

# *** the model: a spec of plain data (printed in one line, read back by --model)

def generate(seed: int) -> dict:
  rng = random.Random(seed)
  shards = rng.choice([0, 0, 0, 2, 4])
  spec = {"config": CHIP if shards else rng.choice(CONFIGS), "shards": shards, "async": rng.choice([1, 0]),
          "batch": rng.choice([4, 8]) if shards else rng.choice([1, 2, 3, 4, 6]), "classes": rng.randint(2, 10),
          "loss": rng.choice(["cross_entropy", "mse"]), "seed": seed}
  kind = rng.choice(["image", "features", "tokens", "image_attention"])
  layers = []
  if kind in ("image", "image_attention"):
    spec["input"] = {"image": [rng.randint(1, 4), rng.choice([4, 5, 6, 8])]}  # channels, side
    for _ in range(rng.randint(1, 3)): layers.append(conv_layer(rng))
  elif kind == "features":
    spec["input"] = {"features": rng.randint(2, 24)}
  else:
    spec["input"] = {"tokens": [rng.randint(3, 20), rng.randint(2, 8)]}  # vocabulary, length
    layers.append({"embedding": rng.choice([4, 8, 12, 16])})
  if kind in ("tokens", "image_attention"):
    for _ in range(rng.randint(1, 2)):
      layers.append({"attention": rng.choice([1, 2]), "causal": rng.random() < 0.5} if rng.random() < 0.6 else linear_layer(rng))
  else:
    for _ in range(rng.randint(0 if kind == "image" else 1, 2)): layers.append(linear_layer(rng))
  spec["layers"] = layers
  return spec

def conv_layer(rng):
  return {"conv": rng.randint(1, 8), "k": rng.choice([1, 2, 3]), "pad": rng.choice([0, 1]), "stride": rng.choice([1, 1, 2]),
          "bn": rng.random() < 0.6, "act": rng.choice(["relu", "gelu", "none"]), "pool": rng.choice(["none", "none", "max", "avg"])}

def linear_layer(rng):
  return {"linear": rng.randint(2, 24), "ln": rng.random() < 0.5, "act": rng.choice(["relu", "gelu", "silu", "none"])}

def describe(spec: dict) -> str:
  return json.dumps(spec, separators=(",", ":"))

def shapes(spec: dict) -> list[tuple[str, tuple]]:
  """The model's parameters, in order, with their shapes; raises ValueError for a model whose shapes do not work
  (a convolution larger than its input), which the generator then redraws."""
  params, inp = [], spec["input"]
  if "image" in inp: (c, side), shape = inp["image"], "image"
  elif "features" in inp: c, shape = inp["features"], "flat"
  else: c, shape = inp["tokens"][1], "sequence"  # the sequence's width, set by the embedding
  for i, layer in enumerate(spec["layers"]):
    if "conv" in layer:
      side = (side + 2 * layer["pad"] - layer["k"]) // layer["stride"] + 1
      if side < 1: raise ValueError(f"layer {i}: the convolution is larger than its input")
      params += [(f"{i}.conv.weight", (layer["conv"], c, layer["k"], layer["k"])), (f"{i}.conv.bias", (layer["conv"],))]
      c = layer["conv"]
      if layer["bn"]: params += [(f"{i}.bn.weight", (c,)), (f"{i}.bn.bias", (c,))]
      if layer["pool"] != "none":
        side //= 2
        if side < 1: raise ValueError(f"layer {i}: pooling leaves no pixel")
    elif "embedding" in layer:
      params.append((f"{i}.embedding.weight", (spec["input"]["tokens"][0], layer["embedding"])))
      c = layer["embedding"]
    elif "attention" in layer:
      if shape == "flat": raise ValueError(f"layer {i}: attention needs a sequence, the layer before made one vector")
      if shape == "image": shape = "sequence"  # (B, C, H, W) read as a sequence of H*W tokens of C channels
      for name in ("q", "k", "v", "o"): params += [(f"{i}.attention.{name}.weight", (c, c)), (f"{i}.attention.{name}.bias", (c,))]
      if c % layer["attention"]: raise ValueError(f"layer {i}: {c} channels do not split into {layer['attention']} heads")
    else:
      if shape == "image": c, shape = c * side * side, "flat"
      params += [(f"{i}.linear.weight", (layer["linear"], c)), (f"{i}.linear.bias", (layer["linear"],))]
      c = layer["linear"]
      if layer["ln"]: params += [(f"{i}.ln.weight", (c,)), (f"{i}.ln.bias", (c,))]
  if shape == "image": c *= side * side
  params += [("head.weight", (spec["classes"], c)), ("head.bias", (spec["classes"],))]
  return params

def data(spec: dict) -> dict[str, np.ndarray]:
  """The model's parameters, input and labels, drawn from the spec's seed: the same on every device."""
  rng, inp, b = np.random.default_rng(spec["seed"]), spec["input"], spec["batch"]
  out = {}
  for name, shape in shapes(spec):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    if name.endswith((".bn.weight", ".ln.weight")): out[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    else: out[name] = (rng.standard_normal(shape) / math.sqrt(fan_in)).astype(np.float32)
  if "image" in inp: out["x"] = rng.standard_normal((b, inp["image"][0], inp["image"][1], inp["image"][1])).astype(np.float32)
  elif "features" in inp: out["x"] = rng.standard_normal((b, inp["features"])).astype(np.float32)
  else: out["x"] = rng.integers(0, inp["tokens"][0], (b, inp["tokens"][1])).astype(np.int32)
  out["y"] = rng.integers(0, spec["classes"], (b,)).astype(np.int32)
  out["target"] = rng.standard_normal((b, spec["classes"])).astype(np.float32)
  return out

def act(x: Tensor, name: str) -> Tensor:
  return {"relu": Tensor.relu, "gelu": Tensor.gelu, "silu": Tensor.silu, "none": lambda t: t}[name](x)

def forward(spec: dict, p: dict[str, Tensor], x: Tensor) -> Tensor:
  for i, layer in enumerate(spec["layers"]):
    if "conv" in layer:
      x = x.conv2d(p[f"{i}.conv.weight"], p[f"{i}.conv.bias"], stride=layer["stride"], padding=layer["pad"])
      if layer["bn"]:  # training mode, as tinygrad's nn.BatchNorm computes it
        mean = x.mean(axis=(0, 2, 3))
        var = (x - mean.reshape(1, -1, 1, 1)).square().mean(axis=(0, 2, 3))
        x = x.batchnorm(p[f"{i}.bn.weight"], p[f"{i}.bn.bias"], mean, (var + 1e-5).rsqrt())
      x = act(x, layer["act"])
      if layer["pool"] == "max": x = x.max_pool2d(2)
      if layer["pool"] == "avg": x = x.avg_pool2d(2)
    elif "embedding" in layer:
      x = p[f"{i}.embedding.weight"][x]
    elif "attention" in layer:
      if x.ndim == 4: x = x.flatten(2).transpose(1, 2)
      (b, t, c), h = x.shape, layer["attention"]
      q, k, v = (x.linear(p[f"{i}.attention.{n}.weight"].T, p[f"{i}.attention.{n}.bias"]).reshape(b, t, h, c // h).transpose(1, 2)
                 for n in "qkv")
      y = q.scaled_dot_product_attention(k, v, is_causal=layer["causal"]).transpose(1, 2).reshape(b, t, c)
      x = x + y.linear(p[f"{i}.attention.o.weight"].T, p[f"{i}.attention.o.bias"])
    else:
      if x.ndim == 4: x = x.flatten(1)
      x = x.linear(p[f"{i}.linear.weight"].T, p[f"{i}.linear.bias"])
      if layer["ln"]: x = x.layernorm() * p[f"{i}.ln.weight"] + p[f"{i}.ln.bias"]
      x = act(x, layer["act"])
  if x.ndim == 4: x = x.flatten(1)
  if x.ndim == 3: x = x.mean(axis=1)
  return x.linear(p["head.weight"].T, p["head.bias"])

def run(spec: dict, device: str) -> dict[str, np.ndarray]:
  """The model's loss, outputs and gradients on device (TINYTPU: the spec's configuration, sharded or not)."""
  print(RUNNING + device, file=sys.stderr, flush=True)  # names the device a dead case was on
  d = data(spec)
  devices = tuple(f"{device}:{i}" for i in range(spec["shards"])) if device == "TINYTPU" and spec["shards"] else None
  def put(a: np.ndarray, batch: bool) -> Tensor:
    t = Tensor(a, device=device if devices is None else devices[0])
    if devices is not None: t = t.shard(devices, axis=0 if batch else None)
    return t.realize()
  params = {name: put(d[name], False) for name, _ in shapes(spec)}
  x = put(d["x"], True)
  out = forward(spec, params, x)
  if spec["loss"] == "cross_entropy": loss = out.sparse_categorical_crossentropy(put(d["y"], True))
  else: loss = (out - put(d["target"], True)).square().mean()
  wrt = {f"grad {n}": t for n, t in params.items()} | ({"grad input": x} if x.is_floating_point() else {})
  results = {"loss": loss, "output": out, **dict(zip(wrt, loss.gradient(*wrt.values())))}
  Tensor.realize(*results.values())  # one schedule for them all
  return {name: t.numpy() for name, t in results.items()}

# *** the verdict

def differs(got: dict, want: dict) -> str:
  """'' when every result is within tolerance, else the first that is not. A gradient's scale is the largest of all
  gradients: one that is zero in exact arithmetic (a bias before a BatchNorm, a key's bias in attention) is computed
  as the cancelling sum of much larger terms, and its last bits differ between any two devices."""
  grad_scale = max((np.max(np.abs(w), initial=0) for name, w in want.items() if name.startswith("grad ")), default=0)
  for name, w in want.items():
    g = got.get(name)
    if g is None or g.shape != w.shape: return f"{name}: got {None if g is None else g.shape}, want {w.shape}"
    with np.errstate(all="ignore"):
      err = np.abs(g.astype(np.float64) - w)
      scale = grad_scale if name.startswith("grad ") else np.max(np.abs(w), initial=0)
      ok = (err <= RTOL * np.abs(w) + ATOL * scale) | (g == w)
    if not ok.all():
      at = np.unravel_index(np.argmax(~ok), w.shape)
      return f"{name}: {(~ok).sum()} of {w.size} differ, first at {tuple(int(i) for i in at)}: got {g[at]!r}, want {w[at]!r}"
  return ""

def check(spec: dict) -> dict:
  """Run spec on CPU and TINYTPU (and PYTHON where they differ) and compare. Never raises."""
  out = {"seed": spec["seed"], "model": describe(spec), "on": spec["config"] + (f" x{spec['shards']}" if spec["shards"] else "")}
  t = time.perf_counter()
  try: want = run(spec, "CPU")
  except Exception as e: return {**out, "status": "reference error", "detail": head(e)}
  out["cpu_s"], t = time.perf_counter() - t, time.perf_counter()
  try: got = run(spec, "TINYTPU")
  except Exception as e: return {**out, "status": "unexpected error", "detail": head(e)}
  out["tinytpu_s"] = time.perf_counter() - t
  if not (against_cpu := differs(got, want)): return {**out, "status": "agrees", "reference": "CPU"}
  try: strict = run(spec, "PYTHON")
  except Exception as e: return {**out, "status": "reference error", "detail": f"CPU differs ({against_cpu}); PYTHON: {head(e)}"}
  if not (against_python := differs(got, strict)): return {**out, "status": "agrees", "reference": "PYTHON", "cpu_differs": against_cpu}
  return {**out, "status": "wrong", "detail": f"against CPU {against_cpu}; against PYTHON {against_python}"}

def model(seed: int) -> dict:
  """The spec of case seed: the first draw from seed, seed + 1 << 32, ... whose shapes work."""
  for attempt in range(100):
    if works(spec := generate(seed + (attempt << 32))): return {**spec, "seed": seed}
  raise RuntimeError(f"seed {seed}: no model with working shapes in 100 draws")

def run_case(seed: int, spec: dict | None = None) -> dict:
  try: spec = spec or model(seed)
  except Exception as e: return {"seed": seed, "status": "generator error", "detail": head(e)}
  os.environ["TINYTPU_CONFIG"], os.environ["TINYTPU_ASYNC"] = spec["config"], str(spec["async"])  # read as TINYTPU opens
  try: return check(spec)
  except Exception as e: return {"seed": seed, "model": describe(spec), "status": "unexpected error", "detail": head(e)}

# *** the shrinker

def smaller(spec: dict):
  """Specs one step smaller than spec: a layer fewer, a smaller batch or size, one part of a layer off."""
  layers = spec["layers"]
  for i in range(len(layers)):
    if "embedding" not in layers[i]: yield {**spec, "layers": layers[:i] + layers[i + 1:]}
  if spec["shards"]: yield {**spec, "shards": 2 if spec["shards"] == 4 else 0, "config": spec["config"] if spec["shards"] == 4 else "reference"}
  elif spec["config"] != "reference": yield {**spec, "config": "reference"}
  if spec["async"]: yield {**spec, "async": 0}
  if spec["batch"] > max(1, spec["shards"]): yield {**spec, "batch": max(spec["shards"], spec["batch"] // 2, 1)}
  if spec["classes"] > 2: yield {**spec, "classes": 2}
  if spec["loss"] != "mse": yield {**spec, "loss": "mse"}
  for i, layer in enumerate(layers):
    for key, plain in (("bn", False), ("ln", False), ("act", "none"), ("pool", "none"), ("causal", False), ("stride", 1), ("pad", 0)):
      if key in layer and layer[key] != plain: yield {**spec, "layers": layers[:i] + [{**layer, key: plain}] + layers[i + 1:]}
    for key in ("conv", "linear", "embedding", "k"):
      if key in layer and layer[key] > 1: yield {**spec, "layers": layers[:i] + [{**layer, key: layer[key] // 2 or 1}] + layers[i + 1:]}
  inp = spec["input"]
  if "image" in inp and inp["image"][1] > 2: yield {**spec, "input": {"image": [inp["image"][0], inp["image"][1] - 1]}}
  if "image" in inp and inp["image"][0] > 1: yield {**spec, "input": {"image": [1, inp["image"][1]]}}
  if "features" in inp and inp["features"] > 1: yield {**spec, "input": {"features": inp["features"] // 2}}
  if "tokens" in inp and inp["tokens"][1] > 1: yield {**spec, "input": {"tokens": [inp["tokens"][0], inp["tokens"][1] // 2]}}

def shrink(spec: dict, timeout: float, case=None) -> dict:
  """The smallest model found, step by step, that still fails (each step run by case(seed, spec), by default
  run_case, in a forked process)."""
  case = case or run_case
  def fails(candidate: dict) -> dict | None:
    res = run_forked([candidate["seed"]], 1, timeout, case=lambda seed: case(seed, candidate))[0]
    return res if res["status"] in FAILURES else None
  if (failing := fails(spec)) is None: raise SystemExit("the model does not fail")
  print(f"fails: {failing['status']}: {failing.get('detail', '')}", flush=True)
  while (step := next(((c, res) for c in smaller(spec) if works(c) and (res := fails(c))), None)) is not None:
    spec, failing = step
    print(f"still fails ({failing['status']}): {describe(spec)}", flush=True)
  print(f"smallest: {failing['status']}: {failing.get('detail', '')}\n  python harness/random_models.py --model '{describe(spec)}'")
  return spec

def works(spec: dict) -> bool:
  try: shapes(spec)
  except ValueError: return False
  return True

# *** report

def summary(results: list[dict], seconds: float) -> str:
  count = collections.Counter(r["status"] for r in results)
  by_python = [r for r in results if r.get("reference") == "PYTHON"]
  lines = [f"tried {len(results)} models in {seconds:.0f} s: agree {count['agrees']} ({len(by_python)} of them with PYTHON where "
           f"CPU differs), wrong {count['wrong']}, unexpected errors {count['unexpected error']}, crashes {count['crash']}, "
           f"hangs {count['hang']}, reference errors {count['reference error']}, generator errors {count['generator error']}"]
  configs_seen = collections.Counter(r["on"] for r in results if "on" in r)
  if configs_seen: lines.append("configurations: " + ", ".join(f"{k} {v}" for k, v in sorted(configs_seen.items())))
  for r in results:
    if r["status"] in FAILURES:
      lines.append(f"{r['status']:16} seed {r['seed']:<6} {r.get('detail', '')[:200]}\n    model {r.get('model', '?')}\n"
                   f"    python harness/random_models.py --shrink {r['seed']}")
  for r in by_python: lines.append(f"CPU differs, PYTHON agrees: seed {r['seed']}: {r['cpu_differs'][:150]}")
  return "\n".join(lines)

def show(spec: dict):
  print(describe(spec))
  os.environ["TINYTPU_CONFIG"], os.environ["TINYTPU_ASYNC"] = spec["config"], str(spec["async"])
  res = check(spec)
  print(res["status"], res.get("reference", ""), res.get("detail", res.get("cpu_differs", "")),
        f"(CPU {res.get('cpu_s', 0):.1f} s, TINYTPU {res.get('tinytpu_s', 0):.1f} s)")

def warm_up():
  """tinygrad's passes imported and run once in the parent on NULL, so each forked case starts warm (no thread may
  run at the fork: CPU's workers start in the child)."""
  import tinygrad.runtime.ops_cpu, tinygrad.runtime.ops_python  # noqa: F401
  import threading
  spec = model(0)
  try: run({**spec, "shards": 0}, "NULL")
  except RuntimeError: pass  # NULL has no copyout: the kernels ran
  assert threading.active_count() == 1, f"threads started before forking: {threading.enumerate()}"

def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--count", type=int, default=100, help="models to try (default 100)")
  p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
  p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
  p.add_argument("--timeout", type=float, default=300, help="seconds before a case counts as a hang (default 300)")
  p.add_argument("--case", type=int, help="run one case in the foreground and print its verdict")
  p.add_argument("--model", help="run a model given as a failure printed it (JSON) in the foreground")
  p.add_argument("--shrink", type=int, help="reduce a failing case to the smallest model that still fails")
  p.add_argument("--json", help="also write every case's result to this file")
  p.add_argument("--progress", action="store_true", help="print a line per finished case")
  args = p.parse_args()
  if args.case is not None: return show(model(args.case))
  if args.model is not None: return show(json.loads(args.model))
  if args.shrink is not None: return shrink(model(args.shrink), args.timeout)
  if args.count < 1 or args.jobs < 1 or args.timeout <= 0: p.error("--count, --jobs and --timeout must be positive")
  warm_up()
  start = time.monotonic()
  def progress(res, n): print(f"{n}/{args.count} seed {res['seed']}: {res['status']} {res['wall_s']:.1f} s {res.get('detail', '')[:150]}", flush=True)
  results = run_forked(range(args.seed, args.seed + args.count), args.jobs, args.timeout, progress if args.progress else None, case=run_case)
  results.sort(key=lambda r: r["seed"])
  print(summary(results, time.monotonic() - start))
  if args.json:
    with open(args.json, "w") as f: json.dump(results, f, indent=1)
  sys.exit(1 if any(r["status"] in FAILURES for r in results) else 0)

if __name__ == "__main__":
  main()
