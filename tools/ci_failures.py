"""``python tools/ci_failures.py LOG``: each failed tox env's last lines, printed again after tox's summary.

CI shows only a part of a long run's output: its head and its tail. A failed env's own lines (a
crosshair counterexample, a conformance case's verdict) sit in the middle and are cut, leaving only
the summary's ``FAIL code 1``. ``.ci/run`` keeps tox's output in a file and, when tox fails, runs this
tool, so the tail it shows holds what each failed env printed last.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

TAIL_LINES = 25
_ENDED = re.compile(r"^(?P<env>[\w.-]+): (?P<verdict>OK|FAIL|SKIP) ")


def failed_envs(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Each env that ended with ``<env>: FAIL``, with its own lines (from its first ``<env>:`` line on)."""
    found: list[tuple[str, list[str]]] = []
    after = 0  # the line after the previous env's end: tox runs one env after another
    for end, line in enumerate(lines):
        match = _ENDED.match(line)
        if match is None:
            continue
        env = match["env"]
        if match["verdict"] == "FAIL":
            start = next(i for i in range(after, end + 1) if lines[i].startswith(f"{env}: "))
            found.append((env, lines[start:end]))
        after = end + 1
    return found


def main(argv: list[str]) -> int:
    """Print the tail of every failed env in the log named by ``argv[0]``; always exits 0."""
    lines = Path(argv[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    for env, own in failed_envs(lines):
        print(f"==== {env} failed; its last {min(TAIL_LINES, len(own))} lines ====")
        print("\n".join(own[-TAIL_LINES:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
