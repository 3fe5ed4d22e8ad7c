"""tools/wheel_smoke.py's package checks refuse a dist without the sdist, or a wheel without py.typed."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tools import wheel_smoke


def _dist(tmp_path: Path, files: tuple[str, ...], *, sdist: bool = True) -> Path:
    version = wheel_smoke._version()
    with zipfile.ZipFile(tmp_path / f"routeproof-{version}-py3-none-any.whl", "w") as wheel:
        for name in files:
            wheel.writestr(name, "")
    if sdist:
        (tmp_path / f"routeproof-{version}.tar.gz").write_bytes(b"")
    return tmp_path


def test_a_complete_dist_passes(tmp_path: Path) -> None:
    """The wheel with py.typed, models.toml and the package, next to its sdist, is accepted."""
    assert wheel_smoke.check_dist(_dist(tmp_path, wheel_smoke.WHEEL_FILES)).suffix == ".whl"


def test_a_wheel_without_py_typed_is_refused(tmp_path: Path) -> None:
    """Type checkers would ignore an installed routeproof without py.typed: the check names it."""
    files = tuple(name for name in wheel_smoke.WHEEL_FILES if name != "routeproof/py.typed")
    with pytest.raises(wheel_smoke.SmokeFailure, match=r"py\.typed"):
        wheel_smoke.check_dist(_dist(tmp_path, files))


def test_a_dist_without_the_sdist_is_refused(tmp_path: Path) -> None:
    """python -m build must make both: a missing sdist fails the check."""
    with pytest.raises(wheel_smoke.SmokeFailure, match="one wheel and one sdist"):
        wheel_smoke.check_dist(_dist(tmp_path, wheel_smoke.WHEEL_FILES, sdist=False))
