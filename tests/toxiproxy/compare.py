"""Compare a probe's output from the embedded server with the transcript a real Toxiproxy 2.12.0 gave.

Addresses, ports, request ids and object ids are ignored. Timings are compared within a tolerance
(``SECONDS_TOL``/``MS_TOL``, or 15 %, whichever is larger); lines whose numbers are random draws
(jitter extremes, slicer cuts with variation, the toxicity 0.5 count) are checked against the
toxic's bounds instead of the real server's particular draw. Everything else must be identical.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["MS_TOL", "SECONDS_TOL", "compare_transcripts", "normalise"]

SECONDS_TOL = 0.12
MS_TOL = 50.0
REL_TOL = 0.15
_TRUNCATED_AT = 250  # the probes cut long bodies at 260/300/400 characters

_SUBSTITUTIONS = (
    (re.compile(r"127\.0\.0\.1:\d+"), "ADDR"),
    (re.compile(r"'X-Toxiproxy-Request-Id': '[0-9a-v]{20}'"), "'X-Toxiproxy-Request-Id': RID"),
    (re.compile(r"0x[0-9a-f]+"), "0xOBJ"),
    (re.compile(r"upstream echo port \d+"), "upstream echo port PORT"),
    (re.compile(r"APIConsumer is class-global: 127\.0\.0\.1 \d+"), "APIConsumer is class-global: HOST PORT"),
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def normalise(line: str) -> str:
    """The line with addresses, ports, request ids and object ids replaced by placeholders."""
    for pattern, replacement in _SUBSTITUTIONS:
        line = pattern.sub(replacement, line)
    return line


def _close(ref: float, got: float, absolute: float) -> bool:
    return abs(ref - got) <= max(absolute, REL_TOL * abs(ref))


def _numbers(line: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(line)]


def _jitter(ref: str, got: str) -> str | None:
    low, high = _numbers(got)
    return None if 45 <= low <= 100 <= high <= 100 + 50 + MS_TOL else f"jitter 100+-50 out of bounds: {got!r}"


def _slicer_variation(ref: str, got: str) -> str | None:
    sizes = [int(n) for n in _NUMBER.findall(got.split("[", 1)[1].split("]", 1)[0])]
    ok = sum(sizes) == 100 and all(3 <= s <= 14 for s in sizes) and got.endswith("eof")
    return None if ok else f"slicer avg 10 var 4: pieces must sum to 100 and be 3..14 bytes, got {got!r}"


def _toxicity(ref: str, got: str) -> str | None:
    delayed = int(_numbers(got)[0])
    return None if 3 <= delayed <= 17 else f"toxicity 0.5 over 20 connections: {delayed} delayed (P < 0.3 %)"


def _bandwidth(ref: str, got: str) -> str | None:
    r, g = _numbers(ref), _numbers(got)  # bytes, secs, B/s, recv count, max recv
    ok = r[0] == g[0] and _close(r[1], g[1], SECONDS_TOL) and _close(r[2], g[2], 0) and r[4] == g[4]
    return None if ok and abs(r[3] - g[3]) <= 8 else f"bandwidth: expected ~{ref!r}, got {got!r}"


def _arrivals(ref: str, got: str) -> str | None:
    """5 one-byte writes 50 ms apart through latency 200: all of ABCDE, in order, none before 200 ms,
    the last ~400 ms after the first send (how TCP groups the bytes into reads may differ)."""
    pairs = re.findall(r"\(b'([A-E]+)', (\d+)\)", got)
    data = "".join(d for d, _ in pairs)
    times = [int(t) for _, t in pairs]
    ok = data == "ABCDE" and min(times) >= 200 and _close(401, max(times), MS_TOL)
    return None if ok else f"latency not cumulative: expected ABCDE from 200 ms to ~401 ms, got {got!r}"


_SPECIAL: tuple[tuple[re.Pattern[str], Callable[[str, str], str | None]], ...] = (
    (re.compile(r"^min/max ms "), _jitter),
    (re.compile(r"^arrivals "), _arrivals),
    (re.compile(r"^bytes 100 recv sizes .* eof$"), _slicer_variation),
    (re.compile(r"^delayed \d+ of 20$"), _toxicity),
    (re.compile(r"^bytes \d+ secs .* B/s"), _bandwidth),
)
_MS_LINE = re.compile(r"^(rtt ms|arrivals )|, b'ping'\)$")


def _compare_line(raw_ref: str, raw_got: str) -> str | None:
    ref, got = normalise(raw_ref), normalise(raw_got)
    if ref == got:
        return None
    for pattern, check in _SPECIAL:
        if pattern.search(ref) and pattern.search(got):
            return check(ref, got)
    ref_text, got_text = _NUMBER.split(ref), _NUMBER.split(got)
    ref_nums, got_nums = _NUMBER.findall(ref), _NUMBER.findall(got)
    if ref_text == got_text and len(ref_nums) == len(got_nums):
        ms_line = bool(_MS_LINE.search(ref))
        for r, g in zip(ref_nums, got_nums, strict=True):
            if ms_line:
                if not _close(float(r), float(g), MS_TOL):
                    return f"milliseconds {g} vs {r}"
            elif "." in r or "." in g:
                if not _close(float(r), float(g), SECONDS_TOL):
                    return f"seconds {g} vs {r}"
            elif r != g:
                return f"{g} vs {r}"
        return None
    if len(raw_ref) >= _TRUNCATED_AT and len(raw_got) >= _TRUNCATED_AT:
        common = min(len(ref), len(got)) - 16  # the probe truncated both; placeholders shift the cut
        if ref[:common] == got[:common]:
            return None
    return "differs"


def compare_transcripts(reference: str, got: str, *, skip: Callable[[str], bool] = lambda _: False) -> list[str]:
    """Every difference, as ``line N: why\\n  real: ...\\n  ours: ...``; empty when they agree."""
    ref_lines = [x for x in reference.splitlines() if not skip(x)]
    got_lines = [x for x in got.splitlines() if not skip(x)]
    problems = []
    if len(ref_lines) != len(got_lines):
        problems.append(f"{len(got_lines)} lines, the real server's transcript has {len(ref_lines)}")
    for number, (r, g) in enumerate(zip(ref_lines, got_lines, strict=False), start=1):
        why = _compare_line(r, g)
        if why is not None:
            problems.append(f"line {number}: {why}\n  real: {r}\n  ours: {g}")
    return problems
