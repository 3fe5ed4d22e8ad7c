"""The README is a front door: short, installs from the checkout, and its example runs as written.

The example is run against ``routeproof mock`` (fresh mock providers on free ports, put in place of
the README's 9101/9102), from the repository root, in its own interpreter.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.docs.blocks import ROOT, python_blocks, run_block

README = ROOT / "README.md"
PUBLIC_IMPORTS = {"routeproof", "routeproof.providers"}
GATE_COMMANDS = ("python3 -m pip install tox && tox -e falsify", "python3 -m pip install tox && tox")


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_fits_on_a_screen_or_two() -> None:
    """At most 150 lines, with one ```python block (the example) and the sections a newcomer needs."""
    text = _text()
    assert len(text.splitlines()) <= 150
    assert len(python_blocks(README)) == 1
    sections = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert sections[:2] == ["Install", "A first call, against the mock providers"]
    assert {"Run the checks", "Read next"} <= set(sections)


def test_readme_installs_from_the_checkout() -> None:
    """The install line is the editable install from the checkout; the text says there is no index."""
    text = _text()
    assert "pip install -e '.[gateway]'" in text
    assert "no package index" in text
    assert "pip install 'routeproof" not in text  # no install from an index that does not have it


def test_readme_keeps_the_gate_commands_and_ci_runs_them() -> None:
    """Both quick-start commands are in the README verbatim, and .ci/run runs ``tox run`` and exits with its status."""
    text = _text()
    for command in GATE_COMMANDS:
        assert f"```bash\n{command}\n```" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert 'tox run --colored no 2>&1 | tee "$LOG"' in ci
    assert ci[ci.index('tox run --colored no 2>&1 | tee "$LOG"') + 1] == "rc=${PIPESTATUS[0]}"
    assert ci[-1] == 'exit "$rc"'


def test_readme_links_resolve() -> None:
    """Every relative link in the README names a file of the checkout."""
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", _text())
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_readme_example_imports_only_the_public_api() -> None:
    """Every routeproof import in the example is from ``routeproof`` or ``routeproof.providers``."""
    tree = ast.parse(python_blocks(README)[0].code)
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in modules if m and m.startswith("routeproof")} <= PUBLIC_IMPORTS


def test_readme_example_runs_against_the_mock(tmp_path: Path) -> None:
    """The example answers from the primary (Anthropic) mock in one successful attempt."""
    done = run_block(python_blocks(README)[0], tmp_path)
    assert done.returncode == 0, done.stderr
    expected = "[(<ProviderKind.ANTHROPIC: 'anthropic'>, <AttemptStatus.SUCCEEDED: 'succeeded'>)]"
    assert done.stdout.startswith("Hello from the routeproof mock.")
    assert done.stdout.strip().endswith(expected)
