"""Fails when an include or import runs against the layering (docs: the code's layout).

cpp/ is layered, each layer including only itself and the layers below it:

  base      config, tile, errors, fp32, the value functions of the FP reducer and the transcendental unit
  isa       opcode tables, instruction word, TASM, bundles
  sim       the units, the SXU that drives them, the TensorCore that clocks them, the testbench runner
  chip      the chip's units (HBM, NoC, SparseCore) and the chip top that clocks them with TensorCores
  compiler  IR -> plans                    runtime   executes plans (beside the compiler, may use it)
  bindings  the Python module

Inside each folder the files are ranked the same way (FOLDER_RANKS): a file includes files of its own rank or
below, and every file has a rank. python/tinytpu is layered too (PY_LAYERS): a module imports modules of its own
layer or below, never the package's face (__init__, which only hands names on). Neither has a circle: two files of one
rank may use each other (a .cc the other's header), but no header includes itself again through others.

Usage: python tools/check_layers.py [repo-dir]   (exit 1 and one line per offence)
"""
import ast
import re
import sys
from pathlib import Path

LAYERS = ["base", "isa", "sim", "chip", "compiler", "runtime", "bindings"]
# Each folder's ranks, lowest first: (what the rank holds, the file stems in it).
FOLDER_RANKS = {
  "base": [("values", {"arithmetic", "config_fields", "errors", "fp32"}), ("the configuration", {"config"}), ("tiles", {"tile"}),
           ("value functions on tiles", {"fp_reducer", "transc"})],
  "isa": [("the instruction word and opcode tables", {"instr", "sxu_ops", "vpu_ops"}),
          ("bundles and TASM", {"bundle", "tasm"}), ("instruction builders", {"instr_builders"})],
  "sim": [("units and what they count", {"activity", "batch", "controller", "counters", "dma_engine", "loader",
                                         "memories", "systolic_array", "timing", "trace", "trace_format", "vpu",
                                         "xlu"}),
          ("the datapath", {"datapath"}), ("the SXU", {"sxu", "sxu_exec"}), ("the TensorCore", {"tensorcore"}),
          ("the testbench runner", {"runner"})],
  "chip": [("units", {"chip_noc", "chip_timeline", "hbm_model", "sparse_core"}), ("the chip top", {"tinytpu_chip"})],
  "compiler": [("the kernel IR, its op table and the log", {"dtypes", "ir", "lowerings", "op_table", "log",
                                                            "kernel_buffers"}),
               ("the tile IR", {"tile_program", "tracer", "chunking", "chunk_period", "element_memo", "divide"}),
               ("the cost estimate", {"cost"}),
               ("passes over tiles", {"value_ranges", "clamps", "lane_pack", "mxu_dot", "mxu_dot_program", "replay"}),
               ("the lowering's parts", {"launch", "contents", "vmem_slots", "constant_tiles", "node_facts", "schedule",
                                         "vreg_alloc", "mxu_fills", "launch_cutter"}),
               ("plans", {"plan", "lower", "independent", "emitter", "float_sequences"}),
               ("the chunk layout", {"choose_layout"}), ("compile", {"compile"})],
  "runtime": [("device memory and what a call keeps", {"device_memory", "kernel_stats", "timing_cache", "data_plan"}),
              ("a compiled kernel, its calls and their segments", {"executor", "call", "segment"})],
  "bindings": [("the module", {"module"})],
}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\s+"([a-z_]+)/([a-z0-9_]+)\.(?:h|def)"', re.M)

# python/tinytpu's layers, lowest first: (what the layer holds, its modules).
PY_LAYERS = [
  ("the extension modules and value functions", {"_core", "_core8", "_core16", "sin32", "energy"}),
  ("the model, its configurations and traces", {"configs", "model", "events", "trace", "chip"}),
  ("the tinygrad device and its reports", {"renderer", "device", "profile", "pipeline"}),
  ("programs on the device", {"quant", "compare", "real", "workloads", "explore", "demo", "llm"}),
  ("the command line", {"__main__"}),
  ("the package's face", {"__init__"}),
]

