"""Shared by the test files: the TASM tinygrad's DEBUG=4 prints for an expression run on TINYTPU, and the compiler's
decision log of a script."""
import os
import subprocess
import sys

def tasm_of(expr: str) -> str:
  code = f"import numpy as np, tinytpu; from tinygrad import Tensor, dtypes; print(({expr}).numpy().tolist())"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "DEBUG": "4"})
  assert out.returncode == 0, out.stderr
  return out.stdout

def decision_log_of(code: str) -> tuple[str, str]:
  """A script run in its own process with the decision log at info: its stdout and the log (stderr)."""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "TINYTPU_LOG": "info"})
  assert out.returncode == 0, out.stderr
  return out.stdout, out.stderr
