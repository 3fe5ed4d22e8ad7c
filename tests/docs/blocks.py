"""Find the ```python blocks of a Markdown page and run one as written, against fresh mock providers.

A block runs in its own interpreter from the repository root. The mock providers it names
(``127.0.0.1:9101``, Anthropic's shape, and ``127.0.0.1:9102``, OpenAI's: ``config/gateway-mock.toml``)
are started by ``routeproof mock`` on free ports for that block alone, and those two addresses in
the block are replaced by the ports actually bound; nothing else in the block is changed.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOCK_ADDRESSES = {"anthropic": "127.0.0.1:9101", "openai": "127.0.0.1:9102"}
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One ```python block: the page it is on, its first line number there, and its code."""

    page: Path
    line: int
    code: str

    @property
    def id(self) -> str:
        """``page:line``, for test ids and failure messages."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_blocks(page: Path) -> list[Block]:
    """Every ```python block of ``page``, in order (```text, ```console, ```toml blocks are not code)."""
    text = page.read_text(encoding="utf-8")
    return [
        Block(page=page, line=text.count("\n", 0, match.start()) + 2, code=match.group(1))
        for match in FENCE.finditer(text)
    ]


@contextlib.contextmanager
def mock_providers(tmp: Path) -> Iterator[dict[str, str]]:
    """Start ``routeproof mock`` (Anthropic and OpenAI shapes, free ports); yield name -> host:port."""
    config = tmp / "mock.toml"
    config.write_text(
        "".join(f'[[server]]\nname = "{name}"\nshape = "{name}"\nport = 0\n' for name in MOCK_ADDRESSES),
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "routeproof.cli", "mock", "--config", str(config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        bound: dict[str, str] = {}
        for _ in MOCK_ADDRESSES:
            name, _shape, base_url = process.stdout.readline().split()
            bound[name] = base_url.removeprefix("http://")
        yield bound
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def run_block(block: Block, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run ``block`` in a fresh interpreter from the repository root, with its mocks; return the result."""
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith(("ROUTEPROOF_", "BATUTA_"))}
    with mock_providers(tmp) as bound:
        code = block.code
        for name, written in MOCK_ADDRESSES.items():
            code = code.replace(written, bound[name])
        return subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
