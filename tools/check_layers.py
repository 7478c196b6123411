"""Fails when a C++ include runs against the layering (docs: the code's layout).

cpp/ is layered, each layer including only itself and the layers below it:

  base      config, tile, errors, fp32, the value functions of the FP reducer and the transcendental unit
  isa       opcode tables, instruction word, TASM, bundles
  sim       the units, the SXU that drives them, the TensorCore that clocks them, the testbench runner
  chip      the chip's units (HBM, NoC, SparseCore) and the chip top that clocks them with TensorCores
  compiler  IR -> plans                    runtime   executes plans (beside the compiler, may use it)
  bindings  the Python module

Within sim: the units (vpu, xlu, controller, systolic_array, memories, trace, timing) < the datapath (the
units the SXU drives) < the SXU (sxu, sxu_exec) < the TensorCore that clocks them < the testbench runner.

Usage: python tools/check_layers.py [cpp-dir]   (exit 1 and one line per offending include)
"""
import re
import sys
from pathlib import Path

LAYERS = ["base", "isa", "sim", "chip", "compiler", "runtime", "bindings"]
# sim's own order: a file may include sim files of its rank or below. Unlisted sim files are units (rank 0).
SIM_RANK = {"datapath": 1, "sxu": 2, "sxu_exec": 2, "tensorcore": 3, "runner": 4}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\s+"([a-z_]+)/([a-z0-9_]+)\.(?:h|def)"', re.M)

def offences(root: Path):
  for path in sorted(root.glob("*/*")):
    if path.suffix not in (".h", ".cc", ".def"): continue
    layer, stem = path.parent.name, path.stem
    if layer not in LAYERS: yield f"{path}: in no layer (layers: {', '.join(LAYERS)})"; continue
    text = path.read_text()
    for m in INCLUDE.finditer(text):
      to_layer, to_stem = m.groups()
      line = text.count("\n", 0, m.start()) + 1
      if to_layer not in LAYERS:
        yield f"{path}:{line}: includes {to_layer}/{to_stem}, in no layer"
      elif LAYERS.index(to_layer) > LAYERS.index(layer):
        yield f"{path}:{line}: {layer} includes {to_layer}/{to_stem}, a layer above it"
      elif layer == to_layer == "sim" and SIM_RANK.get(to_stem, 0) > SIM_RANK.get(stem, 0):
        yield f"{path}:{line}: sim/{stem} includes sim/{to_stem}, above it in sim (units < datapath < sxu < tensorcore < runner)"

if __name__ == "__main__":
  root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "cpp")
  bad = list(offences(root))
  print("\n".join(bad) if bad else f"layers: every include in {root} runs downwards")
  sys.exit(1 if bad else 0)
