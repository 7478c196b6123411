"""Symmetric integer quantisation for the MXU, in tinygrad's spirit: plain functions over arrays and Tensors.

A real value x is the integer q = round(x * (1 / scale)) saturated to [-qmax, qmax] (qmax = 127 for int8, 32767 for
int16: the range is symmetric, -128 is never produced), times `scale`. Rounding is to nearest, half to even
(numpy's and tinygrad's `round`). A scale is the range's absolute maximum over qmax: one for a whole tensor
(activations), or one per output channel (weights, `axis` the channel axis). A range of zeros gets scale 1, so that
its values quantise to 0 rather than dividing by 0.

Weights are quantised once, on the host (numpy); activations on the device, as x * (1 / scale): a float multiply,
IEEE on TINYTPU as on CPU, so both devices round the same products."""
from __future__ import annotations
import numpy as np
from tinygrad import Tensor, dtypes

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
  int16. The reciprocal is taken once in float32 on the host, so the device does one IEEE multiply."""
  qmax, inv = _qmax(bits), float(_inverse(scale))
  return (x.float() * inv).round().clip(-qmax, qmax).cast(dtypes.int8 if bits == 8 else dtypes.int16)
