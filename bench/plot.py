"""Draws bench/history.tsv as a PNG (no plotting library needed): geomean elems/cycle per recorded run
(blue), the compute-only geomean (green, on its own scale at the right), the reference's 0.663 (grey)
and the 0.80 goal (red). Usage: python bench/plot.py [history.tsv] [out.png]"""
import csv, os, struct, sys, zlib
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
W, H, PAD = 640, 360, 40
# 3x5 glyphs for tick labels
GLYPHS = {"0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
          "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
          "8": "111101111101111", "9": "111101111001111", ".": "000000000000010"}

def write_png(path: str, img: np.ndarray) -> None:
  raw = b"".join(b"\x00" + img[y].tobytes() for y in range(img.shape[0]))
  def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
  with open(path, "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", img.shape[1], img.shape[0], 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))

def line(img, x0, y0, x1, y1, color, dash=0):
  n = int(max(abs(x1 - x0), abs(y1 - y0), 1))
  for i in range(n + 1):
    if dash and (i // dash) % 2: continue
    x, y = round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n)
    img[max(y - 1, 0):y + 1, max(x - 1, 0):x + 1] = color

def text(img, x, y, s, color):
  for c in s:
    for i, bit in enumerate(GLYPHS.get(c, "0" * 15)):
      if bit == "1": img[y + 2 * (i // 3):y + 2 * (i // 3) + 2, x + 2 * (i % 3):x + 2 * (i % 3) + 2] = color
    x += 8

def plot(rows: list[dict], out: str) -> None:
  img = np.full((H, W, 3), 255, np.uint8)
  vals = [float(r["geomean_elems_per_cycle"]) for r in rows]
  comp = [float(r["geomean_compute_elems_per_cycle"]) for r in rows]
  top = max(vals + [0.9]) * 1.1
  sx = lambda i: PAD + (W - 2 * PAD) * (i / max(len(rows) - 1, 1))
  sy = lambda v, t=top: H - PAD - (H - 2 * PAD) * v / t
  line(img, PAD, PAD, PAD, H - PAD, (0, 0, 0)); line(img, PAD, H - PAD, W - PAD, H - PAD, (0, 0, 0))
  for v in np.linspace(0, top, 5)[1:]: text(img, 2, int(sy(v)) - 5, f"{v:.2f}", (0, 0, 0))
  line(img, PAD, sy(0.663), W - PAD, sy(0.663), (150, 150, 150), dash=6)
  line(img, PAD, sy(0.80), W - PAD, sy(0.80), (220, 0, 0), dash=6)
  for series, color, t in ((comp, (0, 150, 0), max(comp) * 1.1), (vals, (0, 70, 220), top)):
    for i in range(len(series)):
      x, y = sx(i), sy(series[i], t)
      img[int(y) - 3:int(y) + 4, int(x) - 3:int(x) + 4] = color
      if i: line(img, sx(i - 1), sy(series[i - 1], t), x, y, color)
  write_png(out, img)

if __name__ == "__main__":
  src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "history.tsv")
  out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "history.png")
  with open(src) as f: rows = list(csv.DictReader(f, delimiter="\t"))
  if not rows: raise SystemExit(f"{src} has no recorded runs: python bench/benchmark.py --record first")
  plot(rows, out)
  print(f"wrote {out} ({len(rows)} runs)")
