"""``routeproof conformance run|breaks|matrix``: the command-line face of the suite."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

__all__ = ["add_conformance_parser", "profile_path", "read_expected"]

DEFAULT_JOBS = 6
LAUNCHED_JOBS = 4  # a launched gateway is a process per case besides the runner: fewer at once on 2 cores
BREAKS_AT_ONCE = 4  # planted-break runs in flight together (each with --jobs harness processes)


def add_conformance_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``conformance`` and its two subcommands."""
    parser = subparsers.add_parser(
        "conformance",
        help="run the provider-routing-v1 conformance suite against a router",
        description="Run the conformance cases against a router driven by a JSON-lines harness "
        "(conformance/PROTOCOL.md) or an OpenAI-compatible gateway; write reports/conformance-<impl>.{md,json,xml}.",
    )
    sub = parser.add_subparsers(dest="conformance_command", required=True, metavar="ACTION")
    run = sub.add_parser("run", help="run the cases against one implementation")
    target = run.add_mutually_exclusive_group()
    target.add_argument("--harness", metavar="CMD", help="shell command starting a harness (JSON lines on stdio)")
    target.add_argument("--gateway", metavar="URL", help="base URL of an OpenAI-compatible gateway")
    run.add_argument(
        "--profile",
        type=Path,
        help="gateway profile: a TOML file or a name under conformance/profiles/; a profile with [launch] "
        "starts the gateway itself, per case (no --gateway URL)",
    )
    run.add_argument(
        "--expect-failures", type=Path, help="file of case ids expected to fail (one per line, '# reason')"
    )
    run.add_argument("--junit", type=Path, metavar="FILE", help="also write the JUnit XML report to FILE (for CI)")
    run.add_argument(
        "--rerun-alone",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run a case that failed only timing checks once more, alone, after the others; its verdict is "
        "the second run's, the first run's failures are reported (default: on)",
    )
    _common(run)
    run.set_defaults(handler=_run)
    breaks = sub.add_parser("breaks", help="plant each of the harness's breaks and check the cases of its rule kill it")
    breaks.add_argument("--harness", metavar="CMD", required=True, help="harness command; '--break NAME' is appended")
    _common(breaks)
    breaks.set_defaults(handler=_breaks)
    matrix = sub.add_parser(
        "matrix", help="cases x implementations from several conformance-<impl>.json reports (Markdown and JSON)"
    )
    matrix.add_argument(
        "reports_in",
        nargs="+",
        type=Path,
        metavar="REPORT.json",
        help="conformance-<impl>.json files, or directories of them",
    )
    matrix.add_argument("--reports", type=Path, default=Path("reports"), help="where conformance-matrix.* go")
    matrix.set_defaults(handler=_matrix)


def _matrix(args: argparse.Namespace) -> int:
    from routeproof.conformance.matrix import load_column, merge_columns, report_paths, write_matrix

    try:
        path = write_matrix(args.reports_in, args.reports)
    except (OSError, ValueError, KeyError) as exc:
        print(f"routeproof conformance matrix: {exc}", file=sys.stderr)
        return 2
    for column in merge_columns([load_column(p) for p in report_paths(args.reports_in)]):
        must = column.totals()["must"]
        verdict = "conforms" if column.conforms() else "does not conform"
        counts = f"MUST {must['pass']} pass, {must['fail']} fail, {must['n/a']} n/a"
        print(f"{column.name} {column.version}: {verdict} ({counts})")
    print(f"-> {path}")
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="ID|PREFIX",
        help="case ids or id/rule prefixes (repeatable, or comma-separated)",
    )
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument(
        "--cases", type=Path, default=Path("conformance") / "cases", help="case directory (default: conformance/cases)"
    )
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="report directory (default: reports)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help=f"cases run concurrently (default {DEFAULT_JOBS}; {LAUNCHED_JOBS} for a launched gateway)",
    )


