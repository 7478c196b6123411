"""The TensorCore variants (named in the C++ core, sim/config.cc) and how a user picks one: TINYTPU_CONFIG=NAME,
or NAME,field=value,... to change fields of it (`python -m tinytpu configs` lists them)."""
from __future__ import annotations
import os
from tinytpu import _core

ENV = "TINYTPU_CONFIG"

def from_spec(spec: str | None = None) -> _core.TensorCoreConfig:
  """The configuration a spec names; by default the one TINYTPU_CONFIG names, else the reference. ValueError
  naming an unknown configuration or field."""
  text = os.getenv(ENV, "reference") if spec is None else spec
  try: return _core.config_from_spec(text.strip())
  except ValueError as e: raise ValueError(f"{ENV}={text}: {e}" if spec is None else str(e)) from None

def fields(config: _core.TensorCoreConfig) -> dict[str, int]:
  """Every field a spec can set, by name (the C++ core's describe())."""
  return {k: int(v) for k, v in (item.split("=") for item in repr(config).split())}

def cost(config: _core.TensorCoreConfig) -> dict:
  c = _core.cost_proxy(config)
  return {"pes": c.pes, "sram_bytes": c.sram_bytes, "ports": c.ports, "area": c.area}

def describe(name: str, change: str, config: _core.TensorCoreConfig) -> dict:
  """One configuration as `configs --json` lists it: its fields, its change and its cost proxy."""
  return {"name": name, "change": change, **cost(config), "config": fields(config)}

def named() -> list[dict]:
  return [describe(n.name, n.change, n.config) for n in _core.named_configs()]
