"""``routeproof report``: one self-contained HTML page (``index.html``) over a run's ``reports/`` folder.

Each suite writes its JSON beside the others; the page has one section per file found:

* ``verdicts.json`` (the falsification suite) -> **falsify** (:mod:`routeproof.report.falsify`)
* ``chaos.json`` -> **chaos**, ``conformance-<impl>.json`` -> **conformance**, ``bench.json`` -> **bench**

The page carries its CSS and its charts (inline SVG from pygal, the ``report`` extra) and loads
nothing: a Content-Security-Policy forbids every fetch and every script. Without pygal the tables
are still there. An input that does not have its documented shape is named on the page and in
:attr:`Report.problems`; the other sections are written all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import routeproof.report._plots  # the module, looked up per call (tests switch plotting off)
from routeproof.report._html import esc, page
from routeproof.report._json import ReportInputError, load
from routeproof.report.bench import render as render_bench
from routeproof.report.chaos import render as render_chaos
from routeproof.report.conformance import render as render_conformance
from routeproof.report.falsify import render as render_falsify

__all__ = ["SECTIONS", "Report", "ReportInputError", "build_report", "write_report"]

# section id -> heading, in page order
SECTIONS: dict[str, str] = {
    "falsify": "Falsification: the contract's claims",
    "chaos": "Chaos: fault injection over real sockets",
    "conformance": "Conformance: rules × implementations",
    "bench": "Benchmarks",
}
_LINKED = (".md", ".json", ".xml", ".png", ".txt")


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """A rendered page: its HTML, the sections it has, and the input problems it shows."""

    html: str
    sections: tuple[str, ...]
    problems: tuple[str, ...]
    plots: bool


_NOT_SCORECARDS = frozenset({"conformance-breaks.json", "conformance-matrix.json"})


def _inputs(directory: Path) -> dict[str, list[Path]]:
    found = {
        "falsify": [directory / "verdicts.json"],
        "chaos": [directory / "chaos.json"],
        # the planted-break kill table and the matrix (tox -e matrix) are not an implementation's scorecard
        "conformance": sorted(p for p in directory.glob("conformance-*.json") if p.name not in _NOT_SCORECARDS),
        "bench": [directory / "bench.json"],
    }
    return {section: [p for p in paths if p.is_file()] for section, paths in found.items()}


def _section(section: str, paths: list[Path], draw: bool) -> tuple[str, list[str]]:
    renderers: dict[str, Callable[[object], tuple[str, list[str]]]] = {
        "falsify": lambda doc: render_falsify(doc, draw=draw),
        "chaos": lambda doc: render_chaos(doc, draw=draw),
        "bench": lambda doc: render_bench(doc, draw=draw),
    }
    try:
        if section == "conformance":
            docs = {p.name.removeprefix("conformance-").removesuffix(".json"): load(p) for p in paths}
            body, problems = render_conformance(docs, draw=draw)
        else:
            body, problems = renderers[section](load(paths[0]))
    except (ReportInputError, KeyError, IndexError) as exc:
        problem = (
            f"{', '.join(p.name for p in paths)}: {exc if isinstance(exc, ReportInputError) else f'missing {exc}'}"
        )
        return f'<p class="problem">Cannot show this section: {esc(problem)}</p>', [problem]
    links = " ".join(f'<a href="{esc(p.name)}">{esc(p.name)}</a>' for p in paths)
    return f'<p class="links">from {links}</p>{body}', problems


def build_report(directory: Path) -> Report:
    """The page for the reports in ``directory`` (nothing is written)."""
    draw = routeproof.report._plots.available()
    inputs = _inputs(directory)
    sections, problems, present = [], [], []
    for section, title in SECTIONS.items():
        if not inputs[section]:
            continue
        body, found = _section(section, inputs[section], draw)
        problems += found
        present.append(section)
        sections.append(f'<section id="{section}" data-section="{section}"><h2>{esc(title)}</h2>{body}</section>')
    files = (
        sorted(p.name for p in directory.iterdir() if p.is_file() and p.suffix in _LINKED) if directory.is_dir() else []
    )
    nav = " ".join(f'<a href="{esc(name)}">{esc(name)}</a>' for name in files)
    toc = " · ".join(f'<a href="#{s}">{esc(SECTIONS[s].split(":")[0])}</a>' for s in present)
    header = (
        "<header><h1>routeproof: provider-routing-v1 report</h1>"
        f'<p class="meta">Sections: {toc or "none (no suite has written its JSON here yet)"}.'
        + ("" if draw else " Charts are not drawn: install the report extra (pip install 'routeproof[report]').")
        + f'</p><nav class="files">Files beside this page: {nav or "none"}</nav></header>'
    )
    html = page("routeproof report", header, sections)
    return Report(html=html, sections=tuple(present), problems=tuple(problems), plots=draw)


def write_report(directory: Path) -> tuple[Path, Report]:
    """Write ``directory/index.html``; return its path and what it holds."""
    report = build_report(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "index.html"
    target.write_text(report.html, encoding="utf-8")
    return target, report
