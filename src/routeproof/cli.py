"""The ``routeproof`` command. Each subcommand registers itself in ``_SUBCOMMANDS``.

routeproof mock --config FILE   start the mock provider servers a TOML file describes
routeproof report [DIR]         write DIR/index.html (default reports/) over the suites' JSON reports
routeproof toxiproxy --port N   serve the embedded Toxiproxy-compatible API on 127.0.0.1:N
routeproof conformance run|breaks   run the conformance suite against a router (conformance/)
routeproof serve --config FILE  serve the router as an OpenAI/Anthropic-compatible gateway
routeproof providers --config FILE [--test]   list (and test) the configured providers
routeproof call --config FILE --alias A [--provider NAME] [--stream] PROMPT   one routed call
routeproof cost --config FILE   spend and limits per scope, from the ledger store agent.toml names
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from routeproof._version import __version__

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


def _add_toxiproxy(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "toxiproxy",
        help="serve a Toxiproxy-compatible fault-injection API on loopback",
        description="Serve Toxiproxy 2.12.0's HTTP API and toxics on 127.0.0.1 (proxies listen on 127.0.0.1 "
        "only) until SIGINT/SIGTERM. Drive it with any Toxiproxy client.",
    )
    parser.add_argument("--port", type=int, default=8474, help="API port (default: 8474; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="API address: 127.0.0.1 or localhost only")
    parser.add_argument("--config", type=Path, help="JSON array of proxies to create at start (/populate format)")
    parser.add_argument("--seed", type=int, help="seed for toxicity draws, jitter and slicer cuts")
    parser.set_defaults(handler=_run_toxiproxy)


def _run_toxiproxy(args: argparse.Namespace) -> int:
    import json

    from routeproof.toxiproxy import ApiError, ToxiproxyServer

    try:
        server = ToxiproxyServer(host=args.host, port=args.port, seed=args.seed)
        entries = json.loads(args.config.read_text(encoding="utf-8")) if args.config is not None else None
    except (OSError, ValueError) as exc:
        print(f"routeproof toxiproxy: {exc}", file=sys.stderr)
        return 2

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with server:
                if entries is not None:
                    await server.populate_from(entries)
                print(f"toxiproxy API on {server.url}", flush=True)
                await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    try:
        asyncio.run(serve())
    except ApiError as exc:
        print(f"routeproof toxiproxy: bad --config: {exc.message}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"routeproof toxiproxy: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


def _add_conformance(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from routeproof.conformance.cli import add_conformance_parser

    add_conformance_parser(subparsers)


def _add_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve the router as an OpenAI- and Anthropic-compatible HTTP gateway",
        description="Serve POST /v1/chat/completions and /v1/messages over the router an agent.toml "
        "describes (its [gateway] table names the keys and tenants) until SIGINT/SIGTERM, then stop "
        "gracefully. Needs the 'gateway' extra.",
    )
    parser.add_argument("--config", type=Path, required=True, help="agent.toml with a [gateway] table")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to bind, 0 for any (default: 8080)")
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="production mode: re-run under python -O (contract checks and asserts off; as PYTHONOPTIMIZE=1)",
    )
    parser.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="warning",
        help="log level of every logger: routeproof, uvicorn, httpx (default: warning; debug shows no secret)",
    )
    parser.set_defaults(handler=_gateway_command("run_serve"))


def _add_providers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "providers",
        help="list the configured providers; --test makes one tiny call to each",
        description="Print each provider's name, kind, model, endpoint, tier, pricing and health. "
        "Exit 0, or 1 when a --test call failed, or 2 when the configuration is invalid.",
    )
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--test", action="store_true", help="call each provider once and show pass/fail")
    parser.set_defaults(handler=_gateway_command("run_providers"))


def _add_call(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "call",
        help="make one routed call and show its attempt records",
        description="Route one prompt through the configured providers (or only --provider) and print "
        "the answer and every attempt. Exit 0, or 1 when the call failed, or 2 on a configuration error.",
    )
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--alias", default="default", help="model alias to call (default: default)")
    parser.add_argument("--provider", default=None, help="pin the call to this configured provider")
    parser.add_argument("--stream", action="store_true", help="stream the answer as it arrives")
    parser.add_argument("--max-tokens", type=int, default=256, help="max_tokens of the call (default: 256)")
    parser.add_argument("prompt", help="the user message")
    parser.set_defaults(handler=_gateway_command("run_call"))


def _gateway_command(name: str) -> Callable[[argparse.Namespace], int]:
    """The handler ``name`` of routeproof.gateway.commands, imported when it runs (needs the extra)."""

    def handler(args: argparse.Namespace) -> int:
        try:
            from routeproof.gateway import commands
        except ImportError as exc:
            print(f"routeproof {args.command}: {exc}; install routeproof[gateway]", file=sys.stderr)
            return 2
        run: Callable[[argparse.Namespace], int] = getattr(commands, name)
        return run(args)

    return handler


def _add_cost(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cost",
        help="show spend and limits per budget scope from the ledger store",
        description="Read the [ledger] table of agent.toml, open that store (memory, sqlite or redis) and "
        "print spent, reserved (calls in flight) and the limit for each budget scope. Needs no API keys.",
    )
    parser.add_argument("--config", type=Path, required=True, help="agent.toml with a [ledger] table")
    parser.set_defaults(handler=_run_cost)


def _run_cost(args: argparse.Namespace) -> int:
    from routeproof.ledger_store.report import run_cost

    return run_cost(args.config)


# name -> function adding the subparser (and setting ``handler``); other subcommands go here.
_SUBCOMMANDS: dict[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = {
    "mock": _add_mock,
    "report": _add_report,
    "toxiproxy": _add_toxiproxy,
    "conformance": _add_conformance,
    "serve": _add_serve,
    "providers": _add_providers,
    "call": _add_call,
    "cost": _add_cost,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="routeproof", description="provider-routing-v1 reference tools")
    parser.add_argument("--version", action="version", version=f"routeproof {__version__}")
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
