"""Mutation testing of ``core/``, sharded by module, with a per-module score and floor.

``python tools/mutation_gate.py run [MODULE ...] [--max-children N]`` runs one mutmut shard per
``core/`` module (all of them by default). Each shard works in ``mutants-shards/<module>/``: a copy
of ``src/``, ``tests/`` and ``config/`` plus a ``pyproject.toml`` whose ``[tool.mutmut]`` mutates
only that module (``only_mutate``) and selects only that module's tests (``SHARD_TESTS``), so
mutmut's stats run and clean run cover a few test files instead of all of ``tests/core``. Shards run
one after another; mutmut's own ``--max-children`` is the parallelism inside a shard.

``python tools/mutation_gate.py score [MODULE ...]`` re-reads finished shards (no run).

The score of a module is caught / (considered - reviewed equivalents), read from
``mutmut results --all true`` (never from the stats JSON: VERIFICATION.md §4). Mutants reviewed as
equivalent are listed with why in ``tools/mutation_equivalents.toml`` and shown in the output; an
entry with ``mutated`` (the mutant's '+' line) matches a survivor of its function by that line, since
mutmut renumbers a function's mutants whenever the function changes.

Speed (the gate must fit in an hour on 2 cores): each shard selects only its module's tests
(``SHARD_TESTS``; a pattern is expanded when the shard starts), ``tools/mutation_order.py`` runs each
mutant's tests fastest first so ``-x`` stops a killed mutant early, and the tox env sets the
``mutation`` Hypothesis profile (fewer examples, derandomized, no shrinking, no database). Modules
with no function mutmut mutates (tables, re-exports, contract-decorated functions only) are listed.
A module passes when its score is at least ``MUTATION_MIN_SCORE`` (default 0: report only); the
exit code is 1 when any shard fails, considers no mutant, or is below the floor.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "routeproof" / "core"
SHARDS_DIR = Path(os.environ.get("MUTATION_SHARDS_DIR", ROOT / "mutants-shards"))
EQUIVALENTS = Path(__file__).resolve().with_name("mutation_equivalents.toml")
CAUGHT = {"killed", "timeout", "caught by type check"}
IGNORED = {"skipped"}

_TYPES_TESTS = ["tests/core/test_types.py", "tests/core/test_types_validation.py", "tests/core/test_mut_types.py"]
_TRANSLATE_TESTS = ["tests/core/test_translate.py", "tests/core/test_normalize.py", "tests/core/test_mut_translate*.py"]
SHARD_TESTS: dict[str, list[str]] = {
    "admission": ["tests/core/test_admission_rule.py", "tests/core/test_mut_admission.py"],
    "backoff": ["tests/core/test_backoff.py", "tests/core/test_backoff_tiers_edges.py"],
    "boundary": ["tests/boundary/test_attempt_boundary.py", "tests/core/test_mut_boundary.py"],
    "call_plan": [
        "tests/core/test_kernel.py",
        "tests/core/test_kernel_properties.py",
        "tests/core/test_routing.py",
        "tests/core/test_mut_kernel.py",
    ],
    "capabilities": [
        "tests/core/test_capabilities.py",
        "tests/core/test_mut_capabilities.py",
        "tests/core/test_capability_routing.py",  # needed_capabilities / lacking_capabilities
    ],
    "classify": ["tests/core/test_classify.py", "tests/core/test_classify_edges.py"],
    "errors": ["tests/core/test_mut_errors.py", "tests/router/test_last_error.py"],
    "health": [
        "tests/core/test_health.py",
        "tests/core/test_health_edges.py",
        "tests/core/test_kernel.py",
        "tests/core/test_mut_health.py",
    ],
    "hedge": ["tests/core/test_hedge.py", "tests/traffic/test_hedge.py", "tests/traffic/test_hedge_config.py"],
    # issue 32's other core modules: their tests live in tests/traffic (these files start no redis-server)
    "affinity": ["tests/traffic/test_affinity.py"],
    "balance": ["tests/traffic/test_balance.py"],
    "rate_limit": ["tests/traffic/test_rate_limit.py"],
    "ratelimit_headers": ["tests/traffic/test_ratelimit_headers.py"],
    "retry_budget": ["tests/traffic/test_retry_budget.py"],
    "kernel": ["tests/core/test_kernel.py", "tests/core/test_kernel_properties.py", "tests/core/test_mut_kernel.py"],
    "latency": ["tests/core/test_latency.py", "tests/core/test_mut_latency.py"],
    "ledger": ["tests/core/test_ledger.py", "tests/core/test_ledger_pricing.py", "tests/core/test_mut_ledger.py"],
    "ledger_lemmas": ["tests/core/test_ledger_lemmas.py", "tests/core/test_mut_ledger_lemmas.py"],
    "ledger_state": ["tests/core/test_ledger.py", "tests/core/test_ledger_pricing.py", "tests/core/test_mut_ledger.py"],
    "normalize": ["tests/core/test_normalize.py", "tests/core/test_mut_normalize.py"],
    "pricing": ["tests/core/test_ledger_pricing.py", "tests/core/test_mut_pricing.py"],
    "retry_after": [
        "tests/core/test_classify.py",
        "tests/core/test_classify_edges.py",
        "tests/core/test_mut_retry_after.py",
    ],
    "routing": [
        "tests/core/test_routing.py",
        "tests/core/test_tiers.py",
        "tests/core/test_mut_routing.py",
    ],
    "sse": ["tests/core/test_sse.py", "tests/core/test_mut_sse.py"],
    "sse_dialects": ["tests/core/test_sse.py", "tests/core/test_mut_sse.py", "tests/wire/test_streamed_logprobs.py"],
    "cross_fields": ["tests/wire/test_cross_fields.py", "tests/wire/test_bedrock_field_table.py"],
    "stream_rules": ["tests/core/test_stream_rules.py", "tests/core/test_mut_stream_rules.py"],
    "tiers": ["tests/core/test_tiers.py", "tests/core/test_backoff_tiers_edges.py", "tests/core/test_mut_tiers.py"],
    "translate": _TRANSLATE_TESTS,
    "translate_common": _TRANSLATE_TESTS,
    "translate_emit": _TRANSLATE_TESTS,
    "translate_parse": _TRANSLATE_TESTS,
    "translate_response": _TRANSLATE_TESTS,
    "frozen": _TYPES_TESTS,
    "identity": [*_TYPES_TESTS, "tests/core/test_tiers.py"],
    "messages": [*_TYPES_TESTS, "tests/core/test_sampling_extras.py"],
    "outcomes": ["tests/core/test_outcomes.py"],
    "policy": [*_TYPES_TESTS, "tests/core/test_tiers.py"],
    "responses": _TYPES_TESTS,
    "responses_api": ["tests/responses/test_responses_api.py"],  # the Responses -> Chat rewrite (issue 24)
    "provider_variants": ["tests/providers/test_provider_variants.py", "tests/providers/test_gemini.py"],
    "wire": [
        "tests/core/test_normalize.py",
        "tests/core/test_sse.py",
        "tests/core/test_translate.py",
        "tests/core/test_mut_wire.py",
    ],
}


@dataclass(slots=True)
class ShardResult:
    """What one module's shard found."""

    module: str
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    survivors: list[str] = field(default_factory=list)
    equivalent: list[tuple[str, str]] = field(default_factory=list)  # (survivor, why it is equivalent)
    seconds: float | None = None
    run_failed: bool = False

    @property
    def considered(self) -> int:
        """Mutants that count: not skipped, not reviewed equivalent."""
        return sum(n for status, n in self.counts.items() if status not in IGNORED) - len(self.equivalent)

    @property
    def caught(self) -> int:
        """Mutants a test (or a timeout) killed."""
        return sum(n for status, n in self.counts.items() if status in CAUGHT)

    @property
    def score(self) -> float:
        """Percentage caught of considered (0 when nothing was considered)."""
        return 100 * self.caught / self.considered if self.considered else 0.0


