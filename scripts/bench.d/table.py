#!/usr/bin/python3
"""Renders the results file (tab-separated: id, what, measured, target, verdict) as a Markdown table."""
import sys

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
header = ["id", "what", "measured", "target", "verdict"]
rows = [header] + rows
widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
def render(row):
    return "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " |"
print(render(rows[0]))
print("|" + "|".join("-" * (width + 2) for width in widths) + "|")
for row in rows[1:]:
    print(render(row))
