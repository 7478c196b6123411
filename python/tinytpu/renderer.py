"""TinyTPURenderer: hands tinygrad's linearized UOps to the C++ compiler as a compact text IR."""
from __future__ import annotations
import contextvars, functools, linecache, multiprocessing, os, sys, sysconfig, weakref
import tinygrad
import tinygrad.codegen
from tinygrad.renderer import Renderer
from tinygrad.device import Compiler
from tinygrad.dtype import dtypes, DType
from tinygrad.uop.ops import Ops, UOp, UPat, PatternMatcher
from tinygrad.helpers import getenv, ansistrip, to_tuple
from tinygrad.codegen.opt import heuristic, OptOps, KernelOptError
from tinytpu import _core
from tinytpu.sin32 import sin32

FAST_MATH = bool(getenv("TINYTPU_FAST_MATH", 0))
# TINYTPU_DOTS, a device's `dots` by default: where the dot products of the kernels it makes run. Unset (""), the engine
# the compiler's cycle estimate finds faster; "mxu", the MXU wherever they fit it (int8 weights stay int8 from HBM to
# the MXU, where the VPU reads them as 32-bit lanes: for a model whose weights' bytes bound it, as a decode's do). It
# is a part of the renderer's target arch (DOTS_ON_MXU), so tinygrad keeps the kernels of each apart.
DOTS = os.getenv("TINYTPU_DOTS", "")
DOTS_ON_MXU = "dots=mxu"
def check_dots(dots: str) -> str:
  if dots not in ("", "mxu"): raise ValueError(f"TINYTPU_DOTS={dots}: unset (the faster engine by the estimate) or mxu")
  return dots
check_dots(DOTS)

# The IR's dtypes (cpp/compiler/dtypes.def): tinygrad dtype -> IR code, and those a tensor on TINYTPU may have. Lanes are
# 32 bits wide; narrower integers wrap at their own width.
DTYPE_CODES: dict[DType, str] = {getattr(dtypes, d["tinygrad"]): d["code"] for d in _core.dtypes()}
SUPPORTED_DTYPES = {getattr(dtypes, d["tinygrad"]) for d in _core.dtypes() if d["storage"]}

class UnsupportedDType(TypeError, NotImplementedError):
  """A dtype TINYTPU has no lanes for: float64 (tinygrad emulates the others over 32-bit lanes)."""

_TO_FLOAT32 = ("make it float32 before it reaches TINYTPU: Tensor(x, dtype=dtypes.float32) or Tensor(x.astype(np.float32)) "
               "for a numpy array (numpy's default is float64), .float() on a tensor not yet on TINYTPU")
_NO_FLOAT64 = "TINYTPU has no float64 lanes: "

# float64 on TINYTPU is refused where a kernel would compute in it (check_dtypes, at render), as tinygrad's devices without
# float64 do: a float64 tensor can be made, copied in and out, and asked its dtype, shape and element size. Such a
# kernel is rendered far from the user's code (in a compile worker process when several kernels compile at once), so
# the tensor constructor keeps the user's line that made each float64 tensor on TINYTPU, and Tensor.realize adds to the
# refusal the line that asked for the computation and the lines that made its float64 tensors.
_PACKAGES = (os.path.dirname(tinygrad.__file__) + os.sep, os.path.dirname(__file__) + os.sep)
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
_made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # float64 Tensor on TINYTPU -> (file, line) that made it

def _user_frame(frame):
  """The innermost frame outside tinygrad, tinytpu and Python's own library: the user's line. Code without a file is
  the user's only in __main__ (python -c): tinygrad runs its compiled pattern matchers as "<string>" too."""
  while frame is not None:
    name, module = frame.f_code.co_filename, frame.f_globals.get("__name__")
    if not (name.startswith(_PACKAGES) or (name.startswith(_STDLIB) and "-packages" not in name)
            or (name.startswith("<") and module != "__main__") or str(module).startswith(("tinygrad.", "tinytpu."))):
      return name, frame.f_lineno
    frame = frame.f_back
  return None

def _where(loc: tuple[str, int]) -> str:
  text = linecache.getline(*loc).strip()
  return f"{loc[0]}:{loc[1]}" + (f" ({text})" if text else "")

def _on_tinytpu(t) -> bool: return any(str(d).split(":")[0] == "TINYTPU" for d in to_tuple(t.device))

