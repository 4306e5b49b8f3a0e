#!/usr/bin/python3
"""C1's trade-off as an SVG: app p99 ratio (during ÷ before) against rows/s, one
point per way of expiring the backlog. Plain Python, no plotting library.
Usage: tradeoff_svg.py POINTS.tsv OUT.svg TITLE
POINTS.tsv: label, p99 ratio, rows/s (tab-separated); a label "single DELETE"
also draws the line at half its rows/s (the throughput target)."""
import html, math, statistics, sys

points = []
with open(sys.argv[1]) as f:
    for line in f:
        label, ratio, rate = line.rstrip("\n").split("\t")
        points.append((label, float(ratio), float(rate) / 1000))
title = sys.argv[3]

W, H, left, right, top, bottom = 1040, 460, 70, 490, 40, 50
pw, ph = W - left - right, H - top - bottom
x_max = max([p[2] for p in points] + [1]) * 1.1
# The ratio on a log scale: gentle variants sit near 1, a harsh one may reach 100.
y_lo, y_hi = min([0.5] + [p[1] / 1.5 for p in points]), max([p[1] for p in points] + [4]) * 1.5
ly = lambda v: top + ph - ph * (math.log(max(v, y_lo)) - math.log(y_lo)) / (math.log(y_hi) - math.log(y_lo))
lx = lambda v: left + pw * v / x_max

out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{left}" y="22" font-size="14">{html.escape(title)}</text>',
       f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>']
for v in [0.5, 1, 2, 5, 10, 20, 50, 100, 200]:
    if y_lo <= v <= y_hi:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{ly(v):.1f}" y2="{ly(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{ly(v) + 4:.1f}" text-anchor="end">{v:g}×</text>')
step = 10 ** math.floor(math.log10(x_max / 5)) if x_max > 0 else 1
step *= 2 if x_max / step > 10 else 1
v = 0.0
while v <= x_max:
    out.append(f'<line x1="{lx(v):.1f}" x2="{lx(v):.1f}" y1="{top}" y2="{top + ph}" stroke="#eee"/>')
    out.append(f'<text x="{lx(v):.1f}" y="{top + ph + 16}" text-anchor="middle">{v:g}k</text>')
    v += step
out.append(f'<text x="{left + pw / 2}" y="{H - 10}" text-anchor="middle">rows deleted per second (thousands)</text>')
out.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" text-anchor="middle">app p99 during ÷ before (log scale)</text>')
# Targets: p99 ratio ≤ 2, rows/s ≥ half the single DELETE's.
out.append(f'<line x1="{left}" x2="{left + pw}" y1="{ly(2):.1f}" y2="{ly(2):.1f}" stroke="#c00" stroke-dasharray="6,4"/>')
out.append(f'<text x="{left + pw - 4}" y="{ly(2) - 4:.1f}" text-anchor="end" fill="#c00">target ≤ 2×</text>')
deletes = sorted(p[2] for p in points if p[0] == "single DELETE")
if deletes:
    # Several runs (--c1-runs): the line stands at half the median DELETE's rows/s.
    half = statistics.median(deletes) / 2
    out.append(f'<line x1="{lx(half):.1f}" x2="{lx(half):.1f}" y1="{top}" y2="{top + ph}" stroke="#c00" stroke-dasharray="6,4"/>')
    median = " (median)" if len(deletes) > 1 else ""
    out.append(f'<text x="{lx(half) + 4:.1f}" y="{top + 14}" fill="#c00">½ DELETE rows/s{median}</text>')
# One colour and one legend line per way of expiring, whatever the number of runs.
colours = ["#000", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
labels = list(dict.fromkeys(p[0] for p in points))
colour = {label: colours[i % len(colours)] for i, label in enumerate(labels)}
marker = lambda label, x, y, c: (f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{c}"/>'
                                 if label.startswith("single DELETE") else f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{c}"/>')
for label, ratio, rate in points:
    out.append(marker(label, lx(rate), ly(ratio), colour[label]))
for i, label in enumerate(labels):
    runs = [p for p in points if p[0] == label]
    ly_legend = top + 10 + 18 * i
    out.append(marker(label, W - right + 16, ly_legend, colour[label]))
    ratios = [r for _, r, _ in runs]
    # Many runs (--c1-runs): their median and range, which fit beside the plot.
    ratio_text = (", ".join(f"{r:.2f}×" for r in ratios) if len(ratios) <= 4 else
                  f"{len(ratios)} runs: median {statistics.median(ratios):.2f}×, {min(ratios):.2f}–{max(ratios):.2f}×")
    rates = sorted(x for _, _, x in runs)
    rate_text = f"{rates[0]:.0f}k/s" if len(rates) == 1 else f"{rates[0]:.0f}–{rates[-1]:.0f}k/s"
    out.append(f'<text x="{W - right + 26}" y="{ly_legend + 4}">{html.escape(label)}: {ratio_text}; {rate_text}</text>')
out.append('</svg>')
with open(sys.argv[2], "w") as f:
    f.write("\n".join(out) + "\n")
