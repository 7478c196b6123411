"""`make demo`: run small TASM programs on the TensorCore model and print their results and cycles."""
import struct
from tinytpu import device, model

ADD = """
# elementwise int32 add on the VPU (the seed benchmark's add_16)
VMEM[0] = 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
VMEM[1] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
LOAD v0, VMEM[0]
LOAD v1, VMEM[1]
VPU v2 = ADD(v0, v1)
STORE VMEM[2], v2
HALT
OUTPUT_VMEM VMEM[2]
END
"""

GEMM = """
# [1 2 3 4] @ W on the 4x4 int8 systolic array, weight-stationary
WMEM[0] = 1 0 0 2  0 1 0 2  0 0 1 2  -1 -1 -1 2
AMEM[0] = 1 2 3 4
MXU WMEM[0], AMEM[0], tiles=1
WAIT_MXU
HALT
OUTPUT_MXU
END
"""

def f32(x: float) -> int: return struct.unpack("<i", struct.pack("<f", x))[0]
def unf32(i: int) -> float: return struct.unpack("<f", struct.pack("<i", i))[0]

FLOAT = f"""
# float32 multiply-add and a tile max reduction in the VPU (IEEE RNE)
VMEM[0] = {' '.join(str(f32(0.5 * i)) for i in range(16))}
VMEM[1] = {' '.join(str(f32(1.5)) for _ in range(16))}
LOAD v0, VMEM[0]
LOAD v1, VMEM[1]
VPU v2 = FMUL(v0, v1)
VPU v3 = FADD(v2, v1)
VPU v4 = FMAX_REDUCE_TILE(v3)
STORE VMEM[2], v3
STORE VMEM[3], v4
HALT
OUTPUT_VMEM VMEM[2]
OUTPUT_VMEM VMEM[3]
END
"""

def mxu_work(t) -> tuple[list, int, int]:
  """t's values, computed with tracing on, and the MXU's work in computing them: its dispatches and busy cycles
  (the trace's MXU slices, as `python -m tinytpu profile` counts them). Records into a trace already running
  (TINYTPU_TRACE) or one of its own."""
  from tinytpu import trace
  from tinytpu.events import Trace
  own = trace._active is None
  log = trace.start() if own else trace._active
  base = log.base  # the timeline's end so far: this computation's events begin from here
  try: out = t.tolist()
  finally:
    if own: trace.stop()
  tr = Trace(log)
  mxu = tr.on("mxu", 0) & (tr.ev["begin"] >= base)
  return out, int(mxu.sum()), int(tr.cycles[mxu].sum())

def tinygrad_examples():
  from tinygrad import Tensor, dtypes
  def show(name, t):
    device.reset_counters()
    out = t.tolist()
    c = device.counters()
    print(f"{name:11s} {out}\n            cycles {c['cycles']} in {c['launches']} launch(es), {c['kernels']} kernel(s)")
  a = Tensor([1, 2, 3, 4], dtype=dtypes.int32, device="TINYTPU")
  show("int add", a + Tensor([10, 20, 30, 40], dtype=dtypes.int32, device="TINYTPU"))
  show("relu", (Tensor(list(range(8)), device="TINYTPU") - 4).relu())
  show("sum", Tensor(list(range(256)), device="TINYTPU").sum())
  show("float", (Tensor([0.5, -1.25, 3.0], device="TINYTPU") * 2.5 + 1).exp())
  # An int32 matmul whose operands all fit int8 runs on the MXU (README "What runs where"). Operands tinygrad knows
  # the values of (Tensor.eye) are folded away before any kernel: these are data.
  x = [[(8 * i + j) % 17 - 8 for j in range(8)] for i in range(8)]
  w = [[(8 * i + j) * 7 % 23 - 11 for j in range(8)] for i in range(8)]
  device.reset_counters()
  xt, wt = (Tensor(v, dtype=dtypes.int32, device="TINYTPU") for v in (x, w))
  out, dispatches, busy = mxu_work(xt @ wt)
  c = device.counters()
  want = [[sum(x[i][k] * w[k][j] for k in range(8)) for j in range(8)] for i in range(8)]
  if out != want: raise RuntimeError(f"the 8x8 int matmul gave {out}, not {want}")
  if dispatches == 0: raise RuntimeError("the 8x8 int matmul made no MXU dispatch: the demo does not claim it ran on the MXU")
  print(f"matmul      8x8 @ 8x8 int32 in int8 range, row 0 {out[0]}\n            cycles {c['cycles']} in {c['launches']} "
        f"launch(es), {c['kernels']} kernel(s); on the MXU: {dispatches} dispatches, {busy} busy cycles")
  show("matmul f32", Tensor([[0.5, 1.5], [2.0, -1.0]], device="TINYTPU") @ Tensor([[1.0, 2.0], [3.0, 4.0]], device="TINYTPU"))

def main():
  print("-- TASM programs on the TensorCore model")
  r = model.run_tasm(ADD)
  print(f"add_16      {r.vmem_results[0]}\n            cycles {r.cycles} (sxu {r.sxu_cycles})")
  r = model.run_tasm(GEMM)
  print(f"gemm 1x4x4  {r.mxu_result}\n            cycles {r.cycles} (sxu {r.sxu_cycles})")
  r = model.run_tasm(FLOAT)
  print(f"float fma   {[unf32(v) for v in r.vmem_results[0]]}")
  print(f"float max   {unf32(r.vmem_results[1][0])}\n            cycles {r.cycles} (sxu {r.sxu_cycles})")
  print("-- tinygrad on device TINYTPU")
  tinygrad_examples()

if __name__ == "__main__":
  main()