def track_float64_tensors() -> None:
  """Wraps the Tensor constructor to keep where each float64 tensor on TINYTPU was made, and Tensor.realize to name the
  user's lines in a float64 refusal (see above)."""
  from tinygrad import Tensor
  if getattr(Tensor.__init__, "tracks_float64", False): return
  init, realize = Tensor.__init__, Tensor.realize
  @functools.wraps(init)
  def __init__(self, *args, **kwargs):
    init(self, *args, **kwargs)
    if self.dtype == dtypes.float64 and _on_tinytpu(self) and (loc := _user_frame(sys._getframe(1))) is not None:
      _made[self] = loc
  @functools.wraps(realize)
  def realize_(self, *lst, **kwargs):
    made = _made_in((self, *lst))  # before realize, which puts the buffers in place of the tensors' graphs
    try: return realize(self, *lst, **kwargs)
    except UnsupportedDType as e:
      if not e.args or not str(e.args[0]).startswith(_NO_FLOAT64) or getattr(e, "located", False): raise
      e.located, msg, here = True, str(e.args[0]), _user_frame(sys._getframe(1))
      if " Computed for " not in msg and here is not None: msg += f" Computed for {_where(here)}."
      made = ([loc for loc in made if loc != here] or made)[:3]  # .numpy() makes float64 tensors of its own on its line
      if made: msg += f" Its float64 tensor{'s were' if len(made) > 1 else ' was'} made at " + "; ".join(map(_where, made)) + "."
      e.args = (msg,)
      raise
  __init__.tracks_float64 = True
  Tensor.__init__, Tensor.realize = __init__, realize_

def _made_in(tensors) -> list[tuple[str, int]]:
  """Where the float64 tensors on TINYTPU that these tensors are computed from were made, in the order made."""
  if not _made: return []
  nodes = UOp.sink(*[t.uop for t in tensors]).toposort()
  return list(dict.fromkeys(loc for t, loc in list(_made.items()) if t.uop in nodes))

def check_dtypes(uops: list[UOp], kernel: str) -> None:
  """UnsupportedDType for a kernel that computes in float64: TINYTPU has no float64 lanes."""
  if (u := next((u for u in uops if u.dtype == dtypes.float64), None)) is None: return
  what = f"a float64 buffer of {u.src[0].vmax} elements" if u.op is Ops.PARAM else f"a float64 {u.op.name}"
  msg = f"{_NO_FLOAT64}kernel {kernel} has {what}; {_TO_FLOAT32}."
  # the user's line, where the kernel renders in the user's process (tinygrad compiles several kernels in worker processes)
  if multiprocessing.parent_process() is None and (loc := _user_frame(sys._getframe(1))) is not None:
    msg += f" Computed for {_where(loc)}."
  raise UnsupportedDType(msg)

def _dtype(dt: DType) -> str: return DTYPE_CODES.get(dt.scalar() if hasattr(dt, "scalar") else dt, dt.name.replace(" ", "_"))

def _const(v) -> str:
  if isinstance(v, bool): return str(int(v))
  if isinstance(v, int): return str(v)
  if isinstance(v, float): return v.hex()
  raise NotImplementedError(f"TINYTPU: constant {v!r} of type {type(v).__name__}")

def _arg(u: UOp) -> list[str]:
  if u.op is Ops.CONST: return [_const(u.arg)]
  if u.op in (Ops.ADD, Ops.MUL) and u.tag == REDUCE_TAG: return [REDUCE_TAG]
  if u.op is Ops.PARAM:
    a = u.arg
    lo, hi = a.vmin_vmax if a.vmin_vmax is not None else (0, 0)
    return [str(a.slot), a.addrspace.name if a.addrspace is not None else "GLOBAL", str(int(lo)), str(int(hi))]
  if u.op is Ops.RANGE: return [str(u.arg[0]), u.arg[-1].name]  # (axis, [sub-axis,] AxisType)
  if u.op is Ops.BUFFER: return [getattr(u.arg, "addrspace", u.arg).name if hasattr(getattr(u.arg, "addrspace", u.arg), "name") else str(u.arg)]
  return []

def serialize(uops: list[UOp], name: str, dots_on_mxu: bool = False) -> str:
  """One line per UOp: OP DTYPE NSRC SRC... ARG..., after a header of the kernel's name and flags."""
  index = {u: i for i, u in enumerate(uops)}
  flags = (" fastmath" if FAST_MATH else "") + (f" {DOTS_ON_MXU}" if dots_on_mxu else "")
  lines = [f"KERNEL {ansistrip(name).encode('ascii', 'ignore').decode().replace(' ', '_') or 'kernel'}{flags}"]
  for u in uops:
    lines.append(" ".join([u.op.name, _dtype(u.dtype), str(len(u.src)), *(str(index[s]) for s in u.src), *_arg(u)]))
  return "\n".join(lines) + "\n"

