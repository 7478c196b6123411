"""Symmetric integer quantisation for the MXU, in tinygrad's spirit: plain functions over arrays and Tensors.

A real value x is the integer q = round(x * (1 / scale)) saturated to [-qmax, qmax] (qmax = 127 for int8, 32767 for
int16: the range is symmetric, -128 is never produced), times `scale`. Rounding is to nearest, half to even
(numpy's and tinygrad's `round`). A scale is the range's absolute maximum over qmax: one for a whole tensor
(activations), or one per output channel (weights, `axis` the channel axis). A range of zeros gets scale 1, so that
its values quantise to 0 rather than dividing by 0.

Weights are quantised once, on the host (numpy); activations on the device, as x * (1 / scale): a float multiply,
IEEE on TINYTPU as on CPU, saturated and then rounded by one IEEE add, so both devices round the same products.

Between layers an int32 accumulator is requantised as the MXU's drain does it (hardware.md §2.3, Requant): times an
integer multiplier, plus half of 2^shift, shifted right arithmetically, saturated to [-128, 127] (so an activation
requantised this way may be -128). fixed_point picks the multiplier and shift so that int32 never wraps."""
from __future__ import annotations
import numpy as np
from tinygrad import Tensor, dtypes, nn

QMAX = {8: 127, 16: 32767}
INT = {8: np.int8, 16: np.int16}

def _qmax(bits: int) -> int:
  if bits not in QMAX: raise ValueError(f"bits={bits}: symmetric quantisation is to int8 or int16 (bits 8 or 16)")
  return QMAX[bits]

def scale_of(x: np.ndarray, bits: int = 8, axis: int | None = None, percentile: float | None = None) -> np.ndarray:
  """The scale that maps the range of `x` onto [-qmax, qmax]: of the whole array (axis None: a 0-d array), or one
  per index of `axis` (the others reduced). The range is the absolute maximum, or with `percentile` (0-100] that
  percentile of the absolute values (calibration that lets rare outliers saturate). float32."""
  qmax, a = _qmax(bits), np.abs(np.asarray(x, dtype=np.float32))
  if percentile is not None and not 0 < percentile <= 100: raise ValueError(f"percentile={percentile}: must be in (0, 100]")
  if axis is not None:
    if not -a.ndim <= axis < a.ndim: raise ValueError(f"axis={axis}: the array has {a.ndim} axes")
    a = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
  reduce = (lambda v: np.percentile(v, percentile, axis=-1)) if percentile is not None else (lambda v: v.max(axis=-1))
  top = reduce(a) if axis is not None else reduce(a.reshape(-1))
  top = np.asarray(top, dtype=np.float32)
  return np.where(top > 0, top / np.float32(qmax), np.float32(1)).astype(np.float32)

def _inverse(scale) -> np.ndarray: return (np.float32(1) / np.asarray(scale, dtype=np.float32)).astype(np.float32)

def quantize(x: np.ndarray, scale: np.ndarray, bits: int = 8, axis: int | None = None) -> np.ndarray:
  """round(x * (1 / scale)), saturated, as int8 or int16: the products quantize_tensor rounds. A per-channel `scale`
  applies along `axis`."""
  qmax, x, inv = _qmax(bits), np.asarray(x, dtype=np.float32), _inverse(scale)
  if axis is not None: inv = np.expand_dims(inv, [d for d in range(x.ndim) if d != axis % x.ndim])
  return np.clip(np.round(x * inv), -qmax, qmax).astype(INT[bits])

def dequantize(q: np.ndarray, scale: np.ndarray, axis: int | None = None) -> np.ndarray:
  """q * scale, float32."""
  q, s = np.asarray(q), np.asarray(scale, dtype=np.float32)
  if axis is not None: s = np.expand_dims(s, [d for d in range(q.ndim) if d != axis % q.ndim])
  return (q.astype(np.float32) * s).astype(np.float32)

def quantize_tensor(x: Tensor, scale: float, bits: int = 8) -> Tensor:
  """An activation quantised on its device with a per-tensor scale: round(x * (1 / scale)), saturated, as int8 or
  int16, stored (the matmul or convolution after it then loads int8 operands, which the compiler puts on the MXU).
  The reciprocal is taken once in float32 on the host, so the device does one IEEE multiply."""
  qmax, inv = _qmax(bits), float(_inverse(scale))
  return _round_saturated(x.float() * inv, qmax).cast(dtypes.int8 if bits == 8 else dtypes.int16).contiguous()

