# python -m tinytpu llm (tinytpu.llm): a GPT-2-shaped model's prefill and greedy decode on TINYTPU configurations, each
# row checked against CPU running the same model and weights; on the tiny preset.
import json, os, sys
import numpy as np
import pytest
from tinytpu import llm
from tinytpu.__main__ import main

ROW_KEYS = {"config", "cores", "dtype", "agreement", "phase", "tokens", "cycles", "time_s", "tokens_per_s", "energy_j",
            "j_per_token", "hbm_bytes_per_token", "mxu_busy", "vpu_busy", "noc_bytes", "host_s", "host_s_per_step", "checked",
            "logits_max_err"}

def test_the_cli_prefills_and_decodes_on_each_configuration_checked_against_cpu(capsys):
  assert main(["llm", "--model", "gpt2-tiny", "--configs", "16x16-all,hbm", "--prefill", "5", "--decode", "4", "--json"]) == 0
  rows = json.loads(capsys.readouterr().out)
  assert [(r["config"], r["phase"], r["tokens"]) for r in rows] == \
    [("16x16-all", "prefill", 5), ("16x16-all", "decode", 4), ("hbm", "prefill", 5), ("hbm", "decode", 4)]
  for r in rows:
    assert set(r) == ROW_KEYS and r["checked"] and r["cycles"] > 0 and r["energy_j"] > 0, r
    assert r["time_s"] == pytest.approx(r["tokens"] / r["tokens_per_s"])
    assert len(r["host_s_per_step"]) == (4 if r["phase"] == "decode" else 0)
  assert rows[2]["hbm_bytes_per_token"] > 0 and rows[0]["hbm_bytes_per_token"] == 0  # only `hbm` has HBM

def test_the_tokens_are_cpus_and_the_weights_come_from_a_seed_or_a_file(tmp_path):
  """The same tokens as CPU on TINYTPU (greedy decode through TinyJit with the position a Variable); a safetensors
  file of the seeded weights gives what the seed gives, another seed other tokens."""
  from tinygrad import Tensor
  from tinygrad.nn.state import safe_save
  s = llm.MODELS["gpt2-tiny"]
  w = llm.weights(s, 3)
  cpu = llm.generate(s, w, "CPU", [1, 2, 3], 6)
  tinytpu = llm.generate(s, w, "TINYTPU", [1, 2, 3], 6)
  assert [p.tokens for p in tinytpu] == [p.tokens for p in cpu]
  assert len(cpu[1].tokens) == 6 and np.allclose(tinytpu[1].logits, cpu[1].logits, rtol=0, atol=1e-5)
  path = str(tmp_path / "w.safetensors")
  safe_save({k: Tensor(v) for k, v in w.items()}, path)
  assert all(np.array_equal(v, w[k]) for k, v in llm.load(path, s).items())
  assert llm.weights(s, 4)["wte.weight"].tobytes() != w["wte.weight"].tobytes()

def test_a_weights_file_that_does_not_fit_the_model_is_refused(tmp_path):
  from tinygrad import Tensor
  from tinygrad.nn.state import safe_save
  s = llm.MODELS["gpt2-tiny"]
  w = llm.weights(s, 0)
  path = str(tmp_path / "w.safetensors")
  safe_save({k: Tensor(v) for k, v in w.items() if k != "ln_f.weight"}, path)
  with pytest.raises(ValueError, match="no weights for ln_f.weight"):
    llm.load(path, s)
  safe_save({**{k: Tensor(v) for k, v in w.items()}, "wte.weight": Tensor(np.zeros((3, 3), np.float32))}, path)
  with pytest.raises(ValueError, match=r"wte.weight is \(3, 3\), the model's is \(512, 64\)"):
    llm.load(path, s)

@pytest.mark.parametrize("args, message", [
  (["--model", "gpt3"], "--model: no model 'gpt3'"),
  (["--prefill", "60", "--decode", "10"], "at most 64 in all"),
  (["--configs", "hbm,nope"], "nope"),
  (["--configs", "chip4", "--cores", "5"], "--cores 5: chip4 has 4 cores"),
  (["--configs", "chip4", "--cores", "3"], "3 cores do not divide the model's 4 attention heads"),
])
def test_bad_arguments_are_one_line_errors(args, message, capsys):
  assert main(["llm", "--model", "gpt2-tiny", *args]) == 1
  err = capsys.readouterr().err
  assert message in err and err.count("\n") == 1, err