class TinyTPUCompiler(Compiler):
  def compile(self, src: str) -> bytes: return _core.compile_kernel(src)

class TinyTPURenderer(Renderer):
  supports_float4 = False  # scalar LOAD/STORE: the data plan gathers lanes itself
  has_local = False
  has_shared = False
  global_max = None
  # Ops the compiler lowers itself; tinygrad decomposes the rest. EXP2 and LOG2 are lowered as tinygrad's own
  # xexp2/xlog2 (the same bits), SQRT and FDIV exactly. With TINYTPU_FAST_MATH=1 the TranscUnit's EXP2/LOG2/SIN
  # and FRECIP's estimate are used directly (hardware.md §2.5: polynomial approximations).
  # The op table's rows say which (the C++ compiler's op_table.cc).
  code_for_op = {Ops[name]: None for name in _core.lowered_ops()}
  compiler = TinyTPUCompiler()
  # SIN stays in code_for_op so tinygrad's uint64 Payne-Hanek never appears; sin32 builds it in 32 bits.
  extra_matcher = None if FAST_MATH else PatternMatcher([(UPat(Ops.SIN, dtypes.float32, src=(UPat.var("d"),)), sin32)])
  def supported_dtypes(self) -> set[DType]: return set(SUPPORTED_DTYPES)
  def render(self, uops: list[UOp]) -> str:
    name = next((u.arg.name for u in uops if u.op is Ops.SINK and u.arg is not None), "kernel")
    check_dtypes(uops, ansistrip(name))
    src = serialize(uops, name, DOTS_ON_MXU in (self.target.arch or "").split(","))
    _core.check_kernel(src)  # NotImplementedError naming the op, dtype and kernel
    return src

# Which float ADD and MUL chains may be reassociated. tinygrad lowers a REDUCE to a chain of ALU ops, the same in the
# final UOps as a chain the user wrote, ((a+b)+c)+d. A float32 reduction may be summed in another order (docs/accuracy.md
# "The order of a float32 sum"), an elementwise chain may not (IEEE in tinygrad's order). So, for TINYTPU's kernels
# only, the ADDs and MULs tinygrad's reduce lowering (codegen's pm_reduce_local) makes are tagged REDUCE_TAG; the IR
# carries the tag (serialize), and the compiler's lane packer reassociates only tagged float chains (lane_pack.h). A
# rewrite that drops a tag later leaves that chain in order: slower, never wrong. Other devices' kernels are untouched.
REDUCE_TAG = "reduce"
_rendering_for_tinytpu = contextvars.ContextVar("rendering_for_tinytpu", default=False)
_tinygrad_reduce_lowering, _tinygrad_full_rewrite = tinygrad.codegen.pm_reduce_local, tinygrad.codegen.full_rewrite_to_sink

def _tag_reduce_alus(lowered: UOp, before: UOp) -> UOp:
  """`lowered` (what tinygrad's reduce lowering made of REDUCE `before`) with its new ADDs and MULs tagged."""
  kept, made = set(before.toposort()), {}
  for u in lowered.toposort():
    if u in kept: continue
    src = tuple(made.get(s, s) for s in u.src)
    new = u.replace(src=src, tag=REDUCE_TAG if u.op in (Ops.ADD, Ops.MUL) and u.tag is None else u.tag)
    if new is not u: made[u] = new
  return made.get(lowered, lowered)

def _lower_reduce(ctx, r: UOp) -> UOp | None:
  if not _rendering_for_tinytpu.get() or (lowered := _tinygrad_reduce_lowering.rewrite(r, ctx)) is None: return None
  return _tag_reduce_alus(lowered, r)

def _full_rewrite_to_sink(ast: UOp, ren: Renderer, *args, **kwargs) -> UOp:
  token = _rendering_for_tinytpu.set(isinstance(ren, TinyTPURenderer))
  try: return _tinygrad_full_rewrite(ast, ren, *args, **kwargs)
  finally: _rendering_for_tinytpu.reset(token)

tinygrad.codegen.pm_reduce_local = PatternMatcher([(UPat(Ops.REDUCE, name="r"), _lower_reduce)]) + _tinygrad_reduce_lowering
tinygrad.codegen.full_rewrite_to_sink = _full_rewrite_to_sink

