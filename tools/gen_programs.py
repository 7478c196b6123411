"""Random TASM programs for differential testing against the reference testbench.

Every program initialises all memory it can read, never hangs, and ends by storing every vreg, so the
outputs show the whole architectural state. `tools/refdiff.py` runs them on both simulators.
"""
from __future__ import annotations
import random, struct

VPU_OPS = ["ADD", "MUL", "RELU", "MAX", "SUM_REDUCE", "CMPLT", "CMPNE", "SUB", "CMPEQ", "MAX_REDUCE", "SHL", "SHR",
  "MIN", "MIN_REDUCE", "DIV", "AND", "OR", "XOR", "FADD", "FMUL", "FSUB", "FMAX", "FCMPLT", "FRECIP", "I2F", "F2I",
  "NOT", "SELECT", "COPY", "SUM_REDUCE_COL", "MAX_REDUCE_COL", "MIN_REDUCE_COL", "SUM_REDUCE_TILE",
  "MAX_REDUCE_TILE", "MIN_REDUCE_TILE", "MUL_REDUCE", "MUL_REDUCE_COL", "MUL_REDUCE_TILE", "FSUM_REDUCE_TILE",
  "FMAX_REDUCE_TILE", "FMIN_REDUCE_TILE", "FMIN", "FSUM_REDUCE", "FMAX_REDUCE", "FMIN_REDUCE", "FSUM_REDUCE_COL",
  "FMAX_REDUCE_COL", "FMIN_REDUCE_COL", "FPROD_REDUCE_TILE", "FPROD_REDUCE", "FPROD_REDUCE_COL", "EXP2", "LOG2",
  "SIN", "COS", "PACKED_I8_ADD", "PACKED_I8_SUB", "PACKED_I8_MAX", "PACKED_I8_MIN", "PACKED_I8_NEG",
  "PACKED_I8_RELU", "PACKED_I8_CMPLT", "PACKED_I8_CMPEQ", "PACKED_I8_MUL_LOW", "PACKED_I8_MUL_HIGH",
  "PACKED_I8_ABS", "SIGN", "PACKED_I8_SIGN", "FSIGN", "ARGMIN", "ARGMAX", "CLZ", "POPCOUNT", "CTZ", "BYTE_REVERSE",
  "SAT_ADD_I32", "SAT_SUB_I32", "ABS_DIFF_I32", "PACKED_I8_ABS_DIFF", "FABS", "ROTL", "ROTR", "MIN_U32", "MAX_U32",
  "PAIR_ROTATE", "IPAIR_ROTATE"]
SLOW = {"EXP2", "LOG2", "SIN", "COS"}

def f32(x: float) -> int: return struct.unpack("<i", struct.pack("<f", x))[0]

def rand_value(rng: random.Random) -> int:
  kind = rng.random()
  if kind < 0.3: return rng.randint(-20, 20)
  if kind < 0.5: return rng.randint(-2**31, 2**31 - 1)
  if kind < 0.85: return f32(rng.choice([rng.uniform(-100, 100), rng.uniform(-2, 2), 0.0, -0.0, 1.0, 1e-40, 3e38]))
  return rng.choice([0, -1, 2**31 - 1, -2**31, 0x7F800000, -0x800000, 0x7FC00000, 0x7F800001 - 2**32 + 2**32])

