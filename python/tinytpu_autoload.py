"""Imported by tinytpu.pth at interpreter start: makes `tinygrad.runtime.ops_tinytpu` resolve to
`tinytpu.device` on first use, so `DEV=TINYTPU python script.py` works without `import tinytpu`.
A top-level module, not part of the tinytpu package: importing a package's submodule runs the package
(and so tinygrad) first, in every Python process. It imports nothing heavy itself."""
import importlib, importlib.abc, importlib.util, sys

class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  def find_spec(self, name, path=None, target=None):
    return importlib.util.spec_from_loader(name, self) if name == "tinygrad.runtime.ops_tinytpu" else None
  def create_module(self, spec): return importlib.import_module("tinytpu.device")  # one module, two names
  def exec_module(self, module): pass

if not any(isinstance(f, _Alias) for f in sys.meta_path): sys.meta_path.append(_Alias())
