"""Server-side SVG line charts: no script, no CDN, no network (the page is self-contained)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 560, 160
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 64, 10, 30, 20
MAX_POINTS = 400  # a line keeps at most this many points (every k-th sample)
COLORS = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777")


@dataclass
class Chart:
    """One chart over a time window ``[t0, t1]``: lines, shaded bands, point marks."""

    title: str
    t0: float
    t1: float
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}"
    lines: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    bands: list[tuple[float, float, str]] = field(default_factory=list)  # start, end, label
    marks: list[tuple[float, float, bool, str]] = field(default_factory=list)  # t, v, ok, label
    #: samples farther apart than this (seconds) are not joined: no supervisor sampled
    #: between them, and a straight line would invent the values of that period
    gap: float | None = None

    def render(self) -> str:
        values = [v for pts in self.lines.values() for _, v in pts] + [m[1] for m in self.marks]
        top = max(values, default=0) or 1.0  # no samples yet (or all zero): an empty frame
        x, y = self._scale(top)
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(self.title)}">',
            f'<text x="{PAD_LEFT}" y="12" font-size="11" font-weight="bold">'
            f"{escape(self.title)}</text>",
        ]
        parts += self._axes(top, y)
        for start, end, label in self.bands:
            x0, x1 = x(max(start, self.t0)), x(min(end, self.t1))
            parts.append(
                f'<rect x="{x0:.1f}" y="{PAD_TOP}" width="{max(x1 - x0, 1.5):.1f}" '
                f'height="{HEIGHT - PAD_TOP - PAD_BOTTOM}" fill="#fecaca" opacity="0.7">'
                f"<title>{escape(label)}</title></rect>"
            )
        for i, (name, pts) in enumerate(self.lines.items()):
            parts.append(self._line(name, self._runs(pts), COLORS[i % len(COLORS)], x, y, i))
        for t, v, ok, label in self.marks:
            color = "#16a34a" if ok else "#dc2626"
            parts.append(
                f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}">'
                f"<title>{escape(label)}</title></circle>"
            )
        parts.append("</svg>")
        return "".join(parts)

    def _scale(self, top: float):
        span = max(self.t1 - self.t0, 1e-9)
        inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
        inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM

        def x(t: float) -> float:
            return PAD_LEFT + (min(max(t, self.t0), self.t1) - self.t0) / span * inner_w

        def y(v: float) -> float:
            return HEIGHT - PAD_BOTTOM - min(max(v, 0.0), top) / top * inner_h

        return x, y

    def _axes(self, top: float, y) -> list[str]:
        base = HEIGHT - PAD_BOTTOM
        left, right = self.t0, self.t1
        return [
            f'<line x1="{PAD_LEFT}" y1="{base}" x2="{WIDTH - PAD_RIGHT}" y2="{base}" '
            'stroke="#9ca3af"/>',
            f'<line x1="{PAD_LEFT}" y1="{PAD_TOP}" x2="{PAD_LEFT}" y2="{base}" stroke="#9ca3af"/>',
            f'<text x="{PAD_LEFT - 4}" y="{y(top) + 4:.1f}" font-size="10" text-anchor="end">'
            f"{escape(self.fmt(top))}</text>",
            f'<text x="{PAD_LEFT - 4}" y="{base}" font-size="10" text-anchor="end">0</text>',
            f'<text x="{PAD_LEFT}" y="{HEIGHT - 4}" font-size="10">{_clock(left)} UTC</text>',
            f'<text x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 4}" font-size="10" text-anchor="end">'
            f"{_clock(right)}</text>",
        ]

    def _runs(self, pts: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
        """``pts`` cut where two samples are more than :attr:`gap` apart."""
        runs: list[list[tuple[float, float]]] = []
        for p in pts:
            if not runs or (self.gap is not None and p[0] - runs[-1][-1][0] > self.gap):
                runs.append([])
            runs[-1].append(p)
        return runs

    @staticmethod
    def _line(name: str, runs: list[list[tuple[float, float]]], color: str, x, y, i: int) -> str:
        step = max(1, sum(map(len, runs)) // MAX_POINTS)
        lines = []
        for pts in runs:
            kept = pts[::step] + ([pts[-1]] if (len(pts) - 1) % step else [])
            coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in kept)
            lines.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}"/>'
            )
        return "".join(lines) + (
            f'<text x="{PAD_LEFT + 90 * i}" y="25" font-size="10" fill="{color}">'
            f"— {escape(name)}</text>"
        )


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t))
