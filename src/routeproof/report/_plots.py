"""Charts as inline SVG, drawn with pygal (the ``report`` extra).

pygal renders SVG itself in pure Python (no browser, no network, no native code), so a chart is a few
kB of markup that sits inside the HTML page. Its tooltips need a script from the web; the page runs no
script, so the charts are rendered with ``js=[]`` and the inline config script and comments pygal
still writes are removed. Without pygal every chart becomes a one-line note and the tables remain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from routeproof.report._html import esc

__all__ = ["Figure", "Series", "available", "bars", "figure_html", "xy"]

Kind = Literal["line", "area", "dashed", "dots", "thick"]
Point = tuple[float, float] | None  # None breaks a line


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    """One series of an XY chart: a line, a filled area, a dashed reference line or dots."""

    title: str
    points: Sequence[Point]
    color: str
    kind: Kind = "line"


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """A chart (None without pygal) with the sentence that says what it shows."""

    key: str
    svg: str | None
    caption: str


def available() -> bool:
    """Whether pygal (the ``report`` extra) is installed."""
    try:
        import pygal  # noqa: F401
    except ImportError:
        return False
    return True


_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_UUID = re.compile(r'id="chart-([0-9a-f-]{36})"')
_SERIES_WIDTH = re.compile(r"(#chart-[\w-]+) \.series\.serie-(\d+)\{stroke-width:([\d.]+)")


def _clean(svg: str, key: str) -> str:
    """pygal's SVG without its script and comments, its random chart id replaced by ``key``.

    pygal puts a series' stroke width on the series group, where its own ``.reactive{stroke-width:1}``
    on each line overrides it; the width is repeated on the lines so that it shows.
    """
    found = _UUID.search(svg)
    if found is not None:
        svg = svg.replace(found.group(1), key)
    widths = "".join(
        f"{chart} .series.serie-{n} .line{{stroke-width:{w}}}" for chart, n, w in _SERIES_WIDTH.findall(svg)
    )
    svg = svg.replace("</style>", widths + "</style>", 1)
    return _COMMENT.sub("", _SCRIPT.sub("", svg))


def _style(colors: Sequence[str]) -> Any:
    from pygal.style import Style

    font = "'DejaVu Sans', system-ui, sans-serif"
    return Style(
        background="white",
        plot_background="white",
        foreground="#333",
        foreground_strong="#111",
        foreground_subtle="#888",
        opacity=".30",
        opacity_hover=".45",
        colors=tuple(colors),
        font_family=font,
        title_font_family=font,
        label_font_family=font,
        major_label_font_family=font,
        legend_font_family=font,
        value_font_family=font,
        tooltip_font_family=font,
        title_font_size=15,
        label_font_size=12,
        major_label_font_size=12,
        legend_font_size=12,
    )


_COMMON: dict[str, object] = {
    "js": [],
    "allow_interruptions": True,  # a None point breaks a line
    "disable_xml_declaration": True,
    "pretty_print": False,
    "truncate_legend": -1,
    "legend_at_bottom": True,
    "legend_at_bottom_columns": 3,
    "width": 720,
    "height": 380,
}

_SERIES_OPTIONS: dict[Kind, dict[str, object]] = {
    "line": {"show_dots": False, "stroke_style": {"width": 2}},
    "thick": {"show_dots": False, "stroke_style": {"width": 7, "linecap": "butt"}},
    "area": {"show_dots": False, "fill": True, "stroke_style": {"width": 1}},
    "dashed": {"show_dots": False, "stroke_style": {"width": 2, "dasharray": "6, 4"}},
    "dots": {"stroke": False, "show_dots": True, "dots_size": 5},
}


def _legend_margin(entries: int) -> int:
    """Room under the x-axis title for a bottom legend of ``entries`` (pygal's own estimate clips its
    second row when there is an axis title)."""
    rows = -(-entries // int(str(_COMMON["legend_at_bottom_columns"])))
    return 12 + 20 * rows


def xy(
    key: str,
    title: str,
    series: Sequence[Series],
    *,
    x_title: str,
    y_title: str,
    logarithmic: bool = False,
    xrange: tuple[float, float] | None = None,
    y_labels: Sequence[dict[str, object]] | None = None,
    height: int = 380,
    y_guides: bool = True,
) -> str:
    """An XY chart (lines, areas, dashed reference lines, dots) as cleaned inline SVG."""
    import pygal

    options: dict[str, object] = {
        **_COMMON,
        "height": height,
        "logarithmic": logarithmic,
        "show_y_guides": y_guides,
        "margin_bottom": _legend_margin(len(series)),
    }
    if xrange is not None:
        options["xrange"] = xrange
    chart = pygal.XY(style=_style([s.color for s in series]), title=title, x_title=x_title, y_title=y_title, **options)
    if y_labels is not None:
        chart.y_labels = list(y_labels)
    for s in series:
        chart.add(s.title, list(s.points), **_SERIES_OPTIONS[s.kind])
    return _clean(chart.render(is_unicode=True), key)


def bars(
    key: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None], str]],
    *,
    y_title: str,
    stacked: bool = False,
    horizontal: bool = False,
    height: int = 380,
) -> str:
    """A (stacked, horizontal) bar chart: one bar group per label, one bar per ``(title, values, color)``."""
    import pygal

    kind = {
        (False, False): pygal.Bar,
        (True, False): pygal.StackedBar,
        (False, True): pygal.HorizontalBar,
        (True, True): pygal.HorizontalStackedBar,
    }[(stacked, horizontal)]
    options: dict[str, object] = {**_COMMON, "height": height, "margin_bottom": _legend_margin(len(series))}
    # a horizontal chart's value axis is its x axis
    axis = {"x_title": y_title} if horizontal else {"y_title": y_title}
    chart = kind(style=_style([c for _, _, c in series]), title=title, **axis, **options)
    chart.x_labels = list(labels)
    for name, values, _ in series:
        chart.add(name, list(values))
    return _clean(chart.render(is_unicode=True), key)


def figure_html(fig: Figure) -> str:
    """A figure: the chart and its caption, or the caption and a note that charts need the extra."""
    body = (
        fig.svg
        if fig.svg is not None
        else "<p class=\"noplot\">Chart not drawn: install the report extra (pip install 'routeproof[report]').</p>"
    )
    return f'<figure class="plot" data-key="{esc(fig.key)}">{body}<figcaption>{esc(fig.caption)}</figcaption></figure>'
