"""Language models on TINYTPU (`python -m tinytpu llm`): a GPT-2-shaped model of our own, written with tinygrad's nn
(pre-norm blocks, GELU MLP, tied embeddings: the public GPT-2 architecture), its weights from a seed or a safetensors
file, prefilled with P tokens and decoding D more greedily with a KV cache (TinyJit, a symbolic position), on named
configurations, each row checked against tinygrad's CPU device running the same model and weights."""
from __future__ import annotations
import contextlib, dataclasses, time, types
import numpy as np
from tinygrad import Device, Tensor, TinyJit, Variable, dtypes, nn
from tinygrad.nn.state import get_state_dict, safe_load
from tinytpu import configs, device, energy, quant

@dataclasses.dataclass(frozen=True)
class Shape:
  layers: int
  dim: int
  heads: int
  vocab: int
  context: int

MODELS = {
  "gpt2-small": Shape(layers=12, dim=768, heads=12, vocab=50257, context=1024),  # GPT-2 small (124 M parameters)
  "gpt2-mini": Shape(layers=4, dim=256, heads=4, vocab=50257, context=1024),
  "gpt2-tiny": Shape(layers=2, dim=64, heads=4, vocab=512, context=64),  # tests
}
# Last logits on TINYTPU within this of CPU's, relative to the largest: both are IEEE float32, but CPU contracts
# multiply-adds and both reassociate reductions (docs/accuracy.md), so the sums differ in their last bits.
LOGITS_RTOL = 1e-4
# An int8 model's: its int8 products are exact integers on both devices, but the float32 between them (LayerNorm,
# attention, GELU, the residual) differs from CPU's in the last bits as above, and where such a difference crosses an
# int8 rounding boundary an activation differs by one step, which the layers after carry on. Measured: 2.9e-2 on
# gpt2-small (12 layers), 1.3e-2 on 3 layers of 768, 0 on gpt2-mini (docs/llm.md).
INT8_LOGITS_RTOL = 5e-2

def placed(t: Tensor, device: str | tuple[str, ...], axis: int | None = None) -> Tensor:
  """`t` on a device, or on a chip's cores: split along `axis` (shard), or whole on each (axis None)."""
  return t.shard(device, axis=axis) if isinstance(device, tuple) else t.to(device)

class Block:
  def __init__(self, s: Shape):
    self.ln_1, self.ln_2 = nn.LayerNorm(s.dim), nn.LayerNorm(s.dim)
    # queries, keys and values by their own layers (GPT-2's c_attn split in three), so that tensor parallelism
    # splits each by heads (shard)
    self.q, self.k, self.v, self.attn_proj = (nn.Linear(s.dim, s.dim) for _ in range(4))
    self.c_fc, self.mlp_proj = nn.Linear(s.dim, 4 * s.dim), nn.Linear(4 * s.dim, s.dim)
    self.heads, self.context, self.cache = s.heads, s.context, None

  def attention(self, x: Tensor, start) -> Tensor:
    b, t, d = x.shape
    q, k, v = (f(x).reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for f in (self.q, self.k, self.v))
    if self.cache is None:  # keys and values of every position so far, made on the first call (split by heads)
      cache = Tensor.zeros(2, b, self.heads, self.context, d // self.heads)
      self.cache = placed(cache, x.device, axis=2).contiguous().realize()
    self.cache[:, :, :, start:start + t].assign(Tensor.stack(k, v)).realize()
    keys, values = self.cache[0, :, :, :start + t], self.cache[1, :, :, :start + t]
    # a prefill (from position 0) masks later positions; a decoded token sees every earlier one
    mask = placed(Tensor.full((t, t), float("-inf")).triu(1), x.device) if t > 1 else None
    out = q.scaled_dot_product_attention(keys, values, attn_mask=mask)
    return self.attn_proj(out.transpose(1, 2).reshape(b, t, d))

  def __call__(self, x: Tensor, start) -> Tensor:
    x = x + self.attention(self.ln_1(x), start)
    return x + self.mlp_proj(self.c_fc(self.ln_2(x)).gelu())

LINEARS = ("q", "k", "v", "attn_proj", "c_fc", "mlp_proj")  # a block's

class QuantLinear(quant.QuantLinear):
  """tinytpu.quant's int8 layer with its output made a buffer of its own: left to itself, tinygrad fuses an int8
  product into the kernel of the layer after it, recomputing it for each of that layer's outputs, and layer after
  layer every earlier block's too (kernels that grow with depth, each compiled anew)."""
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x).contiguous()

