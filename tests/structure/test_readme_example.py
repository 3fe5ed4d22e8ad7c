"""The README's "Using the router" example runs as written and imports only the public API.

The providers' hosts are answered in process by respx, in each API's documented shape (the mock
servers' default answers), so the example runs with its placeholder keys and no network.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import httpx
import pytest
import respx

from routeproof.mock.script import Shape
from routeproof.mock.shapes import DEFAULT_TEXT, RequestView, default_body, default_stream, encode_stream_item

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Using the router"
PUBLIC_IMPORTS = {"routeproof", "routeproof.providers"}


def _snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\n", text.index(HEADING)) + len("```python\n")
    return text[start : text.index("```", start)]


def _answer(shape: Shape) -> respx.types.SideEffectTypes:
    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        view = RequestView(model=body["model"], stream=bool(body.get("stream")), tool_name=None, include_usage=True)
        if not view.stream:
            return httpx.Response(200, json=default_body(shape, view))
        content = b"".join(encode_stream_item(shape, item) for item in default_stream(shape, view))
        return httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})

    return respond


def test_readme_example_imports_only_the_public_api() -> None:
    """Every routeproof import in the example is from ``routeproof`` or ``routeproof.providers``."""
    tree = ast.parse(_snippet())
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in modules if m and m.startswith("routeproof")} <= PUBLIC_IMPORTS


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The example answers (from the primary, Anthropic) and streams to exactly one MessageStop."""
    code = compile(_snippet(), "README.md", "exec")
    with respx.mock(assert_all_called=False) as mock:
        mock.post("https://api.anthropic.com/v1/messages").mock(side_effect=_answer(Shape.ANTHROPIC))
        mock.post("https://api.openai.com/v1/chat/completions").mock(side_effect=_answer(Shape.OPENAI))
        exec(code, {"__name__": "readme_example"})  # the README's own code
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(DEFAULT_TEXT)
    assert "ProviderKind.ANTHROPIC" in out[0]
    assert [line for line in out if line.startswith("MessageStop(")] == [out[-1]]
