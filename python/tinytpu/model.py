"""The TensorCore model on its own: TASM and numeric bundles run on a core, as the reference testbench runs them."""
from __future__ import annotations
from dataclasses import dataclass, field
from types import ModuleType
from tinytpu import _core, configs

DEFAULT_MAX_CYCLES = 50000  # the reference testbench's timeout
Config = _core.TensorCoreConfig  # the core's sizes; the default is the reference TensorCore#(4,4,32)

@dataclass
class RunResult:
  cycles: int                  # the testbench's `cycles N` = 2R + P + M + 4
  sxu_cycles: int              # P: SXU cycles through the FETCH of HALT
  vmem_results: list[list[int]]
  mxu_result: list[int] | None
  asram_results: list[list[int]]
  unit_busy: dict[str, int] = field(default_factory=dict)
  output: str = ""             # the testbench's stdout

_BUSY = [f["unit"] for f in _core.counter_fields() if f["struct"] == "busy"]  # a run's UnitBusy fields

def _result(r) -> RunResult:
  return RunResult(r.cycles, r.sxu_cycles, [list(t) for t in r.vmem_results],
                   list(r.mxu_result) if r.mxu_result is not None else None, [list(a) for a in r.asram_results],
                   {unit: getattr(r.busy, unit) for unit in _BUSY}, r.output())

def poll() -> None:
  """The model calls it during a long run (looked up at each run): Python runs, so a pending Ctrl-C raises here."""

def _core_of(config) -> ModuleType:  # the extension module that runs a config: the reference's by default
  return configs.core_of(config) if config is not None else _core

def run_bundle(text: str, max_cycles: int = DEFAULT_MAX_CYCLES, trace: _core.TraceLog | None = None,
               config: Config | None = None) -> RunResult:
  """Run a TASM program or numeric bundle (detected) on the reference core, or on `config`. ValueError for bad
  input, SimError for a hang. With a trace (`_core.TraceLog()`), the units report their events to it (see
  tinytpu.trace, tinytpu.events). A config of another geometry (tinytpu.configs) runs on that geometry's core."""
  core = _core_of(config)
  return _result(core.run(core.parse_bundle(text), config or Config(), max_cycles, trace, poll))

def run_tasm(text: str, max_cycles: int = DEFAULT_MAX_CYCLES, trace: _core.TraceLog | None = None,
             config: Config | None = None) -> RunResult:
  """Assemble TASM and run it on the model."""
  core = _core_of(config)
  return _result(core.run(core.assemble(text), config or Config(), max_cycles, trace, poll))

def assemble(text: str) -> str:
  """TASM -> numeric bundle text."""
  return _core.to_wire(_core.assemble(text))

def disassemble(text: str) -> str:
  """Numeric bundle (or TASM) -> canonical TASM."""
  return _core.disassemble(_core.parse_bundle(text))