_ROUNDER = 1.5 * 2**23  # a float32 whose spacing is 1: adding it to |y| <= 2^22 rounds y to an integer, half to even
_ROUNDER_BITS = 0x4B400000  # its bit pattern: the sum's bits less these are that integer

def _round_saturated(y: Tensor, qmax: int) -> Tensor:
  """round(y) (half to even) saturated to [-qmax, qmax], as int32: saturate, add _ROUNDER (one IEEE add, which
  rounds), take the sum's bits less _ROUNDER's. Four VPU operations, where Tensor.round is a select of a ceiling and
  a floor; and the saturation's selects stand between the multiply that made `y` and the add, so no device fuses
  the two into one FMA (tinygrad's CPU device would). NaN gives 0."""
  return (y.clip(-qmax, qmax) + _ROUNDER).bitcast(dtypes.int32) - _ROUNDER_BITS

_OFFSET_BITS = 30  # requantize_tensor lifts values by 2^30 so that they shift as unsigned (one VPU op)

def fixed_point(multiplier: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
  """Integers M (int32, one per multiplier) and a shift S in 1..30 with M / 2^S the nearest to `multiplier` (> 0)
  for the largest S at which bound * max(M) + 2^(S-1) < 2^30: requantising an accumulator of magnitude up to
  `bound` then never wraps in int32, even lifted by 2^30 (requantize_tensor), so it is the MXU's requantisation
  (64-bit there) exactly."""
  m = np.asarray(multiplier, dtype=np.float64)
  for shift in range(_OFFSET_BITS, 0, -1):
    mul = np.round(m * 2.0**shift)
    if bound * mul.max() + 2**(shift - 1) < 2**_OFFSET_BITS: return mul.astype(np.int32), shift
  raise ValueError(f"multipliers up to {m.max()} with accumulators up to {bound}: no int32 fixed point fits")

def requantize(acc: np.ndarray, mul: np.ndarray, shift: int) -> np.ndarray:
  """The MXU's requantisation (hardware.md, the drain of DISPATCH_MXU_REQUANT): (acc * mul + 2^(shift-1)) >> shift
  in 64 bits, arithmetic shift, saturated to [-128, 127], int8. The numpy reference of what layers do on a device."""
  wide = np.asarray(acc, dtype=np.int64) * np.asarray(mul, dtype=np.int64) + (1 << (shift - 1))
  return np.clip(wide >> shift, -128, 127).astype(np.int8)

def requantize_tensor(acc: Tensor, mul: Tensor | int, shift: int) -> Tensor:
  """`requantize` on a device, in int32: exact when `mul` and `shift` come from fixed_point for `acc`'s bound. The
  product is lifted by 2^30 (a multiple of 2^shift) to be non-negative, shifted as unsigned, and lowered again:
  the VPU's shift is logical, and an arithmetic one would take five operations."""
  lifted = (acc * mul + ((1 << (shift - 1)) + (1 << _OFFSET_BITS))).cast(dtypes.uint32) >> shift
  return (lifted.cast(dtypes.int32) - (1 << (_OFFSET_BITS - shift))).clip(-128, 127).cast(dtypes.int8)

# Post-training quantisation of a model's nn.Linear and nn.Conv2d layers: int8 weights with a scale per output channel,
# int8 inputs with one scale per layer calibrated on sample data, int8 x int8 products accumulated in int32 (on TINYTPU
# the MXU: the operands fit int8 when each launch runs) with the bias quantised to int32 at the product's scale, then
# requantised to the next layer's input scale in integers (the MXU's requantisation: a fixed-point multiplier per
# output channel, a rounding shift, saturation to int8) or, after the last layer, dequantised to float (one float
# multiply). All of it after the products is elementwise, so tinygrad fuses it into the matmul's or convolution's
# kernel; a layer's int8 input is stored (contiguous) by the kernel that makes it, after whatever the model does
# between layers (ReLU, pooling, reshapes keep a scale). Every step is exact integer arithmetic or one IEEE
# operation, so TINYTPU gives tinygrad's CPU outputs bit for bit.

class _Quantised:
  """A layer's int8 weights and scales: `in_scale` its input's, `out_scale` the next layer's input's (None: the
  last layer, whose output is dequantised to float)."""
  def __init__(self, layer, in_scale: float, out_scale: float | None):
    w, dev = layer.weight.numpy(), layer.weight.device
    self.w_scale, self.in_scale = scale_of(w, axis=0), np.float32(in_scale)
    self.wq = Tensor(quantize(w, self.w_scale, axis=0), device=dev)
    product = (self.w_scale * self.in_scale).astype(np.float32)  # an accumulator unit's value, per output channel
    bias = None if layer.bias is None else np.round(layer.bias.numpy() / product).astype(np.int32)
    self.bias, self.last = None if bias is None else Tensor(bias, device=dev), out_scale is None
    if self.last: self.factor = Tensor(product, device=dev)
    else:
      # |accumulator| <= terms * 128 * 127 (int8 inputs, weights within +-127) plus the bias
      bound = (w.size // w.shape[0]) * 128 * 127 + (0 if bias is None else int(np.abs(bias.astype(np.int64)).max()))
      mul, self.shift = fixed_point(product.astype(np.float64) / np.float64(np.float32(out_scale)), bound)
      self.mul = Tensor(mul, device=dev)
  def epilogue(self, acc: Tensor, channel_shape: tuple[int, ...]) -> Tensor:
    if self.bias is not None: acc = acc + self.bias.reshape(channel_shape)
    if self.last: return acc.cast(dtypes.float32) * self.factor.reshape(channel_shape)
    return requantize_tensor(acc, self.mul.reshape(channel_shape), self.shift)
  def input(self, x: Tensor) -> Tensor:  # the first layer's float input is quantised here; later ones come int8
    return (x.contiguous() if dtypes.is_int(x.dtype) else quantize_tensor(x, self.in_scale)).cast(dtypes.int32)

class QuantLinear(_Quantised):
  def __call__(self, x: Tensor) -> Tensor: return self.epilogue(self.input(x) @ self.wq.cast(dtypes.int32).T, (-1,))

class QuantConv2d(_Quantised):
  def __init__(self, layer, in_scale: float, out_scale: float | None):
    super().__init__(layer, in_scale, out_scale)
    self.args = dict(groups=layer.groups, stride=layer.stride, dilation=layer.dilation, padding=layer.padding)
  def __call__(self, x: Tensor) -> Tensor:
    return self.epilogue(self.input(x).conv2d(self.wq.cast(dtypes.int32), **self.args), (-1, 1, 1))

def _layers(model) -> list[tuple[object, str | int, object]]:
  """(holder, key, layer) of each nn.Linear and nn.Conv2d a model holds as an attribute or in a list of them."""
  found = []
  for key, value in vars(model).items():
    for holder, k, v in ([(model, key, value)] if not isinstance(value, list) else [(value, i, x) for i, x in enumerate(value)]):
      if isinstance(v, (nn.Linear, nn.Conv2d)): found.append((holder, k, v))
  return found

def _put(holder, key, value):
  if isinstance(holder, list): holder[key] = value
  else: setattr(holder, key, value)

def quantize_model(model, sample: Tensor, percentile: float | None = None):
  """The model with its nn.Linear and nn.Conv2d layers (attributes, or in lists) replaced by int8 ones, in place. The
  float model runs once on `sample` to calibrate each layer's input scale (its inputs' absolute maximum, or that
  percentile of their absolute values) and the order the layers run in: each layer requantises its output to the
  next one's input scale, and the last one's output is float. Returns the model."""
  layers, seen, order = _layers(model), {}, []
  if not layers: raise ValueError(f"{type(model).__name__} holds no nn.Linear or nn.Conv2d layer to quantise")
  def recording(layer):
    def call(x: Tensor) -> Tensor:
      if id(layer) not in seen: order.append(id(layer))
      seen.setdefault(id(layer), []).append(x.numpy())
      return layer(x)
    return call
  for holder, key, layer in layers: _put(holder, key, recording(layer))
  try: model(sample).realize()
  finally:
    for holder, key, layer in layers: _put(holder, key, layer)
  if len(order) != len(layers) or any(len(seen[i]) != 1 for i in order):
    raise ValueError(f"{type(model).__name__}: each nn.Linear and nn.Conv2d must run once, in a chain, to be quantised")
  scales = {i: float(scale_of(np.concatenate([a.reshape(-1) for a in seen[i]]), percentile=percentile)) for i in order}
  for holder, key, layer in layers:
    k = order.index(id(layer))
    out = scales[order[k + 1]] if k + 1 < len(order) else None
    _put(holder, key, (QuantLinear if isinstance(layer, nn.Linear) else QuantConv2d)(layer, scales[id(layer)], out))
  return model
