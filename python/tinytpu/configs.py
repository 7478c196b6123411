"""The TensorCore variants (named in the C++ core, sim/config.cc) and how a user picks one: TINYTPU_CONFIG=NAME,
or NAME,field=value,... to change fields of it (`python -m tinytpu configs` lists them).

The tile geometry is fixed when a core is built, so each geometry is its own extension module: `_core` the
reference's 4x4, `_core8` and `_core16` the same design at 8x8 and 16x16 (their configurations are named "8x8",
"8x8-all", "16x16-all", ...). A configuration object belongs to its module, and a device runs on the module its
configuration came from."""
from __future__ import annotations
import os, sys
from types import ModuleType
from tinytpu import _core, _core8, _core16

ENV = "TINYTPU_CONFIG"
CORES: tuple[ModuleType, ...] = (_core, _core8, _core16)

def _module_naming(name: str) -> ModuleType:
  for core in CORES:
    if any(n.name == name for n in core.named_configs()): return core
  return _core  # an unknown name: the reference module's error lists every known one (see from_spec)

def _at_rows(name: str, rows: int) -> str:
  """The configuration `name` names, at another geometry: reference -> 8x8, all -> 8x8-all (and back)."""
  geometries = sorted(core.TensorCoreConfig.ROWS for core in CORES)
  if rows not in geometries: raise ValueError(f"rows={rows}: no such tile geometry (built: {', '.join(map(str, geometries))})")
  variant = name
  for g in geometries[1:]:  # strip a wider geometry's prefix: 8x8 -> reference, 8x8-all -> all
    if name == f"{g}x{g}": variant = "reference"
    elif name.startswith(f"{g}x{g}-"): variant = name.removeprefix(f"{g}x{g}-")
  if rows == geometries[0]: return variant
  return f"{rows}x{rows}" if variant == "reference" else f"{rows}x{rows}-{variant}"

def from_spec(spec: str | None = None):
  """The configuration a spec names; by default the one TINYTPU_CONFIG names, else the reference. `rows=R` moves
  the named configuration to the R x R geometry. ValueError naming an unknown configuration or field."""
  text = (os.getenv(ENV, "reference") if spec is None else spec).strip()
  try:
    name, *items = [t.strip() for t in text.split(",")]
    for item in [i for i in items if i.partition("=")[0].strip() == "rows"]:
      value = item.partition("=")[2].strip()
      if not value.lstrip("-").isdigit(): raise ValueError(f"{item}: not field=integer")
      name = _at_rows(name, int(value))
      items.remove(item)
    return _module_naming(name).config_from_spec(",".join([name, *items]))
  except ValueError as e:
    msg = str(e)
    if msg.startswith("no TensorCore configuration named"):
      msg = msg.split(" (known:")[0] + f" (known: {', '.join(n['name'] for n in named())})"
    raise ValueError(f"{ENV}={text}: {msg}" if spec is None else msg) from None

def split_specs(text: str) -> list[str]:
  """A comma-separated list of configurations as specs: each `field=value` item belongs to the name before it
  ("chip4,hbm_shared=1,hbm" is chip4 with shared HBM, then hbm)."""
  specs: list[str] = []
  for item in [t.strip() for t in text.split(",") if t.strip()]:
    if "=" in item and specs: specs[-1] += f",{item}"
    else: specs.append(item)
  return specs

def core_of(config) -> ModuleType:
  """The extension module a configuration belongs to: the core its kernels compile for and run on."""
  return sys.modules[type(config).__module__]

def fields(config) -> dict[str, int]:
  """Every field a spec can set, by name (the C++ core's config_fields()), and the geometry's rows."""
  return {"rows": type(config).ROWS, **{f["name"]: int(getattr(config, f["name"])) for f in _core.config_fields()}}

def key(config) -> tuple:
  """A configuration's identity, hashable: its module and its fields' values."""
  return (core_of(config).__name__, *sorted(fields(config).items()))

def cost(config) -> dict:
  """Its cost proxy (the C++ core's cost_proxy): PEs, one PE's area in int8 PEs, the MXU's datatypes ("int8",
  "int8+bf16", "int8+f32") and whether it is pipelined, SRAM bytes, ports and area."""
  c = core_of(config).cost_proxy(config)
  return {"pes": c.pes, "pe_area": c.pe_area, "mxu": {"dtype": c.mxu, "pipelined": bool(config.mxu_pipelined)},
          "sram_bytes": c.sram_bytes, "ports": c.ports, "area": c.area}

def describe(name: str, change: str, config) -> dict:
  """One configuration as `configs --json` lists it: its fields, its change and its cost proxy."""
  return {"name": name, "change": change, **cost(config), "config": fields(config)}

def named() -> list[dict]:
  return [describe(n.name, n.change, n.config) for core in CORES for n in core.named_configs()]
