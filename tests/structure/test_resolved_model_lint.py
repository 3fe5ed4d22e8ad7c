"""AC19 (Python form): ResolvedModel is built only through alias resolution."""

from __future__ import annotations

import re
from pathlib import Path


def test_ac19_resolved_model_built_only_by_alias_resolution() -> None:
    """AC19: production code builds ResolvedModel only inside core/routing.py's alias resolution."""
    src = Path(__file__).resolve().parents[2] / "src" / "routeproof"
    offenders = []
    for path in src.rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            constructs = re.search(r"\bResolvedModel\s*\(", line) and not line.lstrip().startswith("class ")
            if constructs and path.name != "routing.py":
                offenders.append(f"{path.relative_to(src)}:{number}: {line.strip()}")
    assert offenders == [], offenders
    routing = (src / "core" / "routing.py").read_text(encoding="utf-8")
    assert routing.count("ResolvedModel(") == 1  # the one constructor call, in _resolve
