"""What every pytest process of the gate pays before its first test: no unused plugin, no uncached rewrite.

The gate starts pytest hundreds of times (two xdist workers per env, a process per teeth row, falsify's
and conformance's own runs). Two costs were paid in each: langsmith's pytest plugin, imported for
nothing (1.5-2.2 s), and the assertion rewrite of every package that ships a pytest plugin (all of
hypothesis, 2 s), done again each time because tox switched bytecode off. ``tox.ini`` now caches
bytecode outside the tree (``PYTHONPYCACHEPREFIX``), and teeth removes each copy's own afterwards.
"""

from __future__ import annotations

import configparser
import importlib.util
import subprocess
import sys
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


def test_a_teeth_row_removes_its_copys_bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each row's copy leaves about 2.5 MB of bytecode under the prefix; 234 rows would leave 600 MB."""
    prefix = tmp_path / "pycache"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    left: list[Path] = []

    def fake_pytest(command: list[str], *, cwd: Path, **_: object) -> subprocess.CompletedProcess[str]:
        mine = prefix / Path(cwd).relative_to(Path(cwd).anchor) / "src" / "__pycache__"
        mine.mkdir(parents=True)
        (mine / "routeproof.cpython-311.pyc").write_bytes(b"\0")
        left.append(mine)
        return subprocess.CompletedProcess(command, 1, stdout="1 failed in 0.01s\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_pytest)  # teeth calls subprocess.run
    caught, detail, _ = teeth.run_break(teeth.BREAKS[0])
    assert (caught, detail) == (True, "pytest exit 1: 1 failed in 0.01s")
    assert len(left) == 1
    assert not left[0].exists()
    assert prefix.exists()  # the cache of everything else stays
