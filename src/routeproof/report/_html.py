"""HTML pieces: escaping, tables, badges and the page frame (inline CSS, no script, no network)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

__all__ = ["CSP", "badge", "details", "esc", "page", "table"]

# What the browser may load for this page: nothing but its own inline styles and data: images.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
:root { --ok: #1b7f3b; --bad: #b3261e; --na: #6b6b6b; --line: #d8d8d8; --soft: #f5f5f5; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d1d1f;
       margin: 0 auto; max-width: 1280px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 2px solid #333; }
h3 { font-size: 15px; margin: 20px 0 6px; }
nav.files a, .links a { margin-right: 12px; }
p.meta { color: #555; margin: 0 0 8px; }
.scroll { overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; width: 100%; }
td code { word-break: break-all; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.cell { text-align: center; white-space: nowrap; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-weight: 600;
         font-size: 12px; white-space: nowrap; }
.ok { background: var(--ok); } .bad { background: var(--bad); } .na { background: var(--na); }
td.ok, td.bad, td.na { color: #fff; font-weight: 600; }
details > summary { cursor: pointer; color: #0b57d0; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--soft); padding: 8px; margin: 4px 0; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
figure.plot { margin: 0; border: 1px solid var(--line); padding: 8px; background: #fff; }
figure.plot svg { display: block; width: 100%; height: auto; }
figcaption { color: #444; font-size: 13px; margin-top: 4px; }
p.noplot, p.problem { padding: 8px; border-left: 4px solid var(--na); background: var(--soft); }
p.problem { border-left-color: var(--bad); }
"""


def esc(text: object) -> str:
    """``text`` as HTML text (quotes escaped too, so it is safe inside attributes)."""
    return html.escape(str(text), quote=True)


def badge(verdict: str) -> str:
    """A coloured verdict label: green for a pass, red for a failure, grey otherwise."""
    cls = {"survived": "ok", "pass": "ok", "falsified": "bad", "fail": "bad"}.get(verdict, "na")
    return f'<span class="badge {cls}">{esc(verdict)}</span>'


def details(summary: str, body_html: str) -> str:
    """A collapsed block: ``summary`` (text) opens to ``body_html``."""
    return f"<details><summary>{esc(summary)}</summary>{body_html}</details>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, row_ids: Sequence[str] | None = None) -> str:
    """A table; ``rows`` hold cell HTML (already escaped), a cell starting with ``<td`` is used as is."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row)
        rid = f' id="{esc(row_ids[i])}"' if row_ids is not None else ""
        body.append(f"<tr{rid}>{cells}</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def page(title: str, header_html: str, sections_html: Sequence[str]) -> str:
    """The whole document."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{header_html}\n" + "\n".join(sections_html) + "\n</body></html>\n"
    )