def read_expected(path: Path) -> dict[str, str]:
    """``case-id  # reason`` lines; blank lines and lines starting with '#' are ignored."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        body, _, reason = line.partition("#")
        if body.strip():
            out[body.strip()] = reason.strip()
    return out


def profile_path(value: Path) -> Path:
    """A profile file, or the name of one under conformance/profiles/ (``routeproof-serve``)."""
    if value.suffix or value.exists():
        return value
    return Path("conformance") / "profiles" / f"{value}.toml"


def _selected(args: argparse.Namespace) -> list[Mapping[str, Any]]:
    from routeproof.conformance.cases import load_cases, select

    only = [part for item in args.only for part in item.split(",")]
    return select(load_cases(args.cases), only)


def _print_list(cases: Sequence[Mapping[str, Any]]) -> None:
    for c in cases:
        print(f"{c['id']:<44} {c.get('level', 'must'):<9} {c['rule']:<24} {c.get('title', '')}")
    print(f"{len(cases)} cases")


def _progress(result: Any) -> None:
    mark = {"pass": ".", "fail": "F", "n/a": "-"}[result.verdict]
    print(mark, end="", flush=True)


def _run(args: argparse.Namespace) -> int:
    from routeproof.conformance.cases import CaseError
    from routeproof.conformance.launch import LaunchedGateway
    from routeproof.conformance.report import level_markdown, scorecard_markdown, write_report
    from routeproof.conformance.run import run_suite
    from routeproof.conformance.subjects import GatewaySubject, load_profile

    try:
        cases = _selected(args)
    except (CaseError, OSError) as exc:
        print(f"routeproof conformance: {exc}", file=sys.stderr)
        return 2
    if args.list:
        _print_list(cases)
        return 0
    if not cases:
        print("routeproof conformance: no case matches --only", file=sys.stderr)
        return 2
    gateway: GatewaySubject | None = None
    if args.profile is not None and not args.harness:
        try:
            profile = load_profile(profile_path(args.profile))
        except (OSError, ValueError, KeyError) as exc:
            print(f"routeproof conformance: profile {str(args.profile)!r}: {exc}", file=sys.stderr)
            return 2
        if profile.launch is not None:  # the runner starts the gateway itself, per case
            args.reports.mkdir(parents=True, exist_ok=True)
            gateway = LaunchedGateway(profile, log_path=args.reports / f"conformance-{profile.name}.log")
            args.jobs = args.jobs or LAUNCHED_JOBS
        elif args.gateway:
            gateway = GatewaySubject(args.gateway, profile)
        else:
            print(
                f"routeproof conformance: profile {profile.name!r} has no [launch]: give --gateway URL", file=sys.stderr
            )
            return 2
    elif args.gateway:
        print("routeproof conformance: --gateway needs --profile", file=sys.stderr)
        return 2
    elif not args.harness:
        print("routeproof conformance: give --harness CMD or --gateway URL --profile FILE", file=sys.stderr)
        return 2
    args.reports.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(
        run_suite(
            cases,
            harness=args.harness,
            gateway=gateway,
            jobs=args.jobs or DEFAULT_JOBS,
            stderr_path=args.reports / "conformance-harness.stderr",
            progress=_progress,
            rerun_alone=args.rerun_alone,
        )
    )
    expected = read_expected(args.expect_failures) if args.expect_failures else None
    path = write_report(result, args.reports, expected_failures=expected)
    if args.junit is not None:
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        args.junit.write_bytes(path.with_suffix(".xml").read_bytes())
    print()
    print(f"{result.impl} {result.version}: {len(result.results)} cases in {result.wall_s:.1f} s -> {path}")
    print(level_markdown(result.results))
    print(scorecard_markdown(result.results))
    failed = {r.id for r in result.results if r.verdict == "fail"}
    for r in result.results:
        for f in r.failed_under_load:
            print(f"RUN AGAIN ALONE {r.id} ({r.verdict} alone): {f.line()}")
        if r.verdict == "fail":
            first = r.failures[0]
            print(f"FAIL {r.id}: {first.line()}")
    if expected is None:
        return 1 if failed else 0
    ran = {r.id for r in result.results}
    unexpected = sorted(failed - set(expected))
    stale = sorted((set(expected) & ran) - failed)
    for case_id in unexpected:
        print(f"UNEXPECTED FAILURE {case_id}")
    for case_id in stale:
        print(f"EXPECTED TO FAIL BUT DID NOT: {case_id} ({expected[case_id]})")
    print(f"{len(failed & set(expected))} expected failures, {len(unexpected)} unexpected, {len(stale)} stale")
    return 1 if unexpected or stale else 0


def mark_twins(rows: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """Each break's ``twins``: the other breaks of one of its rules that fail every case killing it
    with exactly the same checks. A break with a twin is not isolated: no case fails it for a
    reason of its own (issue 28 item 2), so its family needs a case that separates the two."""
    out = [dict(row) for row in rows]
    for row in out:
        rules = set(cast("list[str]", row["rules"]))
        mine = cast("dict[str, list[str]]", row["evidence"])
        row["twins"] = sorted(
            str(other["break"])
            for other in out
            if other is not row
            and rules & set(cast("list[str]", other["rules"]))
            and mine
            and all(
                cast("dict[str, list[str]]", other["evidence"]).get(case) == checks for case, checks in mine.items()
            )
        )
    return out


def _breaks(args: argparse.Namespace) -> int:
    from routeproof.conformance.cases import CaseError, select
    from routeproof.conformance.report import write_breaks_report, write_report
    from routeproof.conformance.run import run_suite
    from routeproof.conformance.subjects import HarnessSubject

    try:
        cases = _selected(args)
    except (CaseError, OSError) as exc:
        print(f"routeproof conformance: {exc}", file=sys.stderr)
        return 2

    async def main() -> Sequence[dict[str, object]]:
        probe = HarnessSubject(args.harness)
        try:
            info = await probe.start()
        finally:
            await probe.aclose()
        breaks: Mapping[str, Sequence[str]] = info.get("breaks", {})
        if not breaks:
            raise CaseError(f"the harness {args.harness!r} declares no breaks")
        if args.list:
            for name, rules in breaks.items():
                print(f"{name}: {', '.join(rules)} -> {len(select(cases, rules))} cases")
            return []
        # The baseline: a case kills a break only by failing a check it passes without the break
        # (routeproof's own expected failures must not count as kills).
        wanted = {c["id"] for rules in breaks.values() for c in select(cases, rules)}
        base = await run_suite(
            [c for c in cases if c["id"] in wanted],
            harness=args.harness,
            jobs=args.jobs or DEFAULT_JOBS,
            stderr_path=args.reports / "conformance-breaks.stderr",
            rerun_alone=True,  # a baseline timing failure under load would hide a break's kill
        )
        baseline = {r.id: {f.check for f in r.failures} for r in base.results}
        write_report(base, args.reports / "breaks")
        failing = sorted(i for i, c in baseline.items() if c)
        print(f"baseline (no break): {len(failing)} of {len(base.results)} cases fail: {failing}", flush=True)
        for r in base.results:
            for f in r.failures:
                print(f"  baseline {r.id}: {f.line()}", flush=True)
        gate = asyncio.Semaphore(BREAKS_AT_ONCE)

        async def one(name: str, rules: Sequence[str]) -> dict[str, object]:
            subset = select(cases, rules)
            command = f"{args.harness} --break {shlex.quote(name)}"
            async with gate:
                result = await run_suite(
                    subset,
                    harness=command,
                    jobs=args.jobs or DEFAULT_JOBS,
                    stderr_path=args.reports / "conformance-breaks.stderr",
                )
            write_report(result, args.reports / "breaks")  # each break's evidence, case by case
            # each killing case with the checks that killed it (those it passes without the break)
            evidence = {
                r.id: sorted({f.check for f in r.failures} - baseline.get(r.id, set()))
                for r in result.results
                if r.verdict == "fail" and {f.check for f in r.failures} - baseline.get(r.id, set())
            }
            killed_by = list(evidence)
            verdict = "killed" if killed_by else "SURVIVED"
            print(f"{name:<24} {verdict:<9} by {len(killed_by)}/{len(subset)}: {', '.join(killed_by)}", flush=True)
            return {
                "break": name,
                "rules": list(rules),
                "cases": len(subset),
                "killed_by": killed_by,
                "evidence": evidence,
                "wall_s": round(result.wall_s, 1),
            }

        rows = await asyncio.gather(*(one(name, rules) for name, rules in breaks.items()))
        return mark_twins(rows)

    args.reports.mkdir(parents=True, exist_ok=True)
    try:
        rows = list(asyncio.run(main()))
    except CaseError as exc:
        print(f"routeproof conformance: {exc}", file=sys.stderr)
        return 2
    if args.list:
        return 0
    path = write_breaks_report(rows, args.reports)
    survivors = [r["break"] for r in rows if not r["killed_by"]]
    for row in rows:
        if row.get("twins"):
            twins = ", ".join(cast("list[str]", row["twins"]))
            print(f"NOT ISOLATED {row['break']}: the same cases fail the same checks as {twins}", flush=True)
    print(f"{len(rows) - len(survivors)}/{len(rows)} planted breaks killed -> {path}")
    return 1 if survivors else 0
