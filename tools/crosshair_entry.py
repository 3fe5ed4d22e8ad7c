"""``python tools/crosshair_entry.py ARGS``: CrossHair's command line, with one of its own crashes mended.

A core function whose parameter is typed ``object`` (a parsed JSON body) lets CrossHair pick any
loaded class as that object's type. For a few third-party classes (seen: ``dateutil``'s
``parser._ymd``, loaded by botocore, the ``bedrock`` extra) CrossHair cannot build a constructor
signature and raises ``ValueError: wrong parameter order`` from inside the function under test,
which it then reports as that function's counterexample (and crashes printing it). Such a path says
nothing about routeproof: here it is abandoned (``IgnoreAttempt``, CrossHair's own "not an
interesting path"), and every other path, counterexample and crash is reported as before.
"""

from __future__ import annotations

import sys
from typing import Any

import crosshair.core
import crosshair.main
from crosshair.util import IgnoreAttempt

_original = crosshair.core.get_constructor_signature


def _constructor_signature(cls: type) -> Any:
    """CrossHair's constructor signature of ``cls``; a class it cannot describe ends the path, not the check."""
    try:
        return _original(cls)
    except ValueError as exc:
        if "wrong parameter order" not in str(exc) or cls.__module__.startswith("routeproof"):
            raise
        raise IgnoreAttempt(f"no constructor signature for {cls!r}: {exc}") from exc


crosshair.core.get_constructor_signature = _constructor_signature

if __name__ == "__main__":
    sys.argv = ["crosshair", *sys.argv[1:]]
    crosshair.main.main()
