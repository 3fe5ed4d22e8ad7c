"""The ``routeproof`` command. Each subcommand registers itself in ``_SUBCOMMANDS``.

routeproof mock --config FILE   start the mock provider servers a TOML file describes
routeproof cost --config FILE   spend and limits per scope, from the ledger store agent.toml names
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
    "cost": _add_cost,
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
