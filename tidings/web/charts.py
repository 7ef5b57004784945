"""Small inline SVG line charts of the rate series (no producer text ever reaches them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

#: Chart size in SVG user units.
WIDTH, HEIGHT = 300, 60
#: Space kept free at the top and bottom (units).
PAD = 4


class Sparkline(TypedDict):
    """A line chart's SVG paths and the figures shown beside it."""

    path: str
    area: str
    peak: float
    last: float
    mean: float
    width: int
    height: int


def sparkline(values: Sequence[float]) -> Sparkline:
    """``{"path", "area", "peak", "last", "mean", "width", "height"}`` of a line through
    ``values``."""
    values = list(values) or [0.0]
    peak = max(values)
    scale = (HEIGHT - 2 * PAD) / peak if peak > 0 else 0.0
    step = WIDTH / max(len(values) - 1, 1)
    points = [(i * step, HEIGHT - PAD - v * scale) for i, v in enumerate(values)]
    path = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in points)
    area = f"{path} L{WIDTH:.1f},{HEIGHT} L0,{HEIGHT} Z"
    return {
        "path": path,
        "area": area,
        "peak": peak,
        "last": values[-1],
        "mean": sum(values) / len(values),
        "width": WIDTH,
        "height": HEIGHT,
    }
