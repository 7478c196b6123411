"""tinytpu: a cycle-accurate TinyTPU TensorCore model, its TASM toolchain, and the TINYTPU tinygrad device.

The package's face: it hands on the names users reach for, defined in its modules (the model on its own in
tinytpu.model, the device and its counters in tinytpu.device). Importing the device registers it with tinygrad."""
from tinytpu._core import SimError
from tinytpu.device import counters, reset_counters
from tinytpu.model import DEFAULT_MAX_CYCLES, Config, RunResult, assemble, disassemble, run_bundle, run_tasm
from tinytpu.renderer import UnsupportedDType

__version__ = "0.1.0"  # the package's version: pyproject.toml reads it from here

__all__ = ["DEFAULT_MAX_CYCLES", "Config", "RunResult", "SimError", "UnsupportedDType", "__version__", "assemble",
           "counters", "disassemble", "reset_counters", "run_bundle", "run_tasm"]