def test_a_chip_runs_the_model_tensor_parallel_with_the_tokens_of_one_core():
  """On chip4 the heads, the MLP's hidden units and the vocabulary are split over the four cores (shard), the partial
  sums added across them over the NoC: the tokens are CPU's (so one core's), in fewer cycles than one `hbm` core; the
  chip's cores get their configurations back afterwards."""
  from tinygrad import Device
  before = [Device[f"TINYTPU:{i}"].config for i in range(4)]
  rows = {(r["config"], r["phase"]): r for r in llm.run("gpt2-tiny", ["hbm", "chip4"], 6, 3)}
  assert all(r["checked"] for r in rows.values()), rows
  for phase in ("prefill", "decode"):
    assert rows["chip4", phase]["noc_bytes"] > 0 and rows["hbm", phase]["noc_bytes"] == 0
    assert rows["chip4", phase]["cycles"] < rows["hbm", phase]["cycles"]
  assert [Device[f"TINYTPU:{i}"].config for i in range(4)] == before
  two = llm.run("gpt2-tiny", ["chip4"], 6, 3, cores=2)
  assert [r["cores"] for r in two] == [2, 2] and all(r["checked"] for r in two)
  assert rows["chip4", "decode"]["cycles"] < two[1]["cycles"] < rows["hbm", "decode"]["cycles"]

def test_a_vocabulary_the_cores_do_not_divide_is_padded_and_masked():
  """510 rows over 4 cores: two zero rows pad the embedding, their logits -inf, so the tokens are CPU's even where
  every real logit is negative (the head's weights negated makes a zero logit win otherwise)."""
  s = llm.Shape(layers=1, dim=32, heads=4, vocab=510, context=16)
  w = llm.weights(s, 5)
  w["ln_f.bias"] = np.full_like(w["ln_f.bias"], 0.5)
  w["wte.weight"] = -np.abs(w["wte.weight"])  # every logit negative
  cpu = llm.generate(s, w, "CPU", [1, 2], 3)
  with llm._devices_for("chip4") as cores:
    chip = llm.generate(s, w, cores, [1, 2], 3)
  assert [p.tokens for p in chip] == [p.tokens for p in cpu]
  assert chip[1].logits.shape == (510,) and np.all(chip[1].logits < 0)

def test_int8_weights_run_on_the_mxu_checked_against_cpu_running_the_same_quantised_model():
  """--dtype int8: each linear layer and the head take int8 weights per output channel and int8 inputs calibrated on
  the prompt, summed in int32 on the MXU; the tokens are CPU's running the same quantised model, and each row says
  how many agree with float32's."""
  rows = llm.run("gpt2-tiny", ["16x16-all-pipe", "chip4"], 6, 3, dtype="int8")
  assert all(r["checked"] and r["dtype"] == "int8" and 0 <= r["agreement"] <= 1 for r in rows), rows
  assert rows[0]["mxu_busy"] > 0 and rows[2]["mxu_busy"] > 0  # the prefill's products, on one core and on the chip
  with pytest.raises(ValueError, match="--dtype int4: float32 or int8"):
    llm.run("gpt2-tiny", ["hbm"], 2, 1, dtype="int4")

def test_int8_decode_moves_a_fraction_of_float32s_bytes_and_shared_hbm_slows_the_chip():
  """--dtype int8 decodes on the MXU from int8 weights: under 0.3x float32's HBM bytes per token on `hbm`. With its
  cores sharing HBM (hbm_shared), chip4 gives the same tokens in more cycles: each core has a quarter of the channel,
  so a phase takes at least its busiest core's bytes at that quarter (a core's bytes, the chip's over 4 here)."""
  rows = {(r["config"], r["dtype"], r["phase"]): r
          for r in llm.run("gpt2-tiny", ["hbm", "chip4", "chip4,hbm_shared=1"], 6, 3) + llm.run("gpt2-tiny", ["hbm"], 6, 3, dtype="int8")}
  assert all(r["checked"] for r in rows.values()), rows
  int8, f32 = rows["hbm", "int8", "decode"], rows["hbm", "float32", "decode"]
  assert int8["hbm_bytes_per_token"] < 0.3 * f32["hbm_bytes_per_token"] and int8["mxu_busy"] > 0
  for phase in ("prefill", "decode"):
    own, shared = rows["chip4", "float32", phase], rows["chip4,hbm_shared=1", "float32", phase]
    assert shared["hbm_bytes_per_token"] == own["hbm_bytes_per_token"] and shared["cycles"] > own["cycles"]
    assert shared["cycles"] * 16 / 4 >= shared["hbm_bytes_per_token"] * shared["tokens"] / 4
  # on the roofline (bench/llm_roofline.py): the shared decode is bound by HBM, in no fewer cycles than its bandwidth
  # predicts (the chip's bytes over the one shared channel), and the int8 decode has 4x float32's intensity at least
  sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
  import llm_roofline
  placed = [llm_roofline.analyse(r, llm.MODELS["gpt2-tiny"], 6) for r in rows.values()]
  llm_roofline.predict_shared(placed)
  on = {(r["config"], r["dtype"], r["phase"]): r for r in placed}
  decode = on["chip4,hbm_shared=1", "float32", "decode"]
  assert decode["bound"] == "HBM" and decode["measured_over_predicted"] >= 1
  assert decode["macs"] == 3 * (2 * (12 * 64 * 64) + 512 * 64) + 2 * 2 * 64 * (7 + 8 + 9)
  assert on["hbm", "int8", "decode"]["intensity"] > 3 * on["hbm", "float32", "decode"]["intensity"]