def rank_of(ranks, name):
  return next((i for i, (_, names) in enumerate(ranks) if name in names), None)

def circles(edges: dict[str, set[str]]):
  """Each circle of a directed graph once, as the path that closes it."""
  seen, found = set(), []
  def visit(node, path):
    if node in path: found.append(path[path.index(node):] + [node]); return
    if node in seen: return
    seen.add(node)
    for to in sorted(edges.get(node, ())): visit(to, path + [node])
  for node in sorted(edges): visit(node, [])
  return found

def cpp_offences(root: Path):
  edges: dict[str, set[str]] = {}
  for path in sorted(root.glob("*/*")):
    if path.suffix not in (".h", ".cc", ".def"): continue
    layer, stem = path.parent.name, path.stem
    if layer not in LAYERS: yield f"{path}: in no layer (layers: {', '.join(LAYERS)})"; continue
    ranks = FOLDER_RANKS[layer]
    if rank_of(ranks, stem) is None: yield f"{path}: in no rank of {layer} (tools/check_layers.py FOLDER_RANKS)"; continue
    text = path.read_text()
    for m in INCLUDE.finditer(text):
      to_layer, to_stem = m.groups()
      line = text.count("\n", 0, m.start()) + 1
      if to_layer not in LAYERS:
        yield f"{path}:{line}: includes {to_layer}/{to_stem}, in no layer"
      elif LAYERS.index(to_layer) > LAYERS.index(layer):
        yield f"{path}:{line}: {layer} includes {to_layer}/{to_stem}, a layer above it"
      elif to_layer == layer and to_stem != stem:
        edges.setdefault(f"{layer}/{path.name}", set()).add(f"{layer}/{to_stem}.{m.group(0).rsplit('.', 1)[1][:-1]}")
        to_rank = rank_of(ranks, to_stem)
        if to_rank is not None and to_rank > rank_of(ranks, stem):
          order = " < ".join(name for name, _ in ranks)
          yield f"{path}:{line}: {layer}/{stem} includes {layer}/{to_stem}, above it in {layer} ({order})"
  for c in circles(edges): yield "a circle of includes: " + " -> ".join(c)

def imported(tree: ast.AST, modules: set[str]):
  """(line, module) of each tinytpu module a module imports; module "__init__" for a name of the package's face."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        parts = a.name.split(".")
        if parts[0] == "tinytpu": yield node.lineno, parts[1] if len(parts) > 1 else "__init__"
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tinytpu":
      parts = node.module.split(".")
      if len(parts) > 1: yield node.lineno, parts[1]
      else:
        for a in node.names: yield node.lineno, a.name if a.name in modules else "__init__"

def py_offences(package: Path):
  modules = {p.stem for p in package.glob("*.py")} | set().union(*(names for _, names in PY_LAYERS))
  edges: dict[str, set[str]] = {}
  for path in sorted(package.glob("*.py")):
    me = rank_of(PY_LAYERS, path.stem)
    if me is None: yield f"{path}: in no layer of the package (tools/check_layers.py PY_LAYERS)"; continue
    for line, module in imported(ast.parse(path.read_text()), modules):
      if module == path.stem: continue
      edges.setdefault(path.stem, set()).add(module)
      to = rank_of(PY_LAYERS, module)
      if module == "__init__":
        yield f"{path}:{line}: imports through the package's face; import the module that defines the name"
      elif to is None: yield f"{path}:{line}: imports tinytpu.{module}, in no layer"
      elif to > me:
        yield f"{path}:{line}: {path.stem} imports {module}, a layer above it ({PY_LAYERS[to][0]})"
  for c in circles(edges): yield "a circle of imports: " + " -> ".join(c)

if __name__ == "__main__":
  repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
  bad = list(cpp_offences(repo / "cpp")) + list(py_offences(repo / "python" / "tinytpu"))
  print("\n".join(bad) if bad else "layers: every include in cpp/ and import in python/tinytpu runs downwards, no circle")
  sys.exit(1 if bad else 0)
