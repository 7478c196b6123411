"""The Python surface of the TensorCore model: run_tasm, the CLI, and errors."""
import json, pathlib, re, subprocess, sys
import pytest
import tinytpu

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "kernels" / "seed"
# The reference README's cycle table (hardware.md §7).
SEED_CYCLES = {"add_16": 33, "add_256": 423, "relu_64": 83, "reshape_64": 63, "sum_16_scalar": 26,
               "sum_256_scalar": 281, "rowsum_8x8": 79, "colsum_8x8": 79, "gemm_1x4x4": 37, "gemm_4x4x4": 121,
               "gemm_4x8x4": 227}

ADD = (KERNELS / "add_16.tasm").read_text()  # arange(16) + arange(16)+1

def cli(*args, stdin=None):
  return subprocess.run([sys.executable, "-m", "tinytpu", *args], capture_output=True, text=True, input=stdin)

def test_run_tasm_result():
  r = tinytpu.run_tasm(ADD)
  assert r.cycles == 33 and r.sxu_cycles == 12
  assert r.vmem_results == [list(range(1, 32, 2))]
  assert r.mxu_result is None and r.asram_results == []
  assert r.unit_busy["sxu"] == 12 and r.unit_busy["vpu"] == 1
  assert r.output.splitlines() == ["vmem_result " + " ".join(map(str, range(1, 32, 2))), "cycles 33", "status ok"]

@pytest.mark.parametrize("name", sorted(SEED_CYCLES))
def test_seed_kernel_cycles(name):
  assert tinytpu.run_tasm((KERNELS / f"{name}.tasm").read_text()).cycles == SEED_CYCLES[name]

def test_mxu_and_asram_results():
  r = tinytpu.run_tasm("""WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1
AMEM[0] = 3 7 -2 5
SET_REQUANT_CONFIG scale_mul=1 scale_shift=1
DISPATCH_MXU_REQUANT WMEM[0] AMEM[0] tiles=1 ASRAM[4]
WAIT_MXU
HALT
OUTPUT_MXU
OUTPUT_ASRAM ASRAM[4]
END""")
  assert r.mxu_result == [3, 7, -2, 5]
  assert r.asram_results == [[2, 4, -1, 3]]  # (x + 1) >> 1

def test_cli_run_tasm_and_wire(tmp_path):
  src = tmp_path / "add.tasm"
  src.write_text(ADD)
  out = cli("run", str(src))
  assert out.returncode == 0
  assert out.stdout.splitlines()[-2:] == ["cycles 33", "status ok"]
  wire = cli("asm", str(src)).stdout
  assert wire.splitlines()[2] == "2 0 0 0 0 0 0 0 0 0"
  (tmp_path / "add.bundle").write_text(wire)
  as_json = json.loads(cli("run", "--json", str(tmp_path / "add.bundle")).stdout)
  assert as_json == {"cycles": 33, "sxu_cycles": 12, "vmem_results": [list(range(1, 32, 2))], "mxu_result": None,
                     "asram_results": []}
  assert cli("disasm", "-", stdin=wire).stdout == cli("disasm", str(src)).stdout
  assert tinytpu.assemble(tinytpu.disassemble(wire)) == wire

def test_bad_input_is_value_error_and_cli_exit_1(tmp_path):
  with pytest.raises(ValueError, match="line 1: vreg v16 out of range"):
    tinytpu.run_tasm("LOAD v16, VMEM[0]\nHALT\nEND")
  with pytest.raises(ValueError, match="unknown mnemonic"):
    tinytpu.assemble("FROB\nEND")
  bad = tmp_path / "bad.tasm"
  bad.write_text("HALT\n")
  out = cli("run", str(bad))
  assert out.returncode == 1 and "no END" in out.stderr and out.stdout == ""

def test_hang_is_sim_error():
  with pytest.raises(tinytpu.SimError, match=r"pc 0 \(WAIT_MXU\).*deadlocks"):
    tinytpu.run_tasm("WAIT_MXU\nHALT\nEND")
  with pytest.raises(tinytpu.SimError, match="50000 cycles"):
    tinytpu.run_tasm("LOOP_BEGIN count=255\nLOOP_BEGIN count=255\nVZERO v1\nLOOP_END\nLOOP_END\nHALT\nEND")
  assert tinytpu.run_tasm("LOOP_BEGIN count=255\nLOOP_BEGIN count=255\nVZERO v1\nLOOP_END\nLOOP_END\nHALT\nEND",
                          max_cycles=10**6).sxu_cycles == 261123

def test_demo_runs():
  out = cli("demo")
  assert out.returncode == 0 and "cycles 33" in out.stdout
  # the tinygrad matmul line says it ran on the MXU only from the trace's MXU work, which must be there
  lines = out.stdout.splitlines()
  row = lines.index(next(l for l in lines if l.startswith("matmul      8x8 @ 8x8 int32")))
  m = re.search(r"on the MXU: (\d+) dispatches, (\d+) busy cycles", lines[row + 1])
  assert m and int(m[1]) > 0 and int(m[2]) > 0, lines[row + 1]
