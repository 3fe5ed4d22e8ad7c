"""The HTTP control API under ``/_mock/`` on each mock server's own port.

    POST /_mock/script    body: a JSON list of steps (or {"steps": [...]}) appended to the FIFO queue
    POST /_mock/default   body: one step, used whenever the queue is empty
    GET  /_mock/journal   the requests received so far and the TCP connection count
    GET  /_mock/state     shape, queued steps, default step, counters
    POST /_mock/reset     empty queue and journal, default step and connection count back to zero

A step is a JSON object whose keys are the field names of ``Scripted`` (see ``step_from_json``).
Control requests are neither journaled nor answered from the script queue, but their TCP connections
are counted in ``connections_accepted`` (the count is socket-level).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Protocol

from routeproof.mock.journal import JournalEntry, entry_to_json
from routeproof.mock.script import MockScriptError, Scripted, Shape, step_from_json, step_to_json

__all__ = ["CONTROL_PREFIX", "ControlTarget", "handle_control"]

CONTROL_PREFIX = "/_mock/"


class ControlTarget(Protocol):
    """What the control API drives: the scripting surface of a mock server."""

    @property
    def shape(self) -> Shape: ...
    @property
    def journal(self) -> tuple[JournalEntry, ...]: ...
    @property
    def connections_accepted(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def default(self) -> Scripted: ...
    def script(self, *steps: Scripted) -> None: ...
    def set_default(self, step: Scripted) -> None: ...
    def reset(self) -> None: ...


def _parse(body: bytes) -> object:
    try:
        return json.loads(body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MockScriptError(f"control body is not JSON: {body[:120]!r}") from exc


def handle_control(target: ControlTarget, method: str, path: str, body: bytes) -> tuple[int, Mapping[str, object]]:
    """Serve one control request: the HTTP status and the JSON object to answer with."""
    route = path.split("?", 1)[0][len(CONTROL_PREFIX) :]
    routes = {
        "script": "POST",
        "default": "POST",
        "reset": "POST",
        "journal": "GET",
        "state": "GET",
    }
    if route not in routes:
        return 404, {"error": f"unknown control route {path!r}; known: {sorted(routes)!r}"}
    if method != routes[route]:
        return 405, {"error": f"{path!r} takes {routes[route]}, not {method!r}"}
    try:
        if route == "script":
            data = _parse(body)
            if isinstance(data, Mapping):
                data = data.get("steps")
            if not isinstance(data, list):
                raise MockScriptError(f"expected a JSON list of steps, got {data!r}")
            target.script(*(step_from_json(s) for s in data))
            return 200, {"queued": target.pending}
        if route == "default":
            target.set_default(step_from_json(_parse(body)))
            return 200, {"default": step_to_json(target.default)}
    except MockScriptError as exc:
        return 400, {"error": str(exc)}
    if route == "reset":
        target.reset()
        return 200, {"reset": True}
    if route == "journal":
        entries = [entry_to_json(e) for e in target.journal]
        return 200, {
            "shape": target.shape.value,
            "connections_accepted": target.connections_accepted,
            "entries": entries,
        }
    return 200, {
        "shape": target.shape.value,
        "pending": target.pending,
        "default": step_to_json(target.default),
        "connections_accepted": target.connections_accepted,
        "requests": len(target.journal),
    }