# A float MXU's output-stationary block is R rows of lanes that share the dot product's first operand by R columns that
# share its second (compiler/mxu_dot.cc), each from one of the kernel's output ranges laid out in lanes. tinygrad's
# heuristic UPCASTs output ranges by 3 to 5 (a convolution's 32 channels by 4: 8 left in lanes), which on a 16-row MXU
# leaves no range of one operand with R values, so every block runs on the VPU. On a device whose core has a float MXU
# (its renderer's arch: MXU_ARCH of its PE's datatype and its rows) a dot product of two elements the MXU takes (a
# bfloat16 MXU: of bfloat16s) keeps the heuristic's opts but, for such an operand, the UPCAST of one of its ranges
# (_mxu_lanes). Upcasting an output range changes which outputs a lane computes, never the order of one output's sum
# (the UNROLLs stay), so the kernel gives the same bits on every core; tests check it.
MXU_ARCH = {1: "bfloat16mxu", 2: "floatmxu"}  # by config mxu_dtype

def _dot_of_elements(k) -> UOp | None:
  """A float32 sum of products whose factors are each one element (loaded, or computed from one load: a ReLU of the
  layer before, or a bfloat16's decoding, which the compiler keeps per element for the MXU, compiler/element_memo.h);
  of bfloat16s, the products are bfloat16 cast to float32 (tinygrad's bfloat16 matmul). Its product (MUL), or None."""
  r = k.reduceop
  def one_load(s: UOp) -> bool:
    ops = [u.op for u in s.toposort()]
    return ops.count(Ops.INDEX) == 1 and Ops.REDUCE not in ops
  if r is None or r.arg[0] is not Ops.ADD or r.dtype != dtypes.float32: return None
  term = r.src[0].src[0] if r.src[0].op is Ops.CAST and r.src[0].src[0].dtype == dtypes.bfloat16 else r.src[0]
  return term if term.op is Ops.MUL and all(one_load(s) for s in term.src) else None

def _mxu_lanes(k, stock, product: UOp, rows: int):
  """`stock` (tinygrad's opts for k) without the UPCAST of one range of each operand none of whose ranges keeps enough
  values in lanes to fill the MXU's `rows`; None when there is nothing to drop, or dropping fills no block."""
  if any(o.op not in (OptOps.UPCAST, OptOps.UNROLL) for o in stock.applied_opts): return None
  upcast = {o.axis: o.arg or k.full_shape[o.axis] for o in stock.applied_opts if o.op is OptOps.UPCAST}
  a, b = ({i for i in k.upcastable_dims if k.rngs[i] in s.backward_slice} for s in product.src)
  # a range fills blocks of `rows` when its ragged edge adds at most a quarter (the tracer's rule, Tracer::float_blocks)
  fills = lambda n: n >= rows and 4 * -(-n // rows) * rows <= 5 * n
  drop = set()
  for side in (a - b, b - a):
    if any(fills(k.full_shape[i] // upcast.get(i, 1)) for i in side): continue
    # the side's range that fills without its UPCAST (none: no block fills, the stock opts stay)
    if not (whole := [i for i in side if i in upcast and fills(k.full_shape[i])]): return None
    drop.add(max(whole, key=lambda i: k.full_shape[i]))
  if not drop: return None
  out = k.copy()
  for o in stock.applied_opts:
    if not (o.op is OptOps.UPCAST and o.axis in drop): out.apply_opt(o)
  return out

def hand_coded_optimizations(k):
  stock = _tinygrad_heuristic(k)
  takes = {MXU_ARCH[1]: (dtypes.bfloat16,), MXU_ARCH[2]: (dtypes.bfloat16, dtypes.float32)}  # a float32 MXU: any float
  parts = (k.ren.target.arch or "").split(",") if isinstance(k.ren, TinyTPURenderer) else []
  arch = next((a for a in parts if a.rstrip("0123456789") in takes), "")
  pe = arch.rstrip("0123456789")  # MXU_ARCH's name, then the rows
  if (product := _dot_of_elements(k)) is None or product.dtype not in takes.get(pe, ()): return stock
  try: return _mxu_lanes(k, stock, product, int(arch[len(pe):])) or stock
  except KernelOptError: return stock
_tinygrad_heuristic, heuristic.hand_coded_optimizations = heuristic.hand_coded_optimizations, hand_coded_optimizations
