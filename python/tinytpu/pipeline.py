"""The pipeline view: one self-contained HTML page (no network) with a zoomable per-unit timeline of one
kernel call; hovering a slice shows its instruction. Written by `python -m tinytpu profile --html`."""
from __future__ import annotations
import html as _html, json
import numpy as np
from tinytpu.profile import Call, kernel_calls
from tinytpu.events import TRACKS, Trace

MAX_EVENTS = 200_000  # a longer call is shown from its start up to this many slices (the page says so)

def choose(calls: list[Call], kernel: str | None) -> Call:
  """The call named by `kernel` (a kernel name: its first call; or a call number), else the longest."""
  if not calls: raise ValueError("no kernel ran on TINYTPU: nothing to show")
  if kernel is None: return max(calls, key=lambda c: c.cycles)
  if kernel.isdigit():
    if int(kernel) >= len(calls): raise ValueError(f"call {kernel} out of range: the script made {len(calls)} calls")
    return calls[int(kernel)]
  for c in calls:
    if c.name == kernel: return c
  raise ValueError(f"no kernel named {kernel!r}; kernels: {', '.join(sorted({c.name for c in calls}))}")

def html(tr: Trace, kernel: str | None = None) -> str:
  calls = kernel_calls(tr)
  call = choose(calls, kernel)
  ev = tr.ev[(tr.ev["begin"] >= call.begin) & (tr.ev["begin"] < call.end) & (tr.ev["core"] == call.core)]
  note, stop = "", call.end
  if len(ev) > MAX_EVENTS:
    stop = int(np.sort(ev["begin"])[MAX_EVENTS])
    ev = ev[ev["begin"] < stop]
    note = f"showing cycles {call.begin:,} to {stop:,} of this call ({len(ev):,} slices)"
  used, name_idx = np.unique(ev["name"], return_inverse=True)
  rows = np.stack([ev["track"].astype(np.int64), ev["depth"], ev["begin"] - np.uint64(call.begin),
                   ev["end"] - np.uint64(call.begin), name_idx.reshape(-1), ev["pc"]], axis=1).astype(np.int64)
  data = {"title": f"{call.name}: {call.cycles:,} cycles, {call.launches} launches (call {calls.index(call)} of {len(calls)})",
          "cycles": stop - call.begin, "tracks": TRACKS, "names": [tr.names[n] for n in used.tolist()],
          "events": rows.tolist(), "note": note}
  # "</" cannot end the script element early: JSON escapes it as "<\\/".
  payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
  return _PAGE.replace("{{TITLE}}", _html.escape(data["title"])).replace("{{DATA}}", payload)