_PLAIN_DECORATORS = {"staticmethod", "classmethod"}


def _mutable(path: Path) -> bool:
    """Whether mutmut 3.8 finds a function to mutate in ``path``: it mutates only function bodies, and
    skips every function with a decorator other than a lone ``@staticmethod``/``@classmethod``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [d.id if isinstance(d, ast.Name) else "" for d in node.decorator_list]
            if not node.decorator_list or (len(names) == 1 and names[0] in _PLAIN_DECORATORS):
                return True
    return False


def core_modules() -> list[str]:
    """Every module of ``core/``."""
    return sorted(p.stem for p in CORE.rglob("*.py") if p.stem != "__init__")


def core_path(module: str) -> Path:
    """The file of one core module, in ``core/`` or one of its packages (``core/formats/``)."""
    (path,) = CORE.rglob(f"{module}.py")
    return path


def modules() -> list[str]:
    """Every core module that has code to mutate. A module of constants, tables and re-exports
    (``constants``, ``types``), or whose only functions carry icontract decorators (their logic is
    the table they read, e.g. ``attempt_health``), has no mutant and no score: listed apart."""
    return [m for m in core_modules() if _mutable(core_path(m))]


def _shard_pyproject(module: str) -> str:
    """The repo's pyproject.toml with a ``[tool.mutmut]`` table for one module's shard."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    base = tomllib.loads(text)["tool"]["mutmut"]
    # a pattern names every matching file (read when the shard starts)
    tests = sorted({str(p.relative_to(ROOT)) for t in SHARD_TESTS.get(module, ["tests/core"]) for p in ROOT.glob(t)})
    table = {
        "source_paths": base["source_paths"],
        "only_mutate": [str(core_path(module).relative_to(ROOT))],
        "pytest_add_cli_args_test_selection": tests,
        "also_copy": [*base.get("also_copy", []), "tools"],
        # the exhaustive Kani-bound walks take minutes: every mutant they cover would rerun them;
        # tools.mutation_order runs each mutant's fastest tests first (-x stops at the first kill)
        "pytest_add_cli_args": [
            *base.get("pytest_add_cli_args", []),
            "-m",
            "not exhaustive",
            "-p",
            "tools.mutation_order",
        ],
    }
    body = "\n".join(f"{key} = {json.dumps(value)}" for key, value in table.items())
    without = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
    return f"{without.rstrip()}\n\n[tool.mutmut]\n{body}\n"


