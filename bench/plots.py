#!/usr/bin/env python3
"""Draws the bar charts embedded in BENCHMARKS.md as SVG files in docs/benchmarks/.

Standard library only. The figures are copied from BENCHMARKS.md's tables (run 1 where a table
gives two runs); when a table changes, change the matching numbers here and run

    python3 bench/plots.py

from the repository's root (or from anywhere: paths are resolved from this file).
"""

import math
import os
from xml.sax.saxutils import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "benchmarks")

# Hydration of the realistic call, criterion medians in ns (BENCHMARKS.md, "Hydration", run 1).
HYDRATION = [
    ("arguments as text", [
        ("serde_json::from_str (baseline)", 217, True),
        ("ToolSet::hydrate, generated reader", 313, False),
        ("ToolSet::hydrate, guard", 506, False),
        ("Value + jsonschema + from_value", 920, False),
    ]),
    ("arguments as an object", [
        ("deserialize(&Value) (baseline)", 65, True),
        ("ToolSet::hydrate, generated reader", 199, False),
        ("ToolSet::hydrate, guard", 311, False),
    ]),
]

# Catalog::pick medians in µs (BENCHMARKS.md, "Selection latency").
SELECTION = [
    ("100 tools", [("bm25 (default)", 24.6, False), ("keyword scorer (baseline)", 838, True)]),
    ("1,000 tools", [("bm25 (default)", 47.4, False), ("keyword scorer (baseline)", 9840, True)]),
    ("10,000 tools", [("bm25 (default)", 173, False), ("keyword scorer (baseline)", 98000, True)]),
]

# CPU seconds for 100 tools (BENCHMARKS.md, "Compile time"; crate-only and incremental: medians).
COMPILE = [
    ("clean, dependencies included", [("tool_runtime #[tool]", 68.6, False), ("rmcp #[tool] (baseline)", 40.7, True)]),
    ("the same, default-features = false", [("tool_runtime #[tool]", 65.5, False), ("rmcp #[tool] (baseline)", 42.3, True)]),
    ("clean, generated crate only", [("tool_runtime #[tool]", 3.3, False), ("rmcp #[tool] (baseline)", 4.2, True)]),
    ("incremental, one description edited", [("tool_runtime #[tool]", 2.8, False), ("rmcp #[tool] (baseline)", 2.0, True)]),
]
# Ratios printed beside a bar instead of the computed one (none: each panel is one run's pair).
COMPILE_RATIOS = {}

WIDTH = 800
LABEL_W = 270
BAR_H = 18
GAP = 6
GROUP_GAP = 14
HEAD = 46
VALUE_W = 190
COLOR = "#3b6ea5"
BASE_COLOR = "#9aa5b1"


def fmt_ratio(value, base):
    """The ratio to the baseline: "1.46x" above it, "34x faster" below it."""
    if value >= base:
        return f"  ({value / base:.2f}x)"
    faster = base / value
    return f"  ({faster:.0f}x faster)" if faster >= 10 else f"  ({faster:.2f}x faster)"


def fmt_time(value, unit):
    """A value with its unit, switching µs to ms and ns to µs above 1,000."""
    if unit == "ns" and value >= 1000:
        return f"{value / 1000:.2f} µs"
    if unit == "µs" and value >= 1000:
        return f"{value / 1000:.2f} ms"
    if value >= 100:
        return f"{value:.0f} {unit}"
    return f"{value:g} {unit}"


def chart(path, title, groups, unit, log=False):
    """Horizontal bars, one group per block, the ratio to the group's baseline after each value."""
    rows = sum(len(bars) for _, bars in groups)
    height = HEAD + rows * (BAR_H + GAP) + len(groups) * (BAR_H + GROUP_GAP) + 30
    plot_w = WIDTH - LABEL_W - VALUE_W - 20
    top = max(v for _, bars in groups for _, v, _ in bars)
    low = min(v for _, bars in groups for _, v, _ in bars)
    if log:
        lo = 10 ** math.floor(math.log10(low))
        hi = 10 ** math.ceil(math.log10(top))

        def length(v):
            return plot_w * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    else:

        def length(v):
            return plot_w * v / top

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="10" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<text x="10" y="38" fill="#555">{escape("grey: the baseline measured in the same run" + ("; logarithmic scale" if log else ""))}</text>',
    ]
    y = HEAD
    for name, bars in groups:
        y += GROUP_GAP
        out.append(f'<text x="10" y="{y + 12}" font-weight="bold">{escape(name)}</text>')
        y += BAR_H
        base = next(v for _, v, is_base in bars if is_base)
        for label, value, is_base in bars:
            w = max(length(value), 1.0)
            x0 = LABEL_W
            color = BASE_COLOR if is_base else COLOR
            ratio = "" if is_base else fmt_ratio(value, base)
            out.append(f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
            out.append(f'<rect x="{x0}" y="{y}" width="{w:.1f}" height="{BAR_H}" fill="{color}"/>')
            out.append(f'<text x="{x0 + w + 6:.1f}" y="{y + 13}">{escape(fmt_time(value, unit) + ratio)}</text>')
            y += BAR_H + GAP
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def chart_panels(path, title, groups, unit, ratios=None):
    """Like `chart`, but each group on its own linear scale (values of different magnitudes)."""
    rows = sum(len(bars) for _, bars in groups)
    height = HEAD + rows * (BAR_H + GAP) + len(groups) * (BAR_H + GROUP_GAP) + 30
    plot_w = WIDTH - LABEL_W - VALUE_W - 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="10" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<text x="10" y="38" fill="#555">grey: the baseline measured in the same run; each build on its own scale</text>',
    ]
    y = HEAD
    for name, bars in groups:
        y += GROUP_GAP
        out.append(f'<text x="10" y="{y + 12}" font-weight="bold">{escape(name)}</text>')
        y += BAR_H
        top = max(v for _, v, _ in bars)
        base = next(v for _, v, is_base in bars if is_base)
        for label, value, is_base in bars:
            w = max(plot_w * value / top, 1.0)
            color = BASE_COLOR if is_base else COLOR
            ratio = "" if is_base else fmt_ratio(value, base)
            if not is_base and ratios and name in ratios:
                ratio = f"  ({ratios[name]})"
            out.append(f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
            out.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H}" fill="{color}"/>')
            out.append(f'<text x="{LABEL_W + w + 6:.1f}" y="{y + 13}">{escape(f"{value:g} {unit}" + ratio)}</text>')
            y += BAR_H + GAP
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    chart(os.path.join(OUT, "hydration.svg"),
          "Hydrating one realistic call (criterion median, lower is better)", HYDRATION, "ns")
    chart(os.path.join(OUT, "selection.svg"),
          "Catalog::pick, top 3, by catalog size (criterion median, lower is better)",
          SELECTION, "µs", log=True)
    chart_panels(os.path.join(OUT, "compile-time.svg"),
                 "Compiling 100 tools, CPU time (lower is better)", COMPILE, "s CPU",
                 COMPILE_RATIOS)
    for name in ("hydration.svg", "selection.svg", "compile-time.svg"):
        print(os.path.join("docs", "benchmarks", name))


if __name__ == "__main__":
    main()
