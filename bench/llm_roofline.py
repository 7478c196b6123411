"""Roofline of language-model phases: the rows `python -m tinytpu llm --json` prints, each placed by its arithmetic
intensity (the model's multiply-adds per HBM byte moved) against the multiply-adds it achieved per cycle, under its
configuration's roofs: HBM (its bytes a cycle times the intensity), the MXU (rows^2 MACs a cycle a core) and the VPU
(rows^2 lane operations a cycle a core: a float multiply-add is two, so rows^2 / 2 MACs). A chip's roofs are its
cores'; with hbm_shared, HBM's is the chip's channels. Each row also gets what bounds it: the unit busiest for its
share of the cycles (HBM's share: bytes over the cycles' bandwidth), if at work half of them, else the loader and the
SXU (loading records, fetching, waiting); and a row of shared HBM the cycles its bandwidth
predicts: its bytes at each core's share, if the cores split them evenly, or the row without sharing if slower.

  python -m tinytpu llm --model gpt2-small --configs hbm,chip4,chip4,hbm_shared=1 --prefill 32 --decode 8 --json > rows.json
  python -m bench.llm_roofline rows.json --model gpt2-small [--plot docs/llm_roofline.png] [--json]
"""
import argparse
import json
from tinytpu import configs, llm

def macs(s: llm.Shape, phase: str, prefill: int, tokens: int) -> int:
  """The model's multiply-adds in a phase: per token at position p, each layer's six linear layers (12 d^2) and its
  attention over p + 1 positions (scores and the weighted sum, 2 (p + 1) d); the head (vocab d) once for the prefill's
  last position and once for each decoded token."""
  def layers(p: int) -> int: return s.layers * (12 * s.dim * s.dim + 2 * (p + 1) * s.dim)
  positions = range(prefill) if phase == "prefill" else range(prefill, prefill + tokens)
  return sum(layers(p) for p in positions) + s.vocab * s.dim * (1 if phase == "prefill" else tokens)

def roofs(spec: str) -> dict:
  c = configs.from_spec(spec)
  rows = type(c).ROWS
  hbm = c.hbm_channels * c.hbm_bytes_per_cycle * (1 if c.hbm_shared else c.cores)
  return {"cores": c.cores, "hbm_bytes_per_cycle": hbm, "MXU": c.cores * rows * rows, "VPU": c.cores * rows * rows // 2,
          "shared": bool(c.hbm_shared)}

def analyse(r: dict, s: llm.Shape, prefill: int) -> dict:
  peak, n = roofs(r["config"]), macs(s, r["phase"], prefill, r["tokens"])
  hbm_bytes = r["hbm_bytes_per_token"] * r["tokens"]
  out = {"config": r["config"], "dtype": r["dtype"], "phase": r["phase"], "tokens": r["tokens"], "cycles": r["cycles"],
         "macs": n, "macs_per_cycle": n / r["cycles"], "intensity": n / hbm_bytes if hbm_bytes else None, **peak}
  # the share of each unit's capacity the phase used (a chip's busy cycles are its cores' summed, over cores x cycles)
  used = {"MXU": r["mxu_busy"], "VPU": r["vpu_busy"],
          "HBM": hbm_bytes / (r["cycles"] * peak["hbm_bytes_per_cycle"]) if peak["hbm_bytes_per_cycle"] else 0.0}
  # no unit at work half the cycles: the records' loading and the SXU's own cycles (fetches, waits) bound it
  out["used"], out["bound"] = used, max(used, key=used.get) if max(used.values()) >= 0.5 else "loader and SXU"
  return out

def predict_shared(rows: list[dict]) -> None:
  """A shared-HBM row's cycles as its bandwidth predicts them: the same configuration without sharing, or, if
  longer, its busiest core's bytes at that core's share of the channels (the cores' bytes split evenly)."""
  own = {(r["config"], r["dtype"], r["phase"]): r for r in rows if not r["shared"]}
  for r in rows:
    if not r["shared"] or (base := own.get((r["config"].replace(",hbm_shared=1", ""), r["dtype"], r["phase"]))) is None: continue
    hbm_bytes = r["macs"] / r["intensity"]
    r["predicted_cycles"] = max(base["cycles"], hbm_bytes / r["hbm_bytes_per_cycle"])
    r["measured_over_predicted"] = r["cycles"] / r["predicted_cycles"]

def plot(rows: list[dict], path: str, title: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  import numpy as np
  fig, ax = plt.subplots(figsize=(8.4, 4.8))
  xs = np.logspace(-2, 2, 200)
  color: dict = {}
  for r in [r for r in rows if r["intensity"]]:
    c = color.setdefault(r["config"], f"C{len(color)}")
    top = r["MXU"] if r["dtype"] == "int8" else r["VPU"]  # an int8 row's products run on the MXU, float32's on the VPU
    if (r["config"], r["dtype"]) not in color:
      color[r["config"], r["dtype"]] = c
      ax.plot(xs, np.minimum(top, r["hbm_bytes_per_cycle"] * xs), "-" if r["dtype"] == "int8" else "--", color=c, alpha=0.4)
    ax.plot(r["intensity"], r["macs_per_cycle"], "o" if r["phase"] == "prefill" else "s", color=c, markersize=7,
            label=f"{r['config']} {r['dtype']} {r['phase']}: {r['bound']}")
  ax.set_xscale("log"); ax.set_yscale("log")
  ax.set_xlabel("multiply-adds per HBM byte"); ax.set_ylabel("multiply-adds per cycle")
  ax.set_title(title, fontsize=10); ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), title="row: bound by", title_fontsize=7)
  fig.tight_layout(); fig.savefig(path, dpi=110)

if __name__ == "__main__":
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("rows", nargs="+", help="files of `python -m tinytpu llm --json` rows, of one model and prompt")
  p.add_argument("--model", default="gpt2-small", choices=list(llm.MODELS))
  p.add_argument("--plot"); p.add_argument("--json", action="store_true")
  args = p.parse_args()
  raw = [r for path in args.rows for r in json.load(open(path))]
  prefill = next(r["tokens"] for r in raw if r["phase"] == "prefill")
  rows = [analyse(r, llm.MODELS[args.model], prefill) for r in raw]
  predict_shared(rows)
  if args.json: print(json.dumps(rows, indent=1))
  else:
    for r in rows:
      used = ", ".join(f"{k} {v:.0%}" for k, v in r["used"].items())
      shared = f"; bandwidth predicts {r['predicted_cycles']:,.0f} cycles (measured {r['measured_over_predicted']:.3f}x)" \
               if "predicted_cycles" in r else ""
      print(f"{r['config']:22s} {r['dtype']:7s} {r['phase']:7s} {r['macs_per_cycle']:7.2f} MACs/cycle at "
            f"{r['intensity'] or 0:6.3f} MACs/B; used {used}: bound by {r['bound']}{shared}")
  if args.plot: plot(rows, args.plot, f"{args.model}: prefill (o), decode (s); roofs: HBM, then the VPU (float32, dashed) or MXU (int8)")