def quantise(model: GPT2, prompt: list[int]) -> None:
  """The model's linear layers and head made int8 in place (tinytpu.quant: int8 weights per output channel, int8
  inputs per tensor, int32 sums on the MXU, dequantised to float32 after), each input's scale calibrated on the
  float model's prefill of `prompt`: its absolute maximum (later inputs beyond it saturate). The model is on CPU."""
  model.head = lambda x: x @ model.wte.weight.T  # float32, tied to the token embedding, to calibrate
  holders = [(b, n) for b in model.h for n in LINEARS] + [(model, "head")]
  seen: dict[int, np.ndarray] = {}
  def recording(i: int, layer):
    def call(x: Tensor) -> Tensor:
      seen[i] = x.numpy()
      return layer(x)
    return call
  layers = [getattr(h, n) for h, n in holders]
  for i, ((h, n), layer) in enumerate(zip(holders, layers)): setattr(h, n, recording(i, layer))
  try: model(Tensor([prompt], dtype=dtypes.int32, device="CPU"), 0)[0].realize()
  finally:
    for (h, n), layer in zip(holders, layers): setattr(h, n, layer)
  for b in model.h: b.cache = None  # the calibration's, on CPU
  layers[-1] = types.SimpleNamespace(weight=model.wte.weight, bias=None)  # the head's weight, as a layer's
  for i, ((h, n), layer) in enumerate(zip(holders, layers)):
    setattr(h, n, QuantLinear(layer, float(quant.scale_of(seen[i])), None))

