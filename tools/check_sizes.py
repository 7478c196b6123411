"""Fails when a room of cpp/ is too large to hold in one's head: a file over MAX_FILE_LINES lines or a function over
MAX_FUNCTION_LINES (lizard's length: its first line to its last). Prints the largest of each either way.

Usage: python tools/check_sizes.py [cpp-dir]   (exit 1 and one line per file or function over its limit)
"""
import sys
from pathlib import Path
import lizard

MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 80

def sizes(root: Path):
  """(lines, path) of each source file, and (length, where, name) of each function in them."""
  files, functions = [], []
  for path in sorted(p for p in root.rglob("*") if p.suffix in (".h", ".cc")):
    files.append((len(path.read_text().splitlines()), path))
    for f in lizard.analyze_file(str(path)).function_list:
      functions.append((f.length, f"{path}:{f.start_line}", f.long_name))
  return sorted(files, reverse=True), sorted(functions, key=lambda f: f[0], reverse=True)

if __name__ == "__main__":
  root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "cpp")
  files, functions = sizes(root)
  over = [f"{path}: {n} lines, over {MAX_FILE_LINES}" for n, path in files if n > MAX_FILE_LINES]
  over += [f"{where}: {name} is {n} lines, over {MAX_FUNCTION_LINES}" for n, where, name in functions
           if n > MAX_FUNCTION_LINES]
  print("\n".join(over) if over else
        f"sizes: {len(files)} files in {root}, the largest {files[0][1].name} ({files[0][0]} lines, limit "
        f"{MAX_FILE_LINES}); {len(functions)} functions, the longest {functions[0][2]} ({functions[0][0]} lines, "
        f"limit {MAX_FUNCTION_LINES})")
  sys.exit(1 if over else 0)
