"""The ``routeproof`` command. Each subcommand registers itself in ``_SUBCOMMANDS``.

routeproof mock --config FILE   start the mock provider servers a TOML file describes
routeproof report [DIR]         write DIR/index.html (default reports/) over the suites' JSON reports
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main"]


def _add_mock(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mock",
        help="serve scriptable mock LLM providers on loopback",
        description="Start the mock servers described by a TOML file; print 'name shape base_url' per "
        "server, then serve until SIGINT/SIGTERM. Script them over HTTP under /_mock/.",
    )
    parser.add_argument("--config", type=Path, required=True, help="TOML file with [[server]] tables")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.set_defaults(handler=_run_mock)


def _run_mock(args: argparse.Namespace) -> int:
    from routeproof.mock import MockFleet, MockScriptError, load_fleet_config

    try:
        configs = load_fleet_config(args.config)
    except (OSError, MockScriptError) as exc:
        print(f"routeproof mock: {exc}", file=sys.stderr)
        return 2

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with MockFleet(configs, host=args.host) as fleet:
                for server in fleet:
                    print(f"{server.name} {server.shape.value} {server.base_url}", flush=True)
                await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    try:
        asyncio.run(serve())
    except OSError as exc:
        print(f"routeproof mock: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


def _add_report(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write reports/index.html: one self-contained page over the suites' JSON reports",
        description="Write DIR/index.html, one self-contained HTML page (inline CSS and SVG charts, no "
        "script, no network) with a section per suite report found in DIR: verdicts.json (falsify), "
        "chaos.json, conformance-<impl>.json, bench.json. Charts need the 'report' extra (pygal). "
        "Exit status 1 when an input does not have its documented shape (the page is written anyway).",
    )
    parser.add_argument("directory", nargs="?", type=Path, default=Path("reports"), help="default: reports/")
    parser.set_defaults(handler=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from routeproof.report import write_report

    directory: Path = args.directory
    if not directory.is_dir():
        print(f"routeproof report: no such directory: {str(directory)!r}", file=sys.stderr)
        return 2
    target, report = write_report(directory)
    sections = ", ".join(report.sections) or "none"
    charts = "with charts" if report.plots else "tables only (install the 'report' extra for charts)"
    print(f"routeproof report: wrote {target} ({len(report.html) // 1024} KiB; sections: {sections}; {charts})")
    for problem in report.problems:
        print(f"routeproof report: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


# name -> function adding the subparser (and setting ``handler``); other subcommands go here.
_SUBCOMMANDS: dict[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = {
    "mock": _add_mock,
    "report": _add_report,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="routeproof", description="provider-routing-v1 reference tools")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _SUBCOMMANDS.values():
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``routeproof`` script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