class GPT2:
  def __init__(self, s: Shape, cores: int = 1):
    # Split over `cores`, the token embedding (and so the head tied to it) is split by vocabulary rows, which need a
    # multiple of the cores: zero rows pad it, and their logits are masked to -inf.
    self.padded = -(-s.vocab // cores) * cores
    self.shape, self.wte, self.wpe = s, nn.Embedding(self.padded, s.dim), nn.Embedding(s.context, s.dim)
    self.h, self.ln_f = [Block(s) for _ in range(s.layers)], nn.LayerNorm(s.dim)
    self.head = None  # tied to the token embedding; an int8 model's is its own (quantise)

  def __call__(self, tokens: Tensor, start) -> Tensor:
    """The next token after `tokens` (1, T) at positions start.. (greedy), as a (1, 1) int32 tensor, and the last
    position's logits (1, vocab, and the padding's -inf)."""
    t = tokens.shape[1]
    x = self.wte(tokens) + self.wpe.weight.shrink(((start, start + t), None))
    for block in self.h: x = block(x, start)
    x = self.ln_f(x[:, -1:, :])
    logits = (x @ self.wte.weight.T if self.head is None else self.head(x))[:, 0]
    if self.padded != self.shape.vocab:
      pad = np.where(np.arange(self.padded) < self.shape.vocab, 0, -np.inf).astype(np.float32)[None]
      logits = logits + placed(Tensor(pad), x.device, axis=1)
    return logits.argmax(-1, keepdim=True).cast(dtypes.int32), logits

def weights(s: Shape, seed: int) -> dict[str, np.ndarray]:
  """Seeded weights in GPT-2's initialisation: N(0, 0.02) matrices and embeddings, zero biases, unit LayerNorms."""
  rng, out = np.random.default_rng(seed), {}
  for name, t in sorted(get_state_dict(GPT2(s)).items()):
    if name.startswith("ln") or ".ln_" in name: out[name] = np.full(t.shape, name.endswith("weight"), np.float32)
    elif name.endswith("bias"): out[name] = np.zeros(t.shape, np.float32)
    else: out[name] = (rng.standard_normal(t.shape, dtype=np.float32) * 0.02).astype(np.float32)
  return out

def load(path: str, s: Shape) -> dict[str, np.ndarray]:
  """A safetensors file's weights under this model's names (`safe_load`), each of the model's shape."""
  want = {k: v.shape for k, v in get_state_dict(GPT2(s)).items()}
  got = {k: v.float().numpy() for k, v in safe_load(path).items()}
  if missing := sorted(set(want) - set(got)): raise ValueError(f"{path}: no weights for {', '.join(missing[:5])}")
  if wrong := [k for k in want if got[k].shape != want[k]]:
    raise ValueError(f"{path}: {wrong[0]} is {got[wrong[0]].shape}, the model's is {want[wrong[0]]}")
  return {k: got[k] for k in want}

@dataclasses.dataclass
class Phase:
  tokens: list[int]
  counters: dict
  host_s: float
  step_host_s: list[float]  # each decode step's (empty for a prefill)
  logits: np.ndarray

def realized(outputs: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
  """The token and the logits realized in one schedule: the head runs once, the argmax reads its logits."""
  Tensor.realize(*outputs)
  return outputs

def split_axis(name: str) -> int | None:
  """The axis tensor parallelism splits a weight along: the heads of queries, keys and values and the MLP's hidden
  units (their rows), and the same inputs of the projections after them (their columns), whose partial sums tinygrad
  then adds up across the cores (an all-reduce); the token embedding by vocabulary rows (the head's logits split so,
  the embedding's lookup summed across the cores); None: the weight whole on every core."""
  layer = name.split(".")[-2] if name.startswith("h.") else name.split(".")[0]
  if layer in ("q", "k", "v", "c_fc", "wte", "head"): return 0  # (an int8 layer's scales and biases too)
  return 1 if layer in ("attn_proj", "mlp_proj") and name.split(".")[-1] in ("weight", "wq") else None

def generate(s: Shape, w: dict[str, np.ndarray], dev: str | tuple[str, ...], prompt: list[int], decode: int,
             progress=None, int8: bool = False) -> list[Phase]:
  """The prefill of `prompt` in one call, then `decode` tokens a call (TinyJit, the position a Variable), on a device or
  tensor-parallel on a chip's cores (a tuple of them), in float32 or int8 (quantise): each phase's tokens, counters
  (TINYTPU's, a chip's cores' summed and its elapsed `chip_cycles`), host seconds and last logits."""
  cores = tuple(Device.canonicalize(d) for d in (dev if isinstance(dev, tuple) else (dev,)))  # TINYTPU:0 is TINYTPU
  if s.heads % len(cores): raise ValueError(f"{len(cores)} cores do not divide the model's {s.heads} attention heads")
  model = GPT2(s, len(cores))  # made on CPU (quantised there), then placed
  for name, t in get_state_dict(model).items():
    v = np.pad(w[name], ((0, t.shape[0] - w[name].shape[0]), (0, 0))) if name == "wte.weight" else w[name]
    t.replace(Tensor(v, device="CPU"))
  if int8: quantise(model, prompt)
  for name, t in get_state_dict(model).items(): t.replace(placed(t, dev, split_axis(name)).realize())
  tinytpu = cores[0].split(":")[0] == "TINYTPU"
  def counters() -> dict:
    if not tinytpu: return {}
    each = [device.counters(d) for d in cores]
    return {**{k: sum(c[k] for c in each) for k in device.COUNTERS}, "chip_cycles": each[0]["chip_cycles"],
            "noc_bytes": each[0]["noc_bytes"]}
  @TinyJit
  def step(token: Tensor, start: Variable) -> tuple[Tensor, Tensor]: return realized(model(token, start))
  # TinyJit runs a function once plainly (to let it make its state), captures it on the second call and replays it
  # from the third. The prefill made this one's state (the KV cache), so the first decode step captures: every later
  # step replays, and none schedules the model again.
  step.cnt = 1
  if tinytpu:
    for d in cores: device.reset_counters(d)
  t0 = time.perf_counter()
  token, logits = realized(model(placed(Tensor([prompt], dtype=dtypes.int32), dev), 0))
  out = [Phase(token.tolist()[0], counters(), time.perf_counter() - t0, [], logits.numpy()[0, :s.vocab])]
  if progress: progress(1)
  tokens, steps = [], []
  if tinytpu:
    for d in cores: device.reset_counters(d)
  t0 = time.perf_counter()
  for i in range(decode):
    t1 = time.perf_counter()
    pos = Variable("start", 1, s.context - 1).bind(len(prompt) + i)
    last = tokens[-1] if tokens else out[0].tokens[0]
    token, logits = step(placed(Tensor([[last]], dtype=dtypes.int32), dev).realize(), pos)
    tokens.append(token.tolist()[0][0])
    steps.append(time.perf_counter() - t1)
    if progress: progress(1)
  out.append(Phase(tokens, counters(), time.perf_counter() - t0, steps, logits.numpy()[0, :s.vocab] if decode else out[0].logits))
  return out

_devices: dict[str, str] = {}  # configuration -> its device, from TINYTPU:200 on

@contextlib.contextmanager
def _devices_for(config: str, use: int | None = None):
  """A device of its own per configuration, kept for later runs (a device's tile geometry is fixed once it has made
  kernels); for a configuration of several cores, the chip's cores TINYTPU:0 to TINYTPU:cores-1 (the first `use` of
  them), given back their configurations afterwards (TINYTPU:0 is tinygrad's default TINYTPU device)."""
  chip = configs.from_spec(config)
  if chip.cores > 1:
    if use is not None and not 1 <= use <= chip.cores: raise ValueError(f"--cores {use}: {config} has {chip.cores} cores")
    cores = tuple(f"TINYTPU:{i}" for i in range(use or chip.cores))
    before = [Device[d].config for d in cores]
    try:
      for d in cores: Device[d].config = chip
      yield cores
    finally:
      for d, c in zip(cores, before): Device[d].config = c
    return
  if config not in _devices:
    dev = f"TINYTPU:{200 + len(_devices)}"
    Device[dev].config = chip
    _devices[config] = dev
  yield _devices[config]

@contextlib.contextmanager
def _products_on_mxu(dev: str | tuple[str, ...], int8: bool):
  """An int8 model's products on the MXU (a device's `dots`): int32 sums from int8 WeightSRAM tiles, so its weights
  move from HBM as int8, even where the estimate finds the VPU's one-row products a little faster (docs/llm.md)."""
  devs = [Device[d] for d in (dev if isinstance(dev, tuple) else (dev,))] if int8 else []
  before = [d.dots for d in devs]
  try:
    for d in devs: d.dots = "mxu"
    yield
  finally:
    for d, b in zip(devs, before): d.dots = b

def run(model: str, config_names: list[str], prefill: int, decode: int, seed: int = 0, weights_path: str | None = None,
        progress=None, cores: int | None = None, dtype: str = "float32") -> list[dict]:
  """A row per configuration and phase (prefill, decode), checked against CPU running the same model (int8: the same
  quantised one), with its tokens' agreement with float32's: see docs/llm.md."""
  if model not in MODELS: raise ValueError(f"--model: no model {model!r} (models: {', '.join(MODELS)})")
  if dtype not in ("float32", "int8"): raise ValueError(f"--dtype {dtype}: float32 or int8")
  s = MODELS[model]
  if not 1 <= prefill or prefill + decode > s.context:
    raise ValueError(f"--prefill {prefill} --decode {decode}: at least 1 prompt token, and at most {s.context} in all")
  chosen = {name: configs.from_spec(name) for name in config_names}  # refused before any run
  w = load(weights_path, s) if weights_path else weights(s, seed)
  prompt = [int(x) for x in np.random.default_rng(seed).integers(0, s.vocab, prefill)]
  int8 = dtype == "int8"
  float32 = generate(s, w, "CPU", prompt, decode)
  cpu = generate(s, w, "CPU", prompt, decode, int8=True) if int8 else float32
  rows = []
  for name, config in chosen.items():
    with _devices_for(name, cores) as dev, _products_on_mxu(dev, int8): phases = generate(s, w, dev, prompt, decode, progress, int8)
    used = len(dev) if isinstance(dev, tuple) else 1
    for phase, got, want, f32 in zip(("prefill", "decode"), phases, cpu, float32):
      c, n = got.counters, max(len(got.tokens) if phase == "decode" else prefill, 1)
      seconds = energy.time_s(c, config)
      err = float(np.abs(got.logits - want.logits).max() / max(float(np.abs(want.logits).max()), 1e-30))
      joules = energy.energy_j(c, config)
      agree = np.mean([a == b for a, b in zip(got.tokens, f32.tokens)]) if got.tokens else 1.0
      rows.append({"config": name, "cores": used, "dtype": dtype, "agreement": float(agree), "phase": phase, "tokens": n,
                   "cycles": c["chip_cycles"], "time_s": seconds,
                   "tokens_per_s": n / seconds if seconds else None, "energy_j": joules,
                   "j_per_token": joules / n, "hbm_bytes_per_token": c["hbm_bytes"] / n,
                   "mxu_busy": c["mxu_busy"] / c["cycles"] if c["cycles"] else 0.0,
                   "vpu_busy": c["vpu_busy"] / c["cycles"] if c["cycles"] else 0.0, "noc_bytes": c.get("noc_bytes", 0),
                   "host_s": got.host_s, "host_s_per_step": got.step_host_s,
                   "checked": got.tokens == want.tokens and err <= (INT8_LOGITS_RTOL if int8 else LOGITS_RTOL),
                   "logits_max_err": err})
  return rows

def table(rows: list[dict]) -> str:
  lines = [f"{'config':20s} {'phase':8s} {'tokens':>6s} {'cycles':>14s} {'tokens/s':>10s} {'J/token':>10s} "
           f"{'HBM B/token':>12s} {'MXU busy':>8s} {'host s':>8s} checked"]
  for r in rows:
    lines.append(f"{r['config']:20s} {r['phase']:8s} {r['tokens']:>6d} {r['cycles']:>14,d} {r['tokens_per_s'] or 0:>10.1f} "
                 f"{r['j_per_token']:>10.3g} {r['hbm_bytes_per_token']:>12,.0f} {r['mxu_busy']:>8.1%} {r['host_s']:>8.1f} "
                 f"{r['checked']}")
  return "\n".join(lines)
