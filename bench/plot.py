"""Draws bench/history.tsv with matplotlib: the benchmark's geomean elems/cycle per recorded run, the compute-only
(SXU cycles) geomean on its own axis at the right, the reference TinyTPU project's 0.663 and this hardware's floor
(the geomean of the kernels' floors, tinytpu.workloads). Usage: python bench/plot.py [history.tsv] [out.png]"""
import csv, os, sys
import matplotlib
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from tinytpu.workloads import DEFAULT, geomean

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE, FLOOR = 0.663, round(geomean([k.work / k.floor for k in DEFAULT]), 3)

def plot(rows: list[dict], out: str) -> None:
  runs = [f"{r['date']}\n{r['commit']}" for r in rows]
  fig, ax = plt.subplots(figsize=(8, 4.5))
  ax.plot(runs, [float(r["geomean_elems_per_cycle"]) for r in rows], "o-", color="tab:blue",
          label="geomean elems/cycle (testbench cycles)")
  ax.axhline(REFERENCE, color="grey", ls="--", label=f"reference TinyTPU project ({REFERENCE})")
  ax.axhline(FLOOR, color="tab:red", ls=":", label=f"floor of this hardware (~{FLOOR})")
  ax.set_xlabel("recorded run (date, commit)")
  ax.set_ylabel("geomean elements per cycle")
  ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))
  right = ax.twinx()
  right.plot(runs, [float(r["geomean_compute_elems_per_cycle"]) for r in rows], "s--", color="tab:green",
             label="compute only (SXU cycles), right axis")
  right.set_ylabel("geomean elements per SXU cycle")
  right.set_ylim(0, right.get_ylim()[1] * 1.1)
  lines = ax.get_legend_handles_labels()
  more = right.get_legend_handles_labels()
  ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower right", fontsize=8)
  ax.set_title("TINYTPU benchmark: 11 int32 kernels (bench/benchmark.py)")
  fig.tight_layout()
  fig.savefig(out, dpi=100)
  plt.close(fig)

if __name__ == "__main__":
  src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "history.tsv")
  out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "history.png")
  with open(src) as f: rows = list(csv.DictReader(f, delimiter="\t"))
  if not rows: raise SystemExit(f"{src} has no recorded runs: python bench/benchmark.py --record first")
  plot(rows, out)
  print(f"wrote {out} ({len(rows)} runs)")