_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>TinyTPU pipeline: {{TITLE}}</title>
<style>
body { margin: 0; font: 12px monospace; background: #fff; color: #222; }
header { padding: 6px 10px; border-bottom: 1px solid #ccc; }
#tip { position: fixed; display: none; background: #ffffe8; border: 1px solid #888; padding: 4px 6px;
       pointer-events: none; white-space: pre; }
canvas { display: block; cursor: grab; }
</style></head>
<body>
<header><b>{{TITLE}}</b> <span id="note"></span><br>
wheel: zoom, drag: pan, double-click: whole call. One row per unit; the thin bars under a row are nested
slices (SXU stalls with their cause, MXU phases, launches). Cycles are counted from the call's start.</header>
<canvas id="view"></canvas><div id="tip"></div>
<script id="trace-data" type="application/json">{{DATA}}</script>
<script>window.onerror = (msg) => { document.body.dataset.error = String(msg); };</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("trace-data").textContent);
document.getElementById("note").textContent = D.note;
const LEFT = 150, TOP = 26, ROW = 36, canvas = document.getElementById("view"), ctx = canvas.getContext("2d");
const tip = document.getElementById("tip");
const byTrack = D.tracks.map(() => []);
for (const e of D.events) byTrack[e[0]].push(e);
let x0 = 0, scale = 1;  // cycle at the left edge, pixels per cycle
function fit() { x0 = 0; scale = Math.max((canvas.width - LEFT - 10) / Math.max(D.cycles, 1), 1e-6); }
const SXU = D.tracks.indexOf("sxu"), KERNEL = D.tracks.indexOf("kernel");
function color(e, name) {
  const depth = e[1];
  if (depth > 0 && e[0] === KERNEL) return "#bbb";  // launches
  if (depth > 0 && e[0] === SXU) return "#e03c30";  // stalls
  let h = depth > 0 ? 7 : 0;  // nested slices: their own hues
  for (const ch of name.split(/[ (]/)[0]) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360}, 55%, 62%)`;
}
function geometry(e) {  // [x, y, w, h] of a slice
  const y = TOP + e[0] * ROW + (e[1] ? ROW - 12 : 4), h = e[1] ? 8 : ROW - 18;
  const x = LEFT + (e[2] - x0) * scale, w = Math.max((e[3] - e[2]) * scale, 1);
  return [x, y, w, h];
}
function draw() {
  canvas.width = window.innerWidth; canvas.height = TOP + D.tracks.length * ROW + 10;
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
  const lo = x0, hi = x0 + (canvas.width - LEFT) / scale;
  let drawn = 0;
  ctx.save(); ctx.beginPath(); ctx.rect(LEFT, 0, canvas.width - LEFT, canvas.height); ctx.clip();
  ctx.font = "11px monospace"; ctx.textBaseline = "middle";
  for (const e of D.events) {
    if (e[3] < lo || e[2] > hi) continue;
    const [x, y, w, h] = geometry(e), name = D.names[e[4]];
    ctx.fillStyle = color(e, name); ctx.fillRect(x, y, w, h);
    if (w > 3 && !e[1]) { ctx.strokeStyle = "#555"; ctx.strokeRect(x + 0.5, y + 0.5, w - 1, h - 1); }
    if (w > 40 && !e[1]) { ctx.fillStyle = "#000"; ctx.fillText(name.slice(0, Math.floor(w / 7)), x + 3, y + h / 2); }
    drawn++;
  }
  ctx.restore();
  ctx.fillStyle = "#222"; ctx.font = "12px monospace"; ctx.textBaseline = "middle";
  D.tracks.forEach((t, i) => {
    ctx.fillText(t.toUpperCase(), 8, TOP + i * ROW + ROW / 2);
    ctx.fillStyle = "#ddd"; ctx.fillRect(0, TOP + (i + 1) * ROW - 1, canvas.width, 1); ctx.fillStyle = "#222";
  });
  const step = Math.pow(10, Math.ceil(Math.log10(80 / scale)));  // a tick every >= 80 px
  for (let c = Math.ceil(lo / step) * step; c <= hi; c += step) {
    const x = LEFT + (c - x0) * scale;
    ctx.fillRect(x, TOP - 6, 1, 6); ctx.fillText(String(c), x + 2, TOP - 14);
  }
  document.body.dataset.rendered = String(drawn);
}
function hit(mx, my) {
  const t = Math.floor((my - TOP) / ROW);
  if (t < 0 || t >= D.tracks.length) return null;
  let best = null;
  for (const e of byTrack[t]) {
    const [x, y, w, h] = geometry(e);
    if (mx >= x && mx <= x + Math.max(w, 3) && my >= y && my <= y + h) best = e;
  }
  return best;
}
let drag = null;
canvas.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, x0 }; canvas.style.cursor = "grabbing"; });
window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
canvas.addEventListener("mousemove", (ev) => {
  const r = canvas.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
  if (drag) { x0 = drag.x0 - (ev.clientX - drag.x) / scale; draw(); return; }
  const e = hit(mx, my);
  if (!e) { tip.style.display = "none"; return; }
  tip.textContent = `${D.names[e[4]]}\\n${D.tracks[e[0]]}${e[1] ? " (nested)" : ""}: cycles ${e[2]}..${e[3]} ` +
    `(${e[3] - e[2]} cycles)` + (e[5] >= 0 ? `\\npc ${e[5]}` : "");
  tip.style.display = "block"; tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
});
canvas.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const mx = ev.clientX - canvas.getBoundingClientRect().left - LEFT, at = x0 + mx / scale;
  scale *= ev.deltaY < 0 ? 1.25 : 0.8; x0 = at - mx / scale; draw();
}, { passive: false });
canvas.addEventListener("dblclick", () => { fit(); draw(); });
window.addEventListener("resize", draw);
canvas.width = window.innerWidth; fit(); draw();
</script></body></html>
"""
