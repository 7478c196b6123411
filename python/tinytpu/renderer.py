"""TinyTPURenderer: hands tinygrad's linearized UOps to the C++ compiler as a compact text IR."""
from __future__ import annotations
import functools
from tinygrad.renderer import Renderer
from tinygrad.device import Compiler
from tinygrad.dtype import dtypes, DType
from tinygrad.uop.ops import Ops, UOp, UPat, PatternMatcher
from tinygrad.helpers import getenv, ansistrip, to_tuple
from tinytpu import _core
from tinytpu.sin32 import sin32

FAST_MATH = bool(getenv("TINYTPU_FAST_MATH", 0))

# dtype -> IR code. Lanes are 32 bits wide; narrower integers wrap at their own width.
DTYPE_CODES: dict[DType, str] = {dtypes.void: "void", dtypes.bool: "bool", dtypes.int8: "i8", dtypes.uint8: "u8",
  dtypes.int16: "i16", dtypes.uint16: "u16", dtypes.int32: "i32", dtypes.uint32: "u32", dtypes.int64: "i64",
  dtypes.uint64: "u64", dtypes.float16: "f16", dtypes.bfloat16: "bf16", dtypes.float32: "f32", dtypes.float64: "f64",
  dtypes.weakint: "idx", dtypes.weakfloat: "wf"}
SUPPORTED_DTYPES = {dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
                    dtypes.float32}

class UnsupportedDType(TypeError, NotImplementedError):
  """A dtype TINYTPU has no lanes for: float64 (tinygrad emulates the others over 32-bit lanes)."""

_TO_FLOAT32 = ("make it float32 before it reaches TINYTPU: Tensor(x, dtype=dtypes.float32) or Tensor(x.astype(np.float32)) "
               "for a numpy array (numpy's default is float64), .float() on a tensor not yet on TINYTPU")

def refuse_float64_tensors() -> None:
  """The Tensor constructor (and so .to()) refuses a float64 tensor on TINYTPU, naming its shape. tinygrad 0.14.0
  asks a device about dtypes only when it renders a kernel, far from the line that made the tensor."""
  from tinygrad import Tensor
  init = Tensor.__init__
  if getattr(init, "refuses_float64", False): return
  @functools.wraps(init)
  def __init__(self, *args, **kwargs):
    init(self, *args, **kwargs)
    if self.dtype == dtypes.float64 and any(str(d).split(":")[0] == "TINYTPU" for d in to_tuple(self.device)):
      raise UnsupportedDType(f"TINYTPU has no float64 lanes: a float64 tensor of shape {self.shape} cannot go on it; "
                             f"{_TO_FLOAT32}")
  __init__.refuses_float64 = True
  Tensor.__init__ = __init__

def check_dtypes(uops: list[UOp], kernel: str) -> None:
  """UnsupportedDType for a float64 kernel (what a tensor made before `import tinytpu` or a cast reaches)."""
  if (u := next((u for u in uops if u.dtype == dtypes.float64), None)) is None: return
  what = f"a float64 buffer of {u.src[0].vmax} elements" if u.op is Ops.PARAM else f"a float64 {u.op.name}"
  raise UnsupportedDType(f"TINYTPU has no float64 lanes: kernel {kernel} has {what}; {_TO_FLOAT32}")

def _dtype(dt: DType) -> str: return DTYPE_CODES.get(dt.scalar() if hasattr(dt, "scalar") else dt, dt.name.replace(" ", "_"))

def _const(v) -> str:
  if isinstance(v, bool): return str(int(v))
  if isinstance(v, int): return str(v)
  if isinstance(v, float): return v.hex()
  raise NotImplementedError(f"TINYTPU: constant {v!r} of type {type(v).__name__}")

def _arg(u: UOp) -> list[str]:
  if u.op is Ops.CONST: return [_const(u.arg)]
  if u.op is Ops.PARAM:
    a = u.arg
    lo, hi = a.vmin_vmax if a.vmin_vmax is not None else (0, 0)
    return [str(a.slot), a.addrspace.name if a.addrspace is not None else "GLOBAL", str(int(lo)), str(int(hi))]
  if u.op is Ops.RANGE: return [str(u.arg[0]), u.arg[-1].name]  # (axis, [sub-axis,] AxisType)
  if u.op is Ops.BUFFER: return [getattr(u.arg, "addrspace", u.arg).name if hasattr(getattr(u.arg, "addrspace", u.arg), "name") else str(u.arg)]
  return []

def serialize(uops: list[UOp], name: str) -> str:
  """One line per UOp: OP DTYPE NSRC SRC... ARG..."""
  index = {u: i for i, u in enumerate(uops)}
  lines = [f"KERNEL {ansistrip(name).encode('ascii', 'ignore').decode().replace(' ', '_') or 'kernel'}{' fastmath' if FAST_MATH else ''}"]
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
    src = serialize(uops, name)
    _core.check_kernel(src)  # NotImplementedError naming the op, dtype and kernel
    return src
