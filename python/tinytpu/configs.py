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

def describe(name: str, change: str, config: _core.TensorCoreConfig) -> dict:
  """One configuration as `configs --json` lists it: its fields, its change and its cost proxy."""
  cost = _core.cost_proxy(config)
  fields = dict(item.split("=") for item in repr(config).split())
  return {"name": name, "change": change, "pes": cost.pes, "sram_bytes": cost.sram_bytes, "ports": cost.ports,
          "area": cost.area, "config": {k: int(v) for k, v in fields.items()}}

def named() -> list[dict]:
  return [describe(n.name, n.change, n.config) for n in _core.named_configs()]
