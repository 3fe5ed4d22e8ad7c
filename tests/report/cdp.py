"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (test support).

Chromium is started with the flags the project allows (headless, no sandbox, no GPU, no QUIC, no
first-run, no background networking, no component update, no sync, a fresh profile) and talks CDP
over file descriptors 3 and 4: no port is opened. Messages are JSON terminated by a NUL byte.
Every wait is bounded; :class:`CDPError` names what timed out or failed.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "Browser", "CDPError", "PageCheck", "check_page", "find_chromium", "launch"]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


class CDPError(RuntimeError):
    """The browser answered a command with an error, died, or did not answer in time."""


def find_chromium() -> str | None:
    """The chromium executable: ``$CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH."""
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and (found := shutil.which(name)):
            return found
    return None


class Browser:
    """One running chromium and the CDP messages it sent (events are kept in :attr:`events`)."""

    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self._proc = proc
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next_id = 0
        self._selector = selectors.DefaultSelector()
        self._selector.register(from_browser, selectors.EVENT_READ)
        self.events: list[dict[str, Any]] = []
        self._replies: dict[int, dict[str, Any]] = {}

    def _read_one(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(timeout=left):
                raise CDPError("no message from chromium in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise CDPError(f"chromium closed the pipe (exit status {self._proc.poll()!r})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def _pump(self, deadline: float) -> None:
        message = self._read_one(deadline)
        if "id" in message:
            self._replies[message["id"]] = message
        else:
            self.events.append(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None, timeout_s: float = 30
    ) -> dict[str, Any]:
        """Send one command and wait for its result."""
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while ident not in self._replies:
            self._pump(deadline)
        reply = self._replies.pop(ident)
        if "error" in reply:
            raise CDPError(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_for(self, method: str, *, session: str | None = None, timeout_s: float = 30) -> dict[str, Any]:
        """The first event named ``method`` (for ``session``), waiting for it if it has not come yet."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return event
            seen = len(self.events)
            try:
                self._pump(deadline)
            except CDPError as exc:
                raise CDPError(f"waiting for {method}: {exc}") from exc

    def close(self) -> None:
        """Ask chromium to exit; kill it if it does not within 10 s."""
        with contextlib.suppress(CDPError, OSError):  # already gone or not answering: the kill below ends it
            self.call("Browser.close", timeout_s=5)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._selector.close()
        os.close(self._out)
        os.close(self._in)


@contextmanager
def launch(executable: str, profile: Path) -> Iterator[Browser]:
    """Start chromium headless with a fresh profile in ``profile``; stop it on exit."""
    profile.mkdir(parents=True, exist_ok=True)
    low_in, to_browser = os.pipe()
    from_browser, low_out = os.pipe()
    # moved above 9 so that placing them at 3 and 4 in the child cannot overwrite one with the other
    # (bash, not sh, does the placing: dash refuses descriptors above 9)
    child_in, child_out = fcntl.fcntl(low_in, fcntl.F_DUPFD, 10), fcntl.fcntl(low_out, fcntl.F_DUPFD, 10)
    os.close(low_in)
    os.close(low_out)
    script = f'exec "$0" "$@" 3<&{child_in} 4>&{child_out} {child_in}<&- {child_out}>&-'
    with (profile / "chromium.log").open("wb") as log:
        proc = subprocess.Popen(  # a fixed argument list; no input reaches the shell
            ["bash", "-c", script, executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(child_in, child_out),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    os.close(child_in)
    os.close(child_out)
    browser = Browser(proc, to_browser, from_browser)
    try:
        yield browser
    finally:
        browser.close()


# What the page looks like to the browser: sections, falsify rows, and every chart's drawn size.
_PROBE = """(() => {
  const q = (sel, root = document) => [...root.querySelectorAll(sel)];
  return {
    title: document.title,
    sections: q('section[data-section]').map(s => s.dataset.section),
    rows: q('#falsify tbody tr[id]').map(r => r.id),
    headers: q('section[data-section] th').map(th => th.textContent),
    scripts: q('script').length,
    figures: q('figure.plot').map(f => {
      const svg = f.querySelector('svg');
      if (!svg) return {key: f.dataset.key, svg: false};
      const box = svg.getBoundingClientRect();
      const style = getComputedStyle(svg);
      const drawn = q('g.series path, g.series rect, g.series circle', svg)
        .map(e => e.getBBox()).filter(b => b.width > 0 || b.height > 0).length;
      return {key: f.dataset.key, svg: true, width: box.width, height: box.height, drawn,
              visible: style.display !== 'none' && style.visibility !== 'hidden' && box.width > 0};
    }),
  };
})()"""


class PageCheck:
    """What loading one file showed: the probe's result, console errors and any non-file request."""

    def __init__(self, probe: dict[str, Any], errors: list[str], requests: list[str]) -> None:
        self.probe = probe
        self.errors = errors
        self.requests = requests


def check_page(browser: Browser, page: Path, screenshot: Path, *, width: int = 1280) -> PageCheck:
    """Open ``page`` in a new tab, probe it, save a full-page PNG to ``screenshot``."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.call(f"{domain}.enable", session=session)
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    already = len(browser.events)
    nav = browser.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    if nav.get("errorText"):
        raise CDPError(f"navigation to {page} failed: {nav['errorText']}")
    browser.wait_for("Page.loadEventFired", session=session)
    probe = browser.call("Runtime.evaluate", {"expression": _PROBE, "returnByValue": True}, session=session)["result"][
        "value"
    ]
    metrics = browser.call("Page.getLayoutMetrics", session=session)["cssContentSize"]
    shot = browser.call(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": metrics["height"], "scale": 1},
        },
        session=session,
    )
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    errors, requests = [], []
    for event in browser.events[already:]:
        if event.get("sessionId") != session:
            continue
        params = event.get("params", {})
        match event.get("method"):
            case "Runtime.exceptionThrown":
                errors.append(f"exception: {params['exceptionDetails'].get('text')}")
            case "Runtime.consoleAPICalled" if params.get("type") in ("error", "assert"):
                errors.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
            case "Log.entryAdded" if params["entry"].get("level") == "error":
                errors.append(f"log: {params['entry'].get('text')}")
            case "Network.requestWillBeSent":
                url = params["request"]["url"]
                if not url.startswith(("file:", "data:", "about:")):
                    requests.append(url)
    browser.call("Target.closeTarget", {"targetId": target})
    return PageCheck(probe, errors, requests)
