"""`python -m tinytpu compare`: float32 against int8 on real data. Each model is trained in float32 on tinygrad's CPU
device on scikit-learn's bundled handwritten digits (1,797 8x8 images), quantised (tinytpu.quant), and run on TINYTPU
in float32 and in int8 over the held-out digits: accuracy, agreement with float32 (top-1), logit error, cycles and
MXU busy for each, and for int8 whether TINYTPU's outputs are CPU's bit for bit."""
from __future__ import annotations
import os
import numpy as np
from tinygrad import Tensor, TinyJit, nn
from tinygrad.helpers import Context

class MLP:
  def __init__(self, features: int = 64, classes: int = 10):
    self.layers = [nn.Linear(features, 64), nn.Linear(64, classes)]
  def __call__(self, x: Tensor) -> Tensor: return self.layers[1](self.layers[0](x).relu())

class CNN:
  """Square single-channel images, `features` = side * side pixels (an even side)."""
  def __init__(self, features: int = 64, classes: int = 10):
    self.side = int(round(features ** 0.5))
    if self.side * self.side != features or self.side % 2:
      raise ValueError(f"cnn: {features} features are not a square image of an even side")
    self.conv, self.head = nn.Conv2d(1, 8, 3, padding=1), nn.Linear(8 * (self.side // 2) ** 2, classes)
  def __call__(self, x: Tensor) -> Tensor:
    return self.head(self.conv(x.reshape(-1, 1, self.side, self.side)).relu().max_pool2d(2).flatten(1))

MODELS = {"mlp": MLP, "cnn": CNN}

def digits(test: int = 397) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """(train x, train y, test x, test y): the digits shuffled with a fixed seed, the last `test` held out."""
  from sklearn.datasets import load_digits
  d = load_digits()
  return split(d.data / 16, d.target, test)

MAX_DATA_BYTES = 1 << 30  # a --data file's arrays, unpacked: the models are small, and trained on CPU
MAX_CLASSES = 1024

def load_data(path: str) -> tuple[np.ndarray, np.ndarray]:
  """A user's samples from an .npz (numpy's savez) of arrays x and y, checked (check_data). ValueError naming the file,
  what is wrong with it and what is expected."""
  import zipfile
  if not os.path.isfile(path): raise ValueError(f"--data {path}: no such file")
  if not zipfile.is_zipfile(path):
    raise ValueError(f"--data {path}: not an .npz file (numpy.savez(FILE, x=..., y=...) writes one)")
  try:
    with np.load(path, allow_pickle=False) as f:
      if "x" not in f.files or "y" not in f.files:
        raise ValueError(f"--data {path}: an .npz of arrays x and y (it has {', '.join(f.files) or 'none'})")
      with zipfile.ZipFile(path) as z:  # the arrays' unpacked sizes, from the archive, before reading them
        size = sum(i.file_size for i in z.infolist() if i.filename in ("x.npy", "y.npy"))
      if size > MAX_DATA_BYTES:
        raise ValueError(f"--data {path}: x and y take {size:,} bytes, more than the {MAX_DATA_BYTES:,} compare reads")
      x, y = f["x"], f["y"]
  except (OSError, EOFError, zipfile.BadZipFile) as e:
    raise ValueError(f"--data {path}: not a readable .npz ({e})") from None
  except ValueError as e:
    if str(e).startswith("--data"): raise
    raise ValueError(f"--data {path}: x and y must be arrays of numbers ({e})") from None
  return check_data(x, y, f"--data {path}")

def check_data(x: np.ndarray, y: np.ndarray, where: str = "data") -> tuple[np.ndarray, np.ndarray]:
  """x as float32 (samples, features) and y as int32 class numbers, or ValueError saying what is wrong: x must be
  numbers, finite, of at least one feature, one row (or image) per sample; y whole numbers from 0 (fewer than
  MAX_CLASSES), one per sample."""
  x, y = np.asarray(x), np.asarray(y)
  if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
    raise ValueError(f"{where}: x is {x.dtype}: features must be numbers")
  if x.ndim < 2 or len(x) == 0 or x[0].size == 0:
    raise ValueError(f"{where}: x has shape {x.shape}: one row of features (or an image) per sample, and at least one "
                     "sample and one feature, expected")
  if y.shape != (len(x),):
    raise ValueError(f"{where}: y has shape {y.shape}: one label per sample of x, ({len(x)},), expected")
  if not np.issubdtype(y.dtype, np.integer):
    raise ValueError(f"{where}: y is {y.dtype}: labels must be an integer array of class numbers from 0")
  if (bad := np.flatnonzero((y < 0) | (y >= MAX_CLASSES))).size:
    raise ValueError(f"{where}: y[{bad[0]}] is {y[bad[0]]}: labels are class numbers from 0 to {MAX_CLASSES - 1}")
  with np.errstate(over="ignore"): x = x.astype(np.float32).reshape(len(x), -1)  # beyond float32: inf, refused next
  if (bad := np.flatnonzero(~np.isfinite(x).all(axis=1))).size:
    raise ValueError(f"{where}: {bad.size} of x's samples have NaN or infinite features (the first: sample {bad[0]}): "
                     "every feature must be a finite number (in float32)")
  return x, y.astype(np.int32)

def split(x: np.ndarray, y: np.ndarray, test: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """A user's samples (check_data) shuffled with a fixed seed, the last `test` held out."""
  x, y = check_data(x, y)
  if not 0 < test < len(y):
    raise ValueError(f"--test {test}: holds out {test} of the {len(y)} samples, and at least one must be left to "
                     f"train on (--test from 1 to {len(y) - 1})")
  order = np.random.default_rng(0).permutation(len(y))
  x, y = x[order], y[order].astype(np.int32)
  return x[:-test], y[:-test], x[-test:], y[-test:]

def train(name: str, x: np.ndarray, y: np.ndarray, steps: int = 300, batch: int = 64):
  """A model trained in float32 on CPU (Adam, a fixed seed), sized by the data."""
  with Context(DEV="CPU"):
    Tensor.manual_seed(0)
    model = MODELS[name](*_sizes(x, y))
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=3e-3)
    xs, ys = Tensor(x), Tensor(y)
    @TinyJit
    def step() -> Tensor:
      with Context(TRAINING=1):
        pick = Tensor.randint(batch, high=len(y))
        opt.zero_grad()
        loss = model(xs[pick]).sparse_categorical_crossentropy(ys[pick]).backward()
        opt.step()
        return loss
    for _ in range(steps): step()
  return model

def _sizes(x: np.ndarray, y: np.ndarray) -> tuple[int, int]: return x.shape[1], int(y.max()) + 1

def _copy(name: str, model, device: str, sizes: tuple[int, int]):
  """A copy of the model's float weights on `device`."""
  with Context(DEV=device): other = MODELS[name](*sizes)
  nn.state.load_state_dict(other, nn.state.get_state_dict(model), verbose=False)  # each to its tensor's device
  return other

def _run(model, x: np.ndarray, device: str) -> tuple[np.ndarray, dict]:
  from tinytpu.device import counters, reset_counters
  reset_counters()
  logits = model(Tensor(x, device=device)).numpy()
  return logits, counters()

def compare(names=("mlp", "cnn"), steps: int = 300, test: int = 397, percentile: float | None = None,
            config: str = "reference", data: tuple[np.ndarray, np.ndarray] | None = None) -> list[dict]:
  """A row per model and dtype (float32, int8) on TINYTPU's `config` (its device takes it: call before TINYTPU runs
  anything else in the process, or on one of the same tile geometry). `data`: a user's (x, y) instead of the
  digits, `test` of them held out."""
  from tinygrad import Device
  from tinytpu import configs, quant
  xtr, ytr, xte, yte = digits(test) if data is None else split(*data, test)
  sizes = _sizes(xtr, ytr)
  with Context(DEV="CPU"):
    for name in names: MODELS[name](*sizes)  # a model the data cannot feed fails before any training
  Device["TINYTPU"].config = configs.from_spec(config)
  rows = []
  for name in names:
    model = train(name, xtr, ytr, steps)
    float_logits, c = _run(_copy(name, model, "TINYTPU", sizes), xte, "TINYTPU")
    rows.append(_row(name, config, "float32", float_logits, float_logits, yte, c))
    q = quant.quantize_model(_copy(name, model, "CPU", sizes), Tensor(xtr[:512], device="CPU"), percentile=percentile)
    cpu_logits, _ = _run(q, xte, "CPU")
    for t in nn.state.get_state_dict(q).values(): t.replace(t.to("TINYTPU").realize())
    int8_logits, c = _run(q, xte, "TINYTPU")
    rows.append({**_row(name, config, "int8", int8_logits, float_logits, yte, c),
                 "bit_identical_to_cpu": bool(np.array_equal(int8_logits, cpu_logits))})
  return rows

def _row(name: str, config: str, dtype: str, logits: np.ndarray, float_logits: np.ndarray, y: np.ndarray, c: dict) -> dict:
  err = np.abs(logits - float_logits)
  return {"model": name, "config": config, "dtype": dtype, "accuracy": float((logits.argmax(1) == y).mean()),
          "agreement": float((logits.argmax(1) == float_logits.argmax(1)).mean()), "max_logit_error": float(err.max()),
          "mean_logit_error": float(err.mean()), "cycles": int(c["cycles"]), "mxu_busy": float(c["mxu_busy"] / max(c["cycles"], 1))}

def table(rows: list[dict]) -> str:
  lines = [f"{'model':6s} {'config':12s} {'dtype':8s} {'accuracy':>8s} {'agree':>6s} {'max err':>8s} {'cycles':>12s} "
           f"{'MXU busy':>8s}  bit-identical to CPU"]
  for r in rows:
    lines.append(f"{r['model']:6s} {r['config']:12s} {r['dtype']:8s} {r['accuracy']:8.3f} {r['agreement']:6.3f} "
                 f"{r['max_logit_error']:8.4f} {r['cycles']:12,d} {100 * r['mxu_busy']:7.1f}%  "
                 f"{r.get('bit_identical_to_cpu', '')}")
  return "\n".join(lines)