def _prepare(module: str) -> Path:
    work = SHARDS_DIR / module
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("src", "tests", "config"):
        shutil.copytree(ROOT / name, work / name, ignore=ignore)
    (work / "tools").mkdir()
    for name in ("__init__.py", "mutation_order.py", "redis_server.py"):  # tests/traffic's conftest imports the last
        shutil.copy2(ROOT / "tools" / name, work / "tools" / name)
    (work / "pyproject.toml").write_text(_shard_pyproject(module), encoding="utf-8")
    return work


def _mutmut() -> str:
    return shutil.which("mutmut") or str(Path(sys.executable).with_name("mutmut"))


def run_shard(module: str, max_children: int) -> ShardResult:
    """Run mutmut over one module in its own work directory and read its results."""
    work = _prepare(module)
    log = work / "mutmut-run.log"
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(
            [_mutmut(), "run", "--max-children", str(max_children)],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.monotonic() - start
    (work / "seconds.txt").write_text(f"{seconds:.1f}\n", encoding="utf-8")
    result = read_shard(module)
    result.run_failed = proc.returncode != 0
    return result


@dataclass(frozen=True, slots=True)
class Equivalent:
    """One reviewed equivalent mutant: why no input tells it apart, and its mutated line."""

    why: str
    mutated: str | None  # the stripped '+' line of ``mutmut show``; None: matched by name alone


def _equivalents() -> dict[str, Equivalent]:
    if not EQUIVALENTS.exists():
        return {}
    table = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return {
        name: Equivalent(str(entry["why"]), entry.get("mutated")) for name, entry in table.get("equivalent", {}).items()
    }


def _function(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0]


def _mutated_line(work: Path, mutant: str) -> str:
    """The mutated line of ``mutant`` (its diff's '+' line, stripped)."""
    diff = subprocess.run(
        [_mutmut(), "show", mutant], cwd=work, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    added = [line[1:].strip() for line in diff if line.startswith("+") and not line.startswith("+++")]
    return " | ".join(added)


def _equivalent_for(work: Path, mutant: str, equivalents: dict[str, Equivalent]) -> str | None:
    """The reviewed entry this survivor is, or None. An entry that records its mutated line matches a
    survivor of the same function with that line, whatever mutmut numbered it (numbers shift when the
    function changes); and a numbered entry whose line no longer matches does not count."""
    same_function = {name: e for name, e in equivalents.items() if _function(name) == _function(mutant)}
    if not same_function:
        return None
    if any(e.mutated is not None for e in same_function.values()):
        line = _mutated_line(work, mutant)
        for name, entry in same_function.items():
            if entry.mutated is not None and entry.mutated == line:
                return name
    named = same_function.get(mutant)
    return mutant if named is not None and named.mutated is None else None


def read_shard(module: str) -> ShardResult:
    """The statuses of one finished shard's mutants."""
    work = SHARDS_DIR / module
    result = ShardResult(module)
    if not (work / "mutants").exists():
        return result
    if (work / "seconds.txt").exists():  # the wall time of the shard's last run
        result.seconds = float((work / "seconds.txt").read_text(encoding="utf-8"))
    out = subprocess.run(
        [_mutmut(), "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    equivalents = _equivalents()
    for line in out.splitlines():
        if ": " not in line:
            continue
        name, status = (part.strip() for part in line.rsplit(": ", 1))
        result.counts[status] += 1
        if status == "survived":
            entry = _equivalent_for(work, name, equivalents)
            if entry is not None:  # the reason is kept now: the table may change while later shards run
                result.equivalent.append((name, equivalents[entry].why))
            else:
                result.survivors.append(name)
    return result


def report(results: list[ShardResult], floor: float) -> int:
    """Print one line per module and the survivors; 1 if any module fails the floor."""
    failed = False
    print(f"{'module':<20} {'score':>7} {'caught':>7} {'consid.':>7} {'equiv.':>6} {'time':>8}  statuses")
    for r in results:
        bad = r.run_failed or r.considered == 0 or r.score < floor
        failed |= bad
        seconds = f"{r.seconds:.0f} s" if r.seconds is not None else "-"
        print(
            f"{r.module:<20} {r.score:6.1f}% {r.caught:7d} {r.considered:7d} {len(r.equivalent):6d} {seconds:>8}  "
            f"{dict(sorted(r.counts.items()))}{'  FAIL' if bad else ''}"
        )
    without = sorted(set(core_modules()) - set(modules()))
    print(f"no function mutmut mutates (tables, re-exports, contract-decorated only): {', '.join(without)}")
    for r in results:
        for name, why in r.equivalent:
            print(f"  equivalent (reviewed): {name}: {why}")
        for name in r.survivors:
            print(f"  survived: {name}")
    total = sum((r.seconds or 0.0) for r in results)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"floor {floor:.0f} % per module; run time {total:.0f} s ({total / 60:.1f} min) over {len(results)} "
        f"shard(s); load average now {load} (1/5/15 min)"
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Run or score the shards named on the command line (all core modules by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "score"))
    parser.add_argument("modules", nargs="*", help="core module names (default: every core module)")
    parser.add_argument("--max-children", type=int, default=1)
    args = parser.parse_args(argv)
    chosen = args.modules or modules()
    unknown = sorted(set(chosen) - set(modules()))
    if unknown:
        parser.error(f"not core modules: {unknown}")
    os.environ.setdefault("HYPOTHESIS_PROFILE", "mutation")
    floor = float(os.environ.get("MUTATION_MIN_SCORE", "0"))
    results = []
    for module in chosen:
        if args.action == "run":
            print(f"shard {module}: mutmut run --max-children {args.max_children} ...", flush=True)
            results.append(run_shard(module, args.max_children))
        else:
            results.append(read_shard(module))
    return report(results, floor)


if __name__ == "__main__":
    sys.exit(main())
