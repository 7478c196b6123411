#!/usr/bin/env python3
"""Random differential programs: from an integer seed, a random tinygrad program (elementwise, cast, reduce, movement,
gather, scatter, cumsum, matmul and conv2d ops over 1-4 dim shapes up to 300,000 elements, every TINYTPU dtype) runs on
TINYTPU and on a reference device, and the two results are compared. Every case runs in its own forked process, so a
crash (signal) or a hang (timeout) is a reported case with its seed, never a dead runner.

  python harness/random_programs.py --count 200 --seed 0 --jobs 2 [--timeout 60]   # summary, one line per odd case
  python harness/random_programs.py --case 17                                       # one case in the foreground

Reference: tinygrad's CPU device, or PYTHON when a narrow integer (int8/uint8/int16/uint16) result may wrap: the CPU
device's C code computes such a product in int and does not wrap it where it feeds a wider op; PYTHON wraps, as the
dtype says (uint8/uint16 subtraction too: tinygrad adds the negated operand, which wraps). Values are drawn so that
the reference is well defined: no integer division by zero or of the minimum by -1, no int32 overflow (undefined in
C; uint32 wraps), shifts only of non-negative values by less than the width, float to int casts only in range, float
values far below overflow.

Comparison:
- integers and bools must be equal (bit exact);
- float32 results the generator knows to be exact must be equal: values on a grid (multiples of 2**-f with magnitude
  below 2**(24-f)), where every add, mul and sum is exact in any order, fused or not;
- any other float32 result (division, exp/log/sqrt/sin, sums of rounded values) is rounded differently by the devices:
  the CPU device contracts a*b+c into one rounding, PYTHON computes in float64, TINYTPU rounds every op as IEEE does,
  and sums run in another order (README "What runs where"). It is "within tolerance" when every element has
  |got - want| <= RTOL*|want| + ATOL*max|want|. Once a value is rounded the generator applies no op that would turn
  a last-bit difference into a different answer (comparisons, casts to int, argmax, floor, mod).

A clean error is a NotImplementedError (an op or dtype TINYTPU does not run) or a ValueError (a size over a limit)
raised before any result; any other exception is an unexpected error. When the reference device raises, crashes or
hangs (tinygrad's CPU device has its own faults), the case is a reference error, not a TINYTPU fault; a small program
the CPU device rejects is checked on PYTHON instead.
"""
from __future__ import annotations
import argparse, collections, json, math, os, pickle, random, select, signal, sys, tempfile, threading, time, traceback
import numpy as np
import tinytpu  # noqa: F401  registers TINYTPU
from tinygrad import Tensor, dtypes
from tinygrad.helpers import PARALLEL

# tinygrad compiles a schedule's kernels in a pool of worker processes: started in the runner, its threads would not
# survive the fork; started in every case, it would cost a second each. With a case per core it gains nothing.
PARALLEL.value = 0

RTOL, ATOL = 1e-4, 1e-5
MAX_ELEMENTS = 300_000      # the largest tensor a program makes
PYTHON_MAX_ELEMENTS = 8192  # the PYTHON device emulates every op in Python: programs it checks stay small
MAX_WORK = 1 << 18          # multiply-adds of a matmul or conv, index compares of a gather
CLEAN_ERRORS = (NotImplementedError, ValueError)
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "float32"]
NARROW = {"int8", "uint8", "int16", "uint16"}
SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16, 17, 31, 32, 61, 64, 97, 128, 257, 509, 1021, 2053, 4099, 16411, 65537]
LONG_SIZES = [16384, 16411, 32771, 65536, 65537, 100003, 200003, 299993]

def bounds(dtype: str) -> tuple[float, float]:
  if dtype == "bool": return 0, 1
  if dtype == "float32": return -3.4e38, 3.4e38
  info = np.iinfo(dtype)
  return int(info.min), int(info.max)

def on_grid(lo, hi, frac):
  """frac if every value in [lo, hi] that is a multiple of 2**-frac is exact in float32, else None."""
  return frac if frac is not None and max(abs(lo), abs(hi)) * 2.0**frac < 2**24 else None

def span(op, a, b):
  """The interval of a op b for a, b intervals."""
  if op == "+": return a[0] + b[0], a[1] + b[1]
  if op == "-": return a[0] - b[1], a[1] - b[0]
  products = [p * q for p in a for q in b]
  return min(products), max(products)

def bitwise_span(*ends):
  if min(ends) >= 0: return 0, (1 << max(int(e).bit_length() for e in ends)) - 1
  k = max(abs(int(e)).bit_length() for e in ends)
  return -(1 << k), (1 << k) - 1


def merge(*fracs):
  """The grid of a value made from values on these grids (None: off the grid)."""
  return None if any(f is None for f in fracs) else max(fracs)

