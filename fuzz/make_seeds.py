#!/usr/bin/env python3
"""Regenerates the committed seeds and dictionaries of the fuzzers (needs the installed tinytpu and tinygrad):
  fuzz/corpus/ir/*.ir      the text IR of the kernels a few real tinygrad programs compile to
  fuzz/corpus/tasm/*.tasm  the disassembly of reference bundles that together use every opcode they use
  fuzz/tasm.dict, ir.dict  the words of the TASM templates / IR ops and dtypes, for libFuzzer's -dict
Regression inputs (fuzz/corpus/*/regress_*) are written by hand and kept."""
import pathlib, re
import numpy as np

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent

def programs():
  from tinygrad import Tensor, dtypes
  r = np.random.default_rng(0)
  a = Tensor(r.integers(-50, 50, (5, 7)).astype(np.int32), device="TINYTPU")
  f = Tensor(r.standard_normal((3, 5)).astype(np.float32), device="TINYTPU")
  i8 = Tensor(r.integers(-8, 8, (4, 6)).astype(np.int8), device="TINYTPU")
  yield "add", a + 1
  yield "sum", a.sum(axis=1)
  yield "max", a.max()
  yield "matmul_i8", i8.cast(dtypes.int32) @ i8.cast(dtypes.int32).T
  yield "matmul_f32", f @ f.T
  yield "float_math", (f.exp() + f.abs().sqrt() + f.sin()) / (f * f + 1)
  yield "where_cast", (a > 3).where(a, a.cast(dtypes.uint8).cast(dtypes.int32))
  yield "shift_div", (a.cast(dtypes.uint32) >> 2) + a // 3 + a % 5
  yield "gather", a[Tensor([4, 0, 2], device="TINYTPU")]
  yield "cumsum", a.cumsum(axis=1)
  yield "argmax", f.argmax(axis=1)
  yield "softmax", f.softmax()
  yield "movement", (a * 2).permute(1, 0).pad(((1, 2), (0, 1))).flip(0).reshape(-1)[3:40]
  yield "conv2d", Tensor(r.standard_normal((1, 2, 6, 6)).astype(np.float32), device="TINYTPU").conv2d(
    Tensor(r.standard_normal((3, 2, 3, 3)).astype(np.float32), device="TINYTPU"))

def ir_seeds():
  import tinytpu  # noqa: F401  registers the device
  from tinytpu import device
  seen: dict[bytes, str] = {}
  init = device.TinyTPUProgram.__init__
  def record(self, dev, obj):  # every kernel's IR reaches the device here, wherever it was rendered
    seen.setdefault(bytes(obj.lib), f"{current}_{len(seen)}")
    init(self, dev, obj)
  device.TinyTPUProgram.__init__ = record
  out = FUZZ / "corpus" / "ir"
  out.mkdir(parents=True, exist_ok=True)
  for old in out.glob("[!r]*.ir"): old.unlink()  # regress_* stay
  for current, t in programs(): t.realize()
  for src, name in seen.items(): (out / f"{name}.ir").write_bytes(src)
  print(f"{len(seen)} IR seeds")

def tasm_seeds():
  from tinytpu import _core
  bundles = {p: p.read_text() for p in sorted((ROOT / "kernels" / "reference").glob("*.bundle"))}
  ops = {p: {int(l.split()[1]) for l in t.splitlines() if l.startswith("2 ")} for p, t in bundles.items()}
  chosen, covered = [], set()
  while (best := max(ops, key=lambda p: len(ops[p] - covered))) and ops[best] - covered:
    chosen.append(best)
    covered |= ops[best]
  out = FUZZ / "corpus" / "tasm"
  out.mkdir(parents=True, exist_ok=True)
  for old in out.glob("[!r]*.tasm"): old.unlink()
  for p in chosen: (out / f"{p.stem}.tasm").write_text(_core.disassemble(_core.parse_wire(bundles[p])))
  print(f"{len(chosen)} TASM seeds covering {len(covered)} opcodes")

def dictionaries():
  sxu = (ROOT / "cpp" / "isa" / "sxu_ops.cc").read_text()
  templates = " ".join(re.findall(r'"([^"]*)"', sxu))
  words = set(re.findall(r"[A-Z][A-Z_0-9]+", re.sub(r"\{[^}]*\}", " ", templates)))
  words |= set(re.findall(r'\{\d+, "([A-Z_0-9]+)"', (ROOT / "cpp" / "isa" / "vpu_ops.cc").read_text()))
  words |= {"VMEM[", "WMEM[", "AMEM[", "ASRAM[", "] =", "OUTPUT_MXU", "OUTPUT_VMEM", "OUTPUT_ASRAM", "END", "INSTR",
            "v15", "-128", "2147483647", "-2147483648", "\\x0A", "#"}
  header = "# TASM words for libFuzzer -dict: written by fuzz/make_seeds.py from cpp/isa/{sxu,vpu}_ops.cc\n"
  (FUZZ / "tasm.dict").write_text(header + "".join(f'"{w}"\n' for w in sorted(words)))
  from tinytpu.renderer import DTYPE_CODES
  ir = re.search(r"kOpNames\[\] = \{(.*?)\};", (ROOT / "cpp" / "compiler" / "ir.cc").read_text(), re.S).group(1)
  words = set(re.findall(r'"(\w+)"', ir)) | set(DTYPE_CODES.values())
  words |= {"KERNEL", "fastmath", "GLOBAL", "LOOP", "REDUCE", "REG", "0x1.8p+1", "-inf", "nan", "\\x0A"}
  header = "# IR words for libFuzzer -dict: written by fuzz/make_seeds.py from cpp/compiler/ir.cc and the renderer\n"
  (FUZZ / "ir.dict").write_text(header + "".join(f'"{w}"\n' for w in sorted(words)))

if __name__ == "__main__":
  ir_seeds()
  tasm_seeds()
  dictionaries()
