"""What every pytest process of the gate pays before its first test: no unused plugin, no uncached rewrite.

The gate starts pytest hundreds of times (two xdist workers per env, a process per teeth row, falsify's
and conformance's own runs). Two costs were paid in each: langsmith's pytest plugin, imported for
nothing (1.2-1.5 s to import), and the assertion rewrite of every package that ships a pytest plugin (all of
hypothesis, 1.5 s), done again each time because tox switched bytecode off. ``tox.ini`` now caches
bytecode outside the tree (``PYTHONPYCACHEPREFIX``); teeth copies the tree for each row to one path per
worker, so a worker compiles the modules its rows do not break once, and removes its copies at the end.
"""

from __future__ import annotations

import configparser
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tools import teeth

ROOT = Path(__file__).resolve().parents[2]


def _testenv_set_env() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini", encoding="utf-8")
    lines = [line.strip() for line in parser["testenv"]["set_env"].splitlines() if "=" in line]
    return {key.strip(): value.strip() for key, value in (line.split("=", 1) for line in lines)}


def test_tox_caches_bytecode_outside_the_tree_instead_of_switching_it_off() -> None:
    """With bytecode off, pytest rewrites hypothesis' 148 modules again in every process it starts."""
    set_env = _testenv_set_env()
    assert "PYTHONDONTWRITEBYTECODE" not in set_env
    assert set_env.get("PYTHONPYCACHEPREFIX", "").startswith("{env_dir}")


def test_the_pytest_options_switch_langsmiths_plugin_off() -> None:
    """Here in every env, whether or not langsmith is installed (the next test needs it installed)."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "-p no:langsmith_plugin" in options["addopts"]


@pytest.mark.skipif(importlib.util.find_spec("langsmith") is None, reason="langsmith is not installed here")
def test_a_pytest_run_here_does_not_import_langsmith() -> None:
    """langsmith's plugin is switched off in the project's pytest options: a collection never imports it."""
    probe = (
        "import sys, pytest\n"
        "pytest.main(['--collect-only', '-q', 'tests/structure/test_ci_failures.py'])\n"
        "print('langsmith modules:', sorted(m for m in sys.modules if m.split('.')[0] == 'langsmith'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert "langsmith modules: []" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


def _two_breaks_of_one_file() -> tuple[teeth.Break, teeth.Break]:
    by_file: dict[str, list[teeth.Break]] = {}
    for brk in teeth.BREAKS:
        by_file.setdefault(brk.file, []).append(brk)
    first, second = next(breaks for breaks in by_file.values() if len(breaks) >= 2)[:2]
    return first, second


def _pyc(prefix: Path, work: Path, relative: str, tag: str) -> Path:
    source = work / relative
    return prefix / source.parent.relative_to(source.anchor) / f"{source.stem}.{tag}.pyc"


class _FakePytest:
    """Stands in for teeth's pytest run: notes what bytecode it found, then caches some as Python would."""

    def __init__(self, prefix: Path, broken: str) -> None:
        self.prefix, self.broken = prefix, broken
        self.seen: list[tuple[Path, bool, bool]] = []  # (copy, the kept module's bytecode, the broken file's)

    def __call__(self, command: list[str], *, cwd: Path, **_: object) -> subprocess.CompletedProcess[str]:
        work = Path(cwd)
        kept = _pyc(self.prefix, work, "src/routeproof/__init__.py", "cpython-311")
        broken = [_pyc(self.prefix, work, self.broken, tag) for tag in ("cpython-311", "cpython-311-pytest-8.3.4")]
        self.seen.append((work, kept.exists(), any(path.exists() for path in broken)))
        for path in (kept, *broken):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\0")
        return subprocess.CompletedProcess(command, 1, stdout="1 failed in 0.01s\n", stderr="")


def test_a_worker_keeps_its_copys_bytecode_but_never_a_broken_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two rows on one worker: the same copy path, the first row's bytecode of an unbroken module is
    there for the second, and the broken file's (Python's and pytest's) is not."""
    prefix = tmp_path / "pycache"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    monkeypatch.setattr(teeth, "COPIES", teeth._Copies())
    first, second = _two_breaks_of_one_file()
    fake = _FakePytest(prefix, first.file)
    monkeypatch.setattr(subprocess, "run", fake)  # teeth calls subprocess.run
    try:
        assert teeth.run_break(first)[:2] == (True, "pytest exit 1: 1 failed in 0.01s")
        teeth.run_break(second)
    finally:
        teeth.COPIES.remove_all()
    (work_1, kept_1, broken_1), (work_2, kept_2, broken_2) = fake.seen
    assert work_1 == work_2
    assert (kept_1, broken_1) == (False, False)
    assert (kept_2, broken_2) == (True, False)


def test_teeth_removes_its_copies_and_their_bytecode_when_it_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each copy leaves 1.9-2.4 MB of bytecode under the prefix: teeth removes it, and only it."""
    prefix = tmp_path / "pycache"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    monkeypatch.setattr(teeth, "COPIES", teeth._Copies())
    brk = teeth.BREAKS[0]
    fake = _FakePytest(prefix, brk.file)
    monkeypatch.setattr(subprocess, "run", fake)
    assert teeth.main(["--only", brk.row, "--jobs", "2", "--report", str(tmp_path / "reports")]) == 0
    copies = {work for work, _, _ in fake.seen}
    assert copies
    assert not any(work.exists() for work in copies)
    assert not any((prefix / work.relative_to(work.anchor)).exists() for work in copies)
    assert prefix.exists()  # the cache of everything else stays
