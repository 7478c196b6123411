"""The command line as a new user meets it: every bad file or argument is one line on stderr naming it, a
non-zero exit and no traceback; --version; the seed programs by name."""
import json, pathlib, subprocess, sys
import pytest
import tinytpu

ROOT = pathlib.Path(__file__).resolve().parent.parent

def cli(*args, stdin=None):
  return subprocess.run([sys.executable, "-m", "tinytpu", *args], capture_output=True, input=stdin)

def one_error_line(p: subprocess.CompletedProcess, status: int, *says: str) -> str:
  err = p.stderr.decode()
  assert p.returncode == status and p.stdout == b"" and "Traceback" not in err and err.count("\n") == 1, err
  for s in says: assert s in err, err
  return err

@pytest.mark.parametrize("cmd", ["run", "asm", "disasm"])
def test_bad_files(tmp_path, cmd):
  binary, empty, blank = tmp_path / "prog.bin", tmp_path / "empty.tasm", tmp_path / "blank.tasm"
  binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
  empty.write_bytes(b"")
  blank.write_text("\n  \n")
  one_error_line(cli(cmd, str(binary)), 1, f"{binary}: not a text file (byte 0x89 at offset 0 is not UTF-8)")
  one_error_line(cli(cmd, str(empty)), 1, f"{empty}: empty")
  one_error_line(cli(cmd, str(blank)), 1, f"{blank}: empty")
  one_error_line(cli(cmd, str(tmp_path / "nope.tasm")), 1, "nope.tasm: no such file (nor a seed program: add_16,")
  one_error_line(cli(cmd, str(tmp_path)), 1, f"{tmp_path}: is a directory")
  one_error_line(cli(cmd, "-", stdin=b""), 1, "stdin: empty")

def test_errors_in_a_program_name_the_file(tmp_path):
  bad = tmp_path / "bad.tasm"
  bad.write_text("LOAD v16, VMEM[0]\nHALT\nEND\n")
  one_error_line(cli("run", str(bad)), 1, f"tinytpu: error: {bad}: line 1: vreg v16 out of range")
  hang = tmp_path / "hang.tasm"
  hang.write_text("WAIT_MXU\nHALT\nEND\n")
  one_error_line(cli("run", str(hang)), 1, f"{hang}: pc 0 (WAIT_MXU)")
  one_error_line(cli("run", "--max-cycles", "40", "add_256"), 1, "add_256: ", "no HALT after 40 cycles")

@pytest.mark.parametrize("args, says", [
  (["run", "--max-cycles", "-1", "add_16"], "argument --max-cycles: '-1' is not a whole number >= 1"),
  (["run", "--max-cycles", "abc", "add_16"], "argument --max-cycles: 'abc' is not a whole number >= 1"),
  (["run", "--max-cycles", "0", "add_16"], "argument --max-cycles: '0'"),
  (["run", "--max-cycles", str(2**64), "add_16"], "and <= 18,446,744,073,709,551,615"),
  (["run", "--trace-max-events", "1.5", "--trace", "t.json", "add_16"], "argument --trace-max-events: '1.5'"),
  (["run", "--trace-cycles", "50:10", "--trace", "t.json", "add_16"], "argument --trace-cycles: '50:10' is not a cycle window"),
  (["profile", "--top", "0", "s.py"], "argument --top: '0' is not a whole number >= 1"),
  (["profile", "--trace-kernels", "[", "s.py"], "argument --trace-kernels: '[' is not a regular expression"),
  (["frob"], "invalid choice: 'frob'"),
])
def test_bad_arguments(args, says):
  one_error_line(cli(*args), 2, says)

def test_profile_of_a_missing_script(tmp_path):
  one_error_line(cli("profile", str(tmp_path / "nope.py")), 1, "nope.py: no such file")

def test_version():
  from importlib import metadata
  assert tinytpu.__version__ == metadata.version("tinytpu")  # pyproject.toml reads it from the package
  assert f'__version__ = "{tinytpu.__version__}"' in (ROOT / "python" / "tinytpu" / "__init__.py").read_text()
  p = cli("--version")
  assert p.returncode == 0 and p.stdout.decode() == f"tinytpu {tinytpu.__version__} (tinygrad 0.14.0)\n"
  # `tinytpu --version`: the installed console script is the same main()
  assert [e.value for e in metadata.entry_points(group="console_scripts", name="tinytpu")] == ["tinytpu.__main__:main"]

def test_seed_programs_by_name():
  names = cli("seeds").stdout.decode().split()
  assert names == sorted(p.stem for p in (ROOT / "kernels" / "seed").glob("*.tasm"))
  by_name, by_path = cli("run", "gemm_4x4x4"), cli("run", str(ROOT / "kernels" / "seed" / "gemm_4x4x4.tasm"))
  assert by_name.returncode == 0 and by_name.stdout == by_path.stdout and b"cycles 121" in by_name.stdout
  assert cli("run", "add_16.tasm").stdout.decode().splitlines()[-2] == "cycles 33"

def test_opcodes_list_the_opcode_table():
  # every opcode once, in order, each column of the table; a few rows as hardware.md §2.7 gives them
  rows = json.loads(cli("opcodes", "--json").stdout)
  assert [r["opcode"] for r in rows] == list(range(len(rows))) and len(rows) == 51  # the reference's 47, 4 of the MXU variants
  assert rows == tinytpu._core.sxu_ops()
  by_name = {r["name"]: r for r in rows}
  assert by_name["HALT"]["cycles"] == 1 and not by_name["HALT"]["waits_for_mxu"] and by_name["HALT"]["mxu_start"] is None
  assert by_name["WAIT_MXU"]["waits_for_mxu"] and by_name["WAIT_MXU"]["mxu_start"] is None
  assert by_name["DISPATCH_MXU_OS"]["cycles"] == 2 and by_name["DISPATCH_MXU_OS"]["waits_for_mxu"]
  assert by_name["DISPATCH_MXU_OS"]["mxu_start"] is not None
  assert by_name["DISPATCH_MXU_OS_FLOAT"]["mxu_start"] is not None and by_name["LOAD_MXU_BANK"]["mxu_start"] is None
  table = cli("opcodes").stdout.decode().splitlines()
  assert table[0].split()[:2] == ["op", "name"] and all(c in table[0] for c in rows[0] if c not in ("opcode", "name", "tasm"))
  assert len(table) == 1 + len(rows) and table[8].split()[:2] == ["7", "HALT"]