def program(seed: int, n: int = 40) -> str:
  rng = random.Random(seed)
  r = lambda: f"v{rng.randrange(16)}"
  a = lambda: rng.randrange(32)
  lines = [f"VMEM[{i}] = " + " ".join(str(rand_value(rng)) for _ in range(16)) for i in range(32)]
  lines += [f"WMEM[{i}] = " + " ".join(str(rng.randint(-128, 127)) for _ in range(16)) for i in range(8)]
  lines += [f"AMEM[{i}] = " + " ".join(str(rng.randint(-128, 127)) for _ in range(4)) for i in range(32)]
  body, dispatched, stat_ok, loop_depth = [], False, False, 0
  def w(): return rng.randrange(8)
  for _ in range(n):
    k = rng.random()
    if k < 0.12: body.append(f"LOAD {r()}, VMEM[{a()}]")
    elif k < 0.18: body.append(f"STORE VMEM[{a()}], {r()}")
    elif k < 0.38:
      op = rng.choice(VPU_OPS)
      if op in SLOW and rng.random() < 0.7: op = "ADD"
      body.append(f"{rng.choice(['VPU', 'VPU', 'VPU_BG'])} {r()} = {op}({r()}, {r()})")
    elif k < 0.42: body.append(f"SELECT {r()} = SELECT({r()}, {r()}, {r()})")
    elif k < 0.50:
      body.append(rng.choice([f"BROADCAST {r()}, lane={rng.randrange(4)}", f"BROADCAST_SCALAR {r()} = {r()}[{rng.randrange(4)}, {rng.randrange(4)}]",
        f"BROADCAST_ROW {r()} = ROW({r()}, row={rng.randrange(4)})", f"BROADCAST_COL {r()} = COL({r()}, col={rng.randrange(4)})",
        f"TRANSPOSE {r()}, {r()}", f"ROTATE {r()}, {r()}, amount={rng.randrange(4)}", f"LOAD_XLU_RESULT {r()}"]))
    elif k < 0.62:
      t = rng.randint(1, 5); kk = rng.randint(1, 4)
      choice = rng.randrange(8)
      stat = False
      if choice == 0: body.append(f"MXU WMEM[{w()}], AMEM[{a()}], tiles={t}")
      elif choice == 1:
        body.append(f"MXU WMEM[{w()}], AMEM[{a()}], tiles={t}, {rng.choice(['psum_write', 'psum_acc'])}=PSUM[{rng.randrange(8)}], "
                    f"psum_row={rng.randrange(4)}")
      elif choice == 2: body.append(f"MXU_ACCUMULATE WMEM[{w()}], AMEM[{a()}], tiles={t}")
      elif choice == 3: body.append(f"MXU_OS WMEM[{w()}], AMEM[{a()}], k={kk}")
      elif choice == 4: body.append(f"MXU_OS_ACCUMULATE WMEM[{w()}], AMEM[{a()}], k={kk}")
      elif choice == 5:
        flags = " ".join(x for x in [rng.choice(["", f"BIAS={r()}"]), rng.choice(["", "RELU"]), rng.choice(["", "REDUCE_SUM", "REDUCE_SUMSQ"])]
                         if x)
        stat = "REDUCE" in flags
        body.append(f"MXU_EPILOGUE {r()} = GEMM(WMEM[{w()}], AMEM[{a()}], tiles={t}) {flags} "
                    f"{rng.choice(['DST_VREG', f'DST_VMEM[{a()}]'])}".replace("  ", " "))
      elif choice == 6:
        body.append(f"MXU_VPU_EPILOGUE {r()} = GEMM(WMEM[{w()}], AMEM[{a()}], tiles={t}) SRC2={r()} "
                    f"OP={rng.choice(['ADD', 'SUB', 'MUL', 'MAX', 'MIN', 'IPAIR_ROTATE', 'XOR'])} {rng.choice(['DST_VREG', f'DST_VMEM[{a()}]'])}")
      else:
        scale_mul = rng.randint(-2**31, 2**31 - 1) if rng.random() < 0.3 else rng.randint(-300, 300)
        body.append(f"SET_REQUANT_CONFIG scale_mul={scale_mul} scale_shift={rng.randrange(32)}")
        body.append(f"DISPATCH_MXU_REQUANT WMEM[{w()}] AMEM[{a()}] tiles={t} ASRAM[{a()}]")
      dispatched, stat_ok = True, stat
    elif k < 0.70 and dispatched:
      body.append(rng.choice(["WAIT_MXU", f"LOAD_MXU_RESULT {r()}", f"LOAD_MXU_MATRIX_ROW {r()}, row={rng.randrange(4)}", "MXU_CLEAR"]
                             + ([f"LOAD_EPILOGUE_STAT {r()}"] if stat_ok else [])))
    elif k < 0.78:
      p = rng.randrange(8)
      body.append(rng.choice([f"PSUM_WRITE PSUM[{p}], {r()}", f"PSUM_ACCUMULATE PSUM[{p}], {r()}", f"PSUM_READ {r()}, PSUM[{p}]",
        f"PSUM_READ_ROW {r()}, PSUM[{p}], row={rng.randrange(4)}", f"PSUM_CLEAR PSUM[{p}]",
        f"PSUM_ACCUMULATE_ROW PSUM[{p}], row={rng.randrange(4)}, {r()}", "PSUM_CLEAR_ALL"]))
    elif k < 0.84:
      body.append(rng.choice([f"VZERO {r()}", f"VFILL {r()}, imm={rng.randint(-128, 127)}", f"VMOV {r()}, {r()}", f"VNEG {r()}, {r()}",
                              f"VABS {r()}, {r()}", f"READ_CYCLE {r()}", f"LOAD_LOOP_DEPTH {r()}", f"LOAD_VPU_RESULT {r()}"]))
    elif k < 0.90:
      body += [rng.choice([f"SET_PRED_IF_ZERO {r()}", f"SET_PRED_NE_ZERO {r()}"]), rng.choice(["SKIP_IF_PRED", "SKIP_IF_NOT_PRED"]),
               f"VFILL {r()}, imm={rng.randint(-128, 127)}"]
    elif k < 0.95 and loop_depth < 3:
      body.append(f"LOOP_BEGIN count={rng.randint(1, 3)}"); loop_depth += 1
    elif loop_depth > 0:
      body.append("LOOP_END"); loop_depth -= 1
  body += ["LOOP_END"] * loop_depth
  if dispatched and rng.random() < 0.5: body.append("WAIT_MXU")
  # PSUM buckets are uninitialised at reset: clear them first so every read is defined.
  body = ["PSUM_CLEAR_ALL"] + body + [f"STORE VMEM[{16 + i}], v{i}" for i in range(16)] + ["HALT"]
  outs = [f"OUTPUT_VMEM VMEM[{i}]" for i in range(31)]
  if dispatched and rng.random() < 0.5: outs.append("OUTPUT_MXU")
  return "\n".join(lines + body + outs + ["END"]) + "\n"

if __name__ == "__main__":
  import sys
  print(program(int(sys.argv[1]) if len(sys.argv) > 1 else 0), end="")