class Value:
  """What the generator knows of a tensor: shape and dtype (from building it on NULL), bounds of every element, and
  for float32 the grid its values sit on (None once they may be rounded)."""
  def __init__(self, t, lo, hi, frac):
    self.shape, self.dtype = tuple(t.shape), {getattr(dtypes, n): n for n in DTYPES}.get(t.dtype)
    self.lo, self.hi, self.frac = lo, hi, frac
  @property
  def exact(self): return self.dtype != "float32" or self.frac is not None
  @property
  def is_int(self): return self.dtype not in ("bool", "float32")
  @property
  def numel(self): return math.prod(self.shape)
  @property
  def mag(self): return max(abs(self.lo), abs(self.hi))

class Program:
  """A random program: numpy inputs a0, a1, ... and lines of tinygrad code that leave the result in x. Every line is
  built on the NULL device as it is chosen (shape and dtype, no compute); one tinygrad rejects is not used."""
  def __init__(self, seed: int):
    self.seed, self.r, self.rng = seed, random.Random(seed), np.random.default_rng(seed)
    self.inputs: list[np.ndarray] = []
    self.lines: list[str] = []
    self.env = {"Tensor": Tensor, "dtypes": dtypes}
    self.reference, self.cap, self.max_numel = "CPU", MAX_ELEMENTS, 0
    cap = self.r.choices([64, 4096, 70_000, MAX_ELEMENTS], weights=[75, 18, 5, 2])[0]
    if cap > 4096 and self.r.random() < 0.5: shape = (self.r.choice(LONG_SIZES),)
    else: shape = self.dims(cap)
    dtype = self.r.choice(DTYPES)
    lo, hi, frac = self.wide(dtype)
    name = self.fresh(shape, dtype, lo, hi, frac)
    if dtype != "float32": lo, hi = self.inputs[-1].min().item(), self.inputs[-1].max().item()  # the tighter bounds
    self.emit("x = " + name, lo, hi, frac)
    for _ in range(self.r.randint(1, 3 if cap > 4096 else 6)):
      for _ in range(20):
        if self.step(): break

  def source(self) -> str:
    inputs = [f"a{i} = Tensor(<{a.dtype} {a.shape} in [{a.min()}, {a.max()}]>)" for i, a in enumerate(self.inputs)]
    return "\n".join([f"# seed {self.seed}, reference {self.reference}"] + inputs + self.lines)

  # *** inputs

  def dims(self, cap):
    out = []
    for _ in range(self.r.randint(1, 4)): out.append(self.r.choice([d for d in SIZES if d <= cap // math.prod(out)]))
    return tuple(out)

  def bshape(self, shape):
    """shape with some dims 1: broadcasts against shape."""
    return tuple(d if self.r.random() < 0.8 else 1 for d in shape)

  def small(self, dtype):
    """A value range for a second operand: small integers, or float32 multiples of 1/4."""
    if dtype == "float32": return (-4, 4, 2) if self.r.random() < 0.7 else (-1, 1, None)
    dlo, dhi = bounds(dtype)
    lo, hi = self.r.choice([(-9, 9), (-100, 100), (0, 3)])
    return max(lo, dlo), min(hi, dhi), 0

  def wide(self, dtype):
    """A value range for a first input: float32 on a grid or not, integers small or up to the whole dtype."""
    if dtype == "float32": return -(b := self.r.choice([1, 4, 16, 100])), b, self.r.choice([0, 2, 3, None])
    return *self.r.choice([(-8, 8), (-100, 100), (-30000, 30000), bounds(dtype)]), 0

  def fresh(self, shape, dtype, lo=None, hi=None, frac=None, nonzero=False, arr=None) -> str:
    """A new input (of the wide() range unless lo, hi, frac are given); returns its name."""
    dlo, dhi = bounds(dtype)
    if lo is None and arr is None: lo, hi, frac = self.wide(dtype)
    if arr is not None: pass
    elif dtype == "float32":
      if frac is None: arr = self.rng.uniform(lo, hi, shape)
      else: arr = self.rng.integers(math.ceil(lo * 2**frac), math.floor(hi * 2**frac), shape, endpoint=True) / 2.0**frac
      if nonzero: arr = np.where(np.abs(arr) < 0.5, 0.5, arr)
    else:
      arr = self.rng.integers(max(lo, dlo), min(hi, dhi), shape, endpoint=True)
      if nonzero: arr[arr == 0] = 1
    name = f"a{len(self.inputs)}"
    self.inputs.append(np.asarray(arr).astype(dtype))
    self.env[name] = Tensor(self.inputs[-1], device="NULL")
    return name

  def operand(self, x: Value, dtype=None, nonzero=False):
    """A constant or a new input that broadcasts against x: (code, lo, hi, frac)."""
    dtype = dtype or (x.dtype if self.r.random() < 0.8 or x.dtype == "bool" else self.r.choice(DTYPES))
    if self.r.random() < 0.25 and dtype != "bool":
      if dtype == "float32":
        c = self.r.choice([0.5, 1.25, 3.0, -2.0, 7.5, 0.1])
        return repr(c), c, c, (None if c == 0.1 else 2)
      # a constant takes x's dtype: keep it in range of both
      lo, hi = bounds(dtype)
      if x.is_int: lo, hi = max(lo, bounds(x.dtype)[0]), min(hi, bounds(x.dtype)[1])
      c = self.r.choice([v for v in (1, 2, 3, 5, 7, 100, 0, -1, -3) if lo <= v <= hi and (v or not nonzero)])
      return str(c), c, c, 0
    lo, hi, frac = self.small(dtype)
    return self.fresh(self.bshape(x.shape), dtype, lo, hi, frac, nonzero), lo, hi, frac

  def indices(self, shape, n, lo=0, unique_axis=None) -> str:
    """int32 indices in [lo, n) of the given shape; along unique_axis distinct (a prefix of a permutation)."""
    if unique_axis is None: return self.fresh(shape, "int32", lo, n - 1)
    full = list(shape)
    full[unique_axis] = n
    perms = np.argsort(self.rng.random(full), axis=unique_axis)
    return self.fresh(shape, "int32", arr=perms.take(range(shape[unique_axis]), axis=unique_axis))

  # *** choosing a line

  def emit(self, line, lo, hi, frac=None, subtracts=False) -> bool:
    """Add line if tinygrad builds it with a supported dtype and its values stay well defined on the reference.
    subtracts: tinygrad computes a - b as a + (-b), which wraps in uint8/uint16 even when a - b does not."""
    env = dict(self.env)
    try:
      exec(line, env)
      x = Value(env["x"], lo, hi, frac)
    except Exception:
      return False
    if x.dtype is None or x.numel == 0 or x.numel > self.cap: return False
    if subtracts and x.dtype in ("uint8", "uint16") and not self.narrow_wraps(x.numel): return False
    dlo, dhi = bounds(x.dtype)
    if x.dtype == "bool": x.lo, x.hi = 0, 1
    elif x.dtype == "float32":
      if x.mag > 1e30: return False
      x.frac = on_grid(x.lo, x.hi, frac)
    elif not dlo <= x.lo <= x.hi <= dhi:  # the result wraps: defined for uint32, checked on PYTHON for narrow ints
      if x.dtype != "uint32" and not (x.dtype in NARROW and self.narrow_wraps(x.numel)): return False
      x.lo, x.hi = dlo, dhi
    self.env, self.x = env, x
    self.lines.append(line)
    self.max_numel = max(self.max_numel, x.numel)
    return True

  def narrow_wraps(self, numel) -> bool:
    """A narrow int result may wrap: the reference is PYTHON from here, if the program is small enough for it."""
    if max(self.max_numel, numel) > PYTHON_MAX_ELEMENTS: return False
    self.reference, self.cap = "PYTHON", PYTHON_MAX_ELEMENTS
    return True

  def step(self) -> bool:
    big = self.x.numel > 4096  # long reductions are where size matters most
    ops = [(self.unary, 20), (self.binary, 25), (self.cast, 8), (self.reduce, 40 if big else 12), (self.movement, 15),
           (self.gather, 5), (self.scatter, 5), (self.cumsum, 3), (self.matmul, 5), (self.conv, 3)]
    n_inputs = len(self.inputs)
    if self.r.choices([f for f, _ in ops], weights=[w for _, w in ops])[0](): return True
    for i in range(n_inputs, len(self.inputs)): del self.env[f"a{i}"]
    del self.inputs[n_inputs:]
    return False

  # *** the ops: each returns whether it added a line

  def unary(self) -> bool:
    x, r = self.x, self.r
    if x.dtype == "bool": return self.emit("x = x.logical_not()", 0, 1)
    ops = [("-x", -x.hi, -x.lo, x.frac), ("x.relu()", max(x.lo, 0), max(x.hi, 0), x.frac),
           ("x.abs()", 0 if x.lo <= 0 <= x.hi else min(abs(x.lo), abs(x.hi)), x.mag, x.frac),
           ("x * x", *span("*", (x.lo, x.hi), (x.lo, x.hi)), None if x.frac is None else 2 * x.frac)]
    if x.dtype == "float32":
      ops += [("(x.abs() + 1).log()", 0, math.log(x.mag + 1), None), ("x.abs().sqrt()", 0, math.sqrt(x.mag), None),
              ("x.sigmoid()", 0, 1, None), ("x.tanh()", -1, 1, None), ("1 / (x.abs() + 1)", 0, 1, None)]
      if x.hi <= 80: ops.append(("x.exp()", 0, math.exp(x.hi), None))
      if x.mag <= 1000: ops.append(("x.sin()", -1, 1, None))
      if x.exact: ops += [(f"x.{f}()", math.floor(x.lo), math.ceil(x.hi), 0) for f in ("floor", "ceil", "round", "trunc")]
    else:
      top = bounds(x.dtype)[1]
      ops.append(("~x", -x.hi - 1, -x.lo - 1, 0) if x.dtype.startswith("int") else ("~x", top - x.hi, top - x.lo, 0))
      k = r.randrange(np.iinfo(x.dtype).bits)
      ops.append((f"x >> {k}", x.lo >> k, x.hi >> k, 0))
      if x.lo >= 0: ops.append((f"x << {k}", x.lo << k, x.hi << k, 0))  # a negative value shifted left is undefined in C
    line, lo, hi, frac = r.choice(ops)
    return self.emit(f"x = {line}", lo, hi, frac)

  def binary(self) -> bool:
    x, r = self.x, self.r
    kind = r.choice(["arith", "arith", "minmax", "compare", "where", "bitwise", "divide"])
    if kind == "where": return self.where()
    if kind == "divide": return self.divide()
    if x.dtype == "bool": return self.emit(f"x = x {r.choice('&|^')} {self.operand(x, 'bool')[0]}", 0, 1)
    o, lo, hi, frac = self.operand(x)
    if kind == "compare":
      return x.exact and self.emit("x = " + r.choice([f"x {c} {o}" for c in ("<", ">", "<=", ">=", "!=")] + [f"x.eq({o})"]), 0, 1)
    if kind == "minmax":
      f = r.choice([max, min])
      return self.emit(f"x = x.{f.__name__}imum({o})", f(x.lo, lo), f(x.hi, hi), merge(x.frac, frac))
    if kind == "bitwise":  # of ints and bools: a float operand has a float bound or frac 2 or None
      return x.is_int and isinstance(lo, int) and frac == 0 and self.emit(f"x = x {r.choice('&|^')} {o}", *bitwise_span(x.lo, x.hi, lo, hi), 0)
    op = r.choice("+-*")
    frac = merge(x.frac, frac) if op != "*" or x.frac is None or frac is None else x.frac + frac
    return self.emit(f"x = x {op} {o}", *span(op, (x.lo, x.hi), (lo, hi)), frac, subtracts=op == "-")

  def where(self) -> bool:
    x, r = self.x, self.r
    if x.dtype == "bool":  # x is the condition
      dtype = r.choice(DTYPES[1:])
      (p, plo, phi, pfrac), (o, lo, hi, frac) = self.operand(x, dtype), self.operand(x, dtype)
      return self.emit(f"x = x.where({p}, {o})", min(plo, lo), max(phi, hi), merge(pfrac, frac))
    o, lo, hi, frac = self.operand(x, x.dtype)
    cond = f"(x > {(x.lo + x.hi) // 2})" if x.exact and r.random() < 0.5 else self.fresh(self.bshape(x.shape), "bool")
    return self.emit(f"x = {cond}.where(x, {o})", min(x.lo, lo), max(x.hi, hi), merge(x.frac, frac))

  def divide(self) -> bool:
    x, r = self.x, self.r
    if x.dtype == "float32":
      if r.random() < 0.3:
        k = r.choice([1, 2, 3])
        return self.emit(f"x = x / {2**k}", x.lo / 2**k, x.hi / 2**k, None if x.frac is None else x.frac + k)
      o, lo, hi, _ = self.operand(x, "float32", nonzero=True)
      least = min(abs(lo), abs(hi), 0.5) if lo * hi > 0 else 0.5  # nonzero inputs are at least 0.5 away from 0
      return self.emit(f"x = x / {o}", -x.mag / least, x.mag / least, None)
    if not x.is_int: return False
    o, lo, hi, _ = self.operand(x, x.dtype, nonzero=True)
    # no negative divisor of unsigned values (it would be converted), none of a signed minimum (its quotient overflows)
    if lo < 0 and (x.dtype.startswith("u") or x.lo == bounds(x.dtype)[0]): return False
    q, d = max(x.mag, 1), max(abs(lo), abs(hi))
    neg = x.lo < 0 or lo < 0
    line = r.choice([f"x // {o}", f"x.div({o}, rounding_mode='trunc')", f"x % {o}", f"x.fmod({o})"])
    if "/" in line or "div" in line: return self.emit(f"x = {line}", -q if neg else 0, q, 0)
    return self.emit(f"x = {line}", -(d - 1) if neg else 0, d - 1, 0)

  def cast(self) -> bool:
    x, to = self.x, self.r.choice(DTYPES)
    line, (dlo, dhi) = f"x = x.cast(dtypes.{to})", bounds(to)
    if to == "bool": return x.exact and self.emit(line, 0, 1)
    if to == "float32": return self.emit(line, x.lo, x.hi, x.frac if x.dtype == "float32" else 0)
    if x.dtype == "float32":  # truncates toward zero: the value must fit
      if not x.exact or x.lo <= dlo - 1 or x.hi >= dhi + 1 or (to.startswith("u") and x.lo < 0): return False
      return self.emit(line, math.trunc(x.lo), math.trunc(x.hi))
    return self.emit(line, *((x.lo, x.hi) if dlo <= x.lo and x.hi <= dhi else (dlo, dhi)))

  def reduce(self) -> bool:
    x, r = self.x, self.r
    if x.shape and r.random() < 0.7:
      axis = r.randrange(len(x.shape))
      n, arg = x.shape[axis], f"axis={axis}" + (", keepdim=True" if r.random() < 0.3 else "")
    else: n, arg = x.numel, ""
    op = r.choice(["sum", "sum", "max", "min", "prod", "mean", "argmax", "argmin"])
    if op == "sum": return self.emit(f"x = x.sum({arg})", n * min(x.lo, 0), n * max(x.hi, 0), x.frac)
    if op in ("max", "min"): return self.emit(f"x = x.{op}({arg})", x.lo, x.hi, x.frac)
    if op == "prod":
      if n > 24 or (x.mag > 1 and n * math.log2(x.mag) > 60): return False
      return self.emit(f"x = x.prod({arg})", x.lo**n if x.lo >= 0 else -x.mag**n, x.mag**n, None if x.frac is None else x.frac * n)
    if op == "mean": return (not x.is_int or n * x.mag < 2**31) and self.emit(f"x = x.mean({arg})", x.lo, x.hi, None)
    return x.exact and self.emit(f"x = x.{op}({arg})", 0, n - 1)

  def cumsum(self) -> bool:
    x = self.x
    if not x.shape: return False
    axis = self.r.randrange(len(x.shape))
    n = x.shape[axis]
    return n * x.numel <= 16 * MAX_WORK and self.emit(f"x = x.cumsum({axis})", n * min(x.lo, 0), n * max(x.hi, 0), x.frac)

  def movement(self) -> bool:
    x, r = self.x, self.r
    kind, same = r.choice(["reshape", "permute", "expand", "pad", "shrink", "slice", "flip", "cat"]), (x.lo, x.hi, x.frac)
    if kind == "reshape":
      shape, rest = [], x.numel
      for _ in range(r.randint(0, 3)):
        shape.append(d := r.choice([d for d in range(1, min(rest, 64) + 1) if rest % d == 0]))
        rest //= d
      r.shuffle(shape := shape + [rest])
      return self.emit(f"x = x.reshape({tuple(shape)})", *same)
    if not x.shape: return False
    nd = len(x.shape)
    if kind == "permute": return self.emit(f"x = x.permute({tuple(r.sample(range(nd), nd))})", *same)
    if kind == "flip": return self.emit(f"x = x.flip({r.randrange(nd)})", *same)
    if kind == "expand":
      at = r.randint(0, nd)
      new = x.shape[:at] + (1,) + x.shape[at:]
      return self.emit(f"x = x.reshape({new}).expand({new[:at] + (r.choice([2, 3, 4]),) + new[at + 1:]})", *same)
    if kind == "pad":
      pads = tuple((r.randint(0, 3), r.randint(0, 3)) if r.random() < 0.6 else (0, 0) for _ in x.shape)
      if r.random() < 0.4: return self.emit(f"x = x.pad({pads}, mode='{r.choice(['reflect', 'replicate'])}')", *same)
      v = r.choice([0, 1])
      return self.emit(f"x = x.pad({pads}, value={v})", min(x.lo, v), max(x.hi, v), x.frac)
    if kind in ("shrink", "slice"):
      cuts = [(s := r.randint(0, d - 1), r.randint(s + 1, d)) for d in x.shape]
      if kind == "shrink": return self.emit(f"x = x.shrink({tuple(cuts)})", *same)
      steps = [r.choice([1, 2, 3, -1]) for _ in cuts]
      return self.emit(f"x = x[{', '.join('::-1' if k == -1 else f'{s}:{e}:{k}' for (s, e), k in zip(cuts, steps))}]", *same)
    axis = r.randrange(nd)
    lo, hi, frac = self.small(x.dtype)
    o = self.fresh(x.shape[:axis] + (r.choice([1, 2, 3, 7]),) + x.shape[axis + 1:], x.dtype, lo, hi, frac)
    return self.emit(f"x = x.cat({o}, dim={axis})", min(x.lo, lo), max(x.hi, hi), merge(x.frac, frac))

  def gather(self) -> bool:
    x, r = self.x, self.r
    if not x.shape: return False
    axis = r.randrange(min(2, len(x.shape)))
    n = x.shape[axis]
    if r.random() < 0.5:  # fancy indexing, negative indices too
      ishape = (r.choice([1, 3, 5, 16]),) if r.random() < 0.7 else (r.choice([2, 3]), r.choice([2, 4]))
      if x.numel * math.prod(ishape) > MAX_WORK: return False
      return self.emit(f"x = x[{':, ' * axis}{self.indices(ishape, n, lo=-n)}]", x.lo, x.hi, x.frac)
    ishape = tuple(r.randint(1, d) if i != axis else r.choice([1, 2, 5]) for i, d in enumerate(x.shape))
    return math.prod(ishape) * n <= MAX_WORK and self.emit(f"x = x.gather({axis}, {self.indices(ishape, n)})", x.lo, x.hi, x.frac)

  def scatter(self) -> bool:
    x, r = self.x, self.r
    if not x.shape: return False
    kind = r.choice(["setitem", "setitem_fancy", "scatter", "scatter_reduce"])
    lo, hi, frac = self.small(x.dtype)
    if kind == "setitem":
      cuts = [(s := r.randint(0, d - 1), r.randint(s + 1, d)) for d in x.shape]
      src = self.fresh(tuple(e - s for s, e in cuts), x.dtype, lo, hi, frac)
      return self.emit(f"x = x.contiguous()\nx[{', '.join(f'{s}:{e}' for s, e in cuts)}] = {src}", min(x.lo, lo), max(x.hi, hi), merge(x.frac, frac))
    if kind == "setitem_fancy":
      k = r.randint(1, x.shape[0])
      if x.numel * k > MAX_WORK: return False
      return self.emit(f"x = x.contiguous()\nx[{self.indices((k,), x.shape[0], unique_axis=0)}] = 3", min(x.lo, 3), max(x.hi, 3), x.frac)
    axis = r.randrange(len(x.shape))
    ishape = tuple(r.randint(1, d) for d in x.shape)
    if math.prod(ishape) * x.shape[axis] > MAX_WORK: return False
    src, frac = self.fresh(ishape, x.dtype, lo, hi, frac), merge(x.frac, frac)
    if kind == "scatter":  # distinct indices: with duplicates which write wins is not defined
      idx = self.indices(ishape, x.shape[axis], unique_axis=axis)
      return self.emit(f"x = x.scatter({axis}, {idx}, {src})", min(x.lo, lo), max(x.hi, hi), frac)
    op, k = r.choice(["sum", "amax", "amin"]), ishape[axis]
    out = (min(x.lo, 0) + k * min(lo, 0), max(x.hi, 0) + k * max(hi, 0)) if op == "sum" else (min(x.lo, lo), max(x.hi, hi))
    idx = self.indices(ishape, x.shape[axis])
    return self.emit(f"x = x.scatter_reduce({axis}, {idx}, {src}, reduce='{op}', include_self={r.random() < 0.7})", *out, frac)

  def matmul(self) -> bool:
    x, r = self.x, self.r
    if not x.shape or x.dtype == "bool": return False
    k, n = x.shape[-1], r.choice([1, 2, 3, 4, 5, 7, 8, 16, 17, 31])
    if x.numel * n > MAX_WORK: return False
    wshape = (k, n) if len(x.shape) > 1 or r.random() < 0.7 else (k,)
    if x.is_int and r.random() < 0.6:  # int8 data: in int32 tensors the MXU's case, in int8 ones products that wrap
      lo, hi = (x.lo, x.hi) if -128 <= x.lo and x.hi <= 127 else (-128, 127)
      a = "x" if x.dtype == "int8" else "x.cast(dtypes.int8)"
      if r.random() < 0.5: return self.emit(f"x = {a}.cast(dtypes.int32) @ {self.fresh(wshape, 'int32', -128, 127)}", -(2**14) * k, 2**14 * k, 0)
      if max(-lo, hi) * 128 > 127 and not self.narrow_wraps(x.numel * n): return False
      return self.emit(f"x = {a}.matmul({self.fresh(wshape, 'int8')}, dtype=dtypes.int32)", -(2**14) * k, 2**14 * k, 0)
    lo, hi, frac = self.small(x.dtype)
    m = x.mag * max(abs(lo), abs(hi)) * k
    return self.emit(f"x = x @ {self.fresh(wshape, x.dtype, lo, hi, frac)}", -m, m, None if x.frac is None or frac is None else x.frac + frac)

  def conv(self) -> bool:
    x, r = self.x, self.r
    dtype = "float32" if x.dtype == "float32" else "int32"
    if dtype == "int32" and x.hi > bounds("int32")[1]: return False
    if len(x.shape) == 4: n, c, h, w = x.shape
    else:
      n, c = 1, r.choice([d for d in (1, 2, 3) if x.numel % d == 0])
      h = r.choice([d for d in range(1, min(x.numel // c, 64) + 1) if x.numel // c % d == 0])
      w = x.numel // c // h
    cout, kh, kw = r.choice([1, 2, 3]), r.randint(1, min(h, 3)), r.randint(1, min(w, 3))
    if n * cout * h * w * c * kh * kw > MAX_WORK: return False
    lo, hi, frac = (-4, 4, 2) if dtype == "float32" else (-9, 9, 0)
    wt = self.fresh((cout, c, kh, kw), dtype, lo, hi, frac)
    bias = self.fresh((cout,), dtype, lo, hi, frac) if r.random() < 0.5 else "None"
    m = x.mag * hi * c * kh * kw + hi
    conv = f"conv2d({wt}, {bias}, stride={r.choice([1, 1, 2])}, padding={r.choice([0, 0, 1])})"
    return self.emit(f"x = x.cast(dtypes.{dtype}).reshape({n}, {c}, {h}, {w}).{conv}", -m, m, None if x.frac is None else x.frac + frac)

# *** running and comparing

RUNNING = "random_programs: running on "

def run(prog: Program, device: str) -> np.ndarray:
  if device != "NULL": print(RUNNING + device, file=sys.stderr, flush=True)  # names the device a dead case was on
  env = {"Tensor": Tensor, "dtypes": dtypes, **{f"a{i}": Tensor(a, device=device) for i, a in enumerate(prog.inputs)}}
  for line in prog.lines: exec(line, env)
  return env["x"].numpy()

def compare(got: np.ndarray, want: np.ndarray, exact: bool) -> tuple[str, str]:
  """("exact" | "tolerance" | "wrong", what differs)."""
  if got.shape != want.shape or got.dtype != want.dtype: return "wrong", f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
  is_float = want.dtype == np.float32
  if np.array_equal(got, want, equal_nan=is_float): return "exact", ""
  bad = got != want
  if is_float: bad &= ~(np.isnan(got) & np.isnan(want))
  at = np.unravel_index(np.argmax(bad), want.shape)
  where = f"{bad.sum()} of {want.size} differ, first at {tuple(int(i) for i in at)}: got {got[at]!r}, want {want[at]!r}"
  if not is_float or exact: return "wrong", where
  with np.errstate(all="ignore"):
    err = np.abs(got.astype(np.float64) - want)
    limit = RTOL * np.abs(want) + ATOL * np.nanmax(np.abs(want[np.isfinite(want)]), initial=0)
    ok = (err <= limit) | (got == want) | (np.isnan(got) & np.isnan(want))
    rel = np.nanmax(np.where(bad, err / np.maximum(np.abs(want), 1e-30), 0))
  return ("tolerance", f"max rel err {rel:.1e}") if ok.all() else ("wrong", where)

def reference(prog: Program) -> tuple[str, np.ndarray]:
  """The device that gave the reference result, and the result: PYTHON when the CPU device fails (tinygrad's C
  renderer rejects a few programs, e.g. an integer literal too large for C) and the program is small enough."""
  try: return prog.reference, run(prog, prog.reference)
  except Exception:
    if prog.reference != "CPU" or prog.max_numel > PYTHON_MAX_ELEMENTS: raise
    return "PYTHON", run(prog, "PYTHON")

def run_case(seed: int) -> dict:
  """Build program seed, run it on the reference and on TINYTPU, compare. Never raises."""
  out = {"seed": seed}
  try:
    prog = Program(seed)
  except Exception as e:
    return {**out, "status": "generator error", "detail": f"{type(e).__name__}: {e}"}
  out.update(reference=prog.reference, float=prog.x.dtype == "float32", exact=prog.x.exact, numel=prog.max_numel)
  try:
    t = time.perf_counter()
    out["reference"], want = reference(prog)
    out["ref_s"] = time.perf_counter() - t
  except Exception as e:
    return {**out, "status": "reference error", "detail": head(e)}
  try:
    t = time.perf_counter()
    got = run(prog, "TINYTPU")
    out["tinytpu_s"] = time.perf_counter() - t
  except CLEAN_ERRORS as e:
    return {**out, "status": "clean error", "detail": head(e)}
  except Exception as e:
    return {**out, "status": "unexpected error", "detail": head(e)}
  status, detail = compare(got, want, prog.x.exact)
  return {**out, "status": status, "detail": detail}

def head(e: BaseException) -> str:
  return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"

def warm_up():
  """Import and exercise tinygrad's passes in the parent on NULL, so every forked case starts warm. No thread may run
  at the fork (a child has only the forking thread): the CPU device starts its workers at its first kernel, which
  is in the child."""
  import tinygrad.runtime.ops_cpu, tinygrad.runtime.ops_python  # noqa: F401
  for seed in range(16):
    prog = Program(seed)
    try: run(prog, "NULL")
    except RuntimeError: pass  # NULL has no copyout: the kernels ran
  assert threading.active_count() == 1, f"threads started before forking: {threading.enumerate()}"

def run_forked(seeds, jobs: int, timeout: float, on_result=None, case=run_case) -> list[dict]:
  """case(seed) in a forked child per seed (its own process group, killed on timeout); results come back through a
  pipe. A child that dies by a signal or without a result is a crash, one past the timeout a hang."""
  results, pending, running = [], list(seeds)[::-1], {}
  errdir = tempfile.mkdtemp(prefix="random_programs_")
  def done(res):
    results.append(res)
    if on_result: on_result(res, len(results))
  try:
    while pending or running:
      while pending and len(running) < jobs:
        seed, (rfd, wfd) = pending.pop(), os.pipe()
        errfile = os.path.join(errdir, f"{seed}.err")
        if (pid := os.fork()) == 0: child(seed, case, wfd, errfile)
        os.close(wfd)
        running[rfd] = (pid, seed, time.monotonic(), errfile, bytearray())
      for fd in select.select(list(running), [], [], 0.1)[0]:
        if chunk := os.read(fd, 1 << 16): running[fd][4].extend(chunk)
        else: done(finish(running.pop(fd), fd, None))
      for fd, (pid, seed, start, errfile, buf) in list(running.items()):
        if time.monotonic() - start > timeout:
          os.killpg(pid, signal.SIGKILL)
          done(finish(running.pop(fd), fd, f"no answer in {timeout:g} s"))
  finally:  # interrupted: the children are in their own process groups, out of reach of the terminal's Ctrl-C
    for pid, *_ in running.values(): os.killpg(pid, signal.SIGKILL)
    for name in os.listdir(errdir): os.unlink(os.path.join(errdir, name))
    os.rmdir(errdir)
  return results

def child(seed, case, wfd, errfile):
  """In the forked process: run the case, send its result, exit without returning into the runner's loop."""
  try:
    os.setpgid(0, 0)
    err = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(err, 1), os.dup2(err, 2)
    os.write(wfd, pickle.dumps(case(seed)))
  except BaseException:
    traceback.print_exc()
    os._exit(1)
  os._exit(0)

def finish(entry, fd, timed_out) -> dict:
  """The result of a finished or killed child: its own, or a crash or hang with the device it was running on (a
  reference device dying is a reference error) and the last line it printed."""
  pid, seed, start, errfile, buf = entry
  os.close(fd)
  status, lines = os.waitpid(pid, 0)[1], []
  if os.path.exists(errfile):
    with open(errfile, errors="replace") as f: lines = f.read().strip().splitlines()
    os.unlink(errfile)
  res = {"seed": seed, "wall_s": time.monotonic() - start}
  if buf and not timed_out: return {**pickle.loads(bytes(buf)), **res}
  device = ([line[len(RUNNING):] for line in lines if line.startswith(RUNNING)] or ["no device"])[-1]
  last = next((line for line in reversed(lines) if not line.startswith(RUNNING)), "")[:160]
  what = timed_out or (signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}")
  kind = "reference error" if device in ("CPU", "PYTHON") else "hang" if timed_out else "crash"
  return {**res, "status": kind, "detail": f"{what} on {device}: {last}"}

# *** report

FAILURES = ("crash", "hang", "wrong", "unexpected error", "reference error", "generator error")

def reproducer(res: dict) -> str:
  return f"{res['status']:16} seed {res['seed']:<7} {res.get('detail', '')[:150]}\n    python harness/random_programs.py --case {res['seed']}"

def summary(results: list[dict], seconds: float) -> str:
  count = collections.Counter(r["status"] for r in results)
  lines = [f"tried {len(results)} in {seconds:.0f} s: exact {count['exact']}, within tolerance {count['tolerance']}, "
           f"clean errors {count['clean error']}, unexpected errors {count['unexpected error']}, crashes {count['crash']}, "
           f"hangs {count['hang']}, wrong {count['wrong']}, reference errors {count['reference error']}, "
           f"generator errors {count['generator error']}",
           f"reference PYTHON for {sum(r.get('reference') == 'PYTHON' for r in results)}; float32 results "
           f"{sum(bool(r.get('float')) for r in results)}, {sum(bool(r.get('float') and r['exact']) for r in results)} of them exact by construction"]
  for kind in ("clean error", "unexpected error"):
    heads = collections.Counter(r["detail"][:100] for r in results if r["status"] == kind)
    lines += [f"{kind}s:"] * bool(heads) + [f"  {n:5}  {h}" for h, n in heads.most_common()]
  slow = sorted((r for r in results if "wall_s" in r), key=lambda r: -r["wall_s"])[:3]
  lines.append("slowest: " + ", ".join(f"seed {r['seed']} {r['wall_s']:.1f} s" for r in slow))
  odd = [r for r in results if r["status"] == "tolerance"] + [r for r in results if r["status"] in FAILURES]
  return "\n".join(lines + [reproducer(r) for r in odd])

def show_case(seed: int):
  """One case in the foreground: the program, both results, the verdict."""
  prog = Program(seed)
  print(prog.source())
  np.set_printoptions(threshold=32, edgeitems=2)
  results = {}
  for device, get in (("reference", lambda: reference(prog)), ("TINYTPU", lambda: ("TINYTPU", run(prog, "TINYTPU")))):
    try: name, results[device] = get()
    except Exception: traceback.print_exc()
    else: print(f"--- {name}: {results[device].dtype}{results[device].shape}\n{results[device]}")
  if len(results) == 2: print("---", *compare(results["TINYTPU"], results["reference"], prog.x.exact))

def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--count", type=int, default=100, help="programs to try (default 100)")
  p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
  p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
  p.add_argument("--timeout", type=float, default=120, help="seconds before a case counts as a hang (default 120)")
  p.add_argument("--case", type=int, help="re-run one case in the foreground and print it")
  p.add_argument("--json", help="also write every case's result to this file")
  p.add_argument("--progress", action="store_true", help="print a line per finished case")
  args = p.parse_args()
  if args.case is not None: return show_case(args.case)
  if args.count < 1 or args.jobs < 1 or args.timeout <= 0: p.error("--count, --jobs and --timeout must be positive")
  warm_up()
  start = time.monotonic()
  def progress(res, n): print(f"{n}/{args.count} seed {res['seed']}: {res['status']} {res['wall_s']:.1f} s {res.get('detail', '')}", flush=True)
  results = run_forked(range(args.seed, args.seed + args.count), args.jobs, args.timeout, progress if args.progress else None)
  results.sort(key=lambda r: r["seed"])
  print(summary(results, time.monotonic() - start))
  if args.json:
    with open(args.json, "w") as f: json.dump(results, f, indent=1)
  sys.exit(1 if any(r["status"] in FAILURES for r in results) else 0)

if __name__ == "__main__":
  main()
