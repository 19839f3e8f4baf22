"""The run's curves as a self-contained HTML file of SVG charts (no plotting library): one chart per
numeric metric, train and valid values per epoch."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["curves_html", "write_curves"]

Series = Mapping[int, float]  # epoch -> value
COLORS = {"train": "#1f77b4", "valid": "#d62728", "test": "#2ca02c"}
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 520, 260, 64, 16, 28, 40


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def chart_svg(title: str, series: Mapping[str, Series]) -> str:
    """One chart: a polyline (with points) per split, epochs on x, values on y."""
    points = [(e, v) for s in series.values() for e, v in s.items() if math.isfinite(v)]
    if not points:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="40"><text x="8" y="24">' \
               f"{html.escape(title)}: no values</text></svg>"  # fmt: skip
    epochs = [e for e, _ in points]
    values = [v for _, v in points]
    x_low, x_high = min(epochs), max(epochs)
    y_low, y_high = min(values), max(values)
    if y_high == y_low:
        y_low, y_high = y_low - 0.5, y_high + 0.5
    pad = (y_high - y_low) * 0.05
    y_low, y_high = y_low - pad, y_high + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(epoch: float) -> float:
        return LEFT + (plot_w * (epoch - x_low) / (x_high - x_low) if x_high > x_low else plot_w / 2)

    def y_of(value: float) -> float:
        return TOP + plot_h * (1 - (value - y_low) / (y_high - y_low))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="11">',
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">'
        f"{html.escape(title)}</text>",
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    for tick in _ticks(y_low, y_high):
        y = y_of(tick)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{tick:.4g}</text>')
    for tick in sorted({round(t) for t in _ticks(x_low, x_high, min(10, max(1, x_high - x_low)))}):
        if x_low <= tick <= x_high:
            x = x_of(tick)
            parts.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{tick}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" text-anchor="middle">epoch</text>')
    for index, (split, values_by_epoch) in enumerate(series.items()):
        color = COLORS.get(split, "#555")
        finite = sorted((e, v) for e, v in values_by_epoch.items() if math.isfinite(v))
        if not finite:
            continue
        coords = " ".join(f"{x_of(e):.1f},{y_of(v):.1f}" for e, v in finite)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        for e, v in finite:
            parts.append(
                f'<circle cx="{x_of(e):.1f}" cy="{y_of(v):.1f}" r="3" fill="{color}">'
                f"<title>{split} epoch {e}: {v:.6g}</title></circle>"
            )
        legend_x = LEFT + 8 + index * 70
        parts.append(f'<rect x="{legend_x}" y="{TOP + 6}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{legend_x + 14}" y="{TOP + 15}">{html.escape(split)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def curves_html(title: str, metrics: Mapping[str, Mapping[str, Series]]) -> str:
    """The HTML page of a run: ``metrics`` maps a metric's name to its series per split."""
    charts = "\n".join(
        f'<div class="chart">{chart_svg(name, series)}</div>' for name, series in metrics.items()
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:24px}.chart{display:inline-block;margin:8px}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>\n{charts}\n</body></html>\n"
    )


def write_curves(
    path: str | os.PathLike[str], title: str, metrics: Mapping[str, Mapping[str, Series]]
) -> Path:
    """Write ``curves_html`` to ``path`` (through a temporary file); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # the process id keeps two writers of one path from renaming each other's partial file
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    partial.write_text(curves_html(title, metrics), encoding="utf-8")
    os.replace(partial, target)
    return target
