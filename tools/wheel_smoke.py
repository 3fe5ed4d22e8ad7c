"""Smoke-test the built package as a user gets it: the wheel in a fresh virtualenv, outside the checkout.

    python -m build --outdir DIST && python tools/wheel_smoke.py --dist DIST

Checks, each timed: the sdist and the wheel are there and the wheel carries ``py.typed`` and its
data files; ``pip install 'WHEEL[gateway]' openai`` into a new virtualenv; ``import routeproof``
resolves to that virtualenv (not ``src/``); ``routeproof --version`` prints the package's version;
``routeproof mock`` plus one routed call through ``Router``; ``routeproof serve`` in front of the
mock plus one call with the official OpenAI SDK. Exit 1 at the first failure, naming it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GATEWAY_KEY = "gw-smoke-key"
TIMEOUT_S = 300
MOCK_TOML = '[[server]]\nname = "openai"\nshape = "openai"\nport = 0\n'
AGENT_TOML = """
[driver.providers.openai]
base_url = "{mock_url}/v1"
model = "gpt-4o"

[gateway]
aliases = ["chat"]
grace_period_ms = 2000

[gateway.tenants.smoke]
key_env = "ROUTEPROOF_SMOKE_KEY"
"""
ROUTED_CALL = """
import asyncio
from routeproof import ChatRequest, Message, PrivacyTier, ProviderKind, Router, TenantPolicy, deadline_in, resolve
from routeproof.providers import OpenAIProvider

async def main() -> None:
    router = Router([OpenAIProvider(api_key="sk-smoke", base_url="{mock_url}/v1")])
    policy = TenantPolicy(privacy_tier=PrivacyTier.STANDARD, primary={{"chat": (ProviderKind.OPENAI, "gpt-4o")}})
    request = ChatRequest(messages=(Message.user("hi"),), alias="chat")
    response = await router.call_provider(request, resolve("chat", policy), deadline_in(20), policy)
    print(response.choices[0].content)
    await router.aclose()

asyncio.run(main())
"""
SDK_CALL = """
from openai import OpenAI
client = OpenAI(base_url="{gateway_url}/v1", api_key="{key}", max_retries=0, timeout=30)
answer = client.chat.completions.create(model="chat", messages=[{{"role": "user", "content": "hi"}}])
print(answer.choices[0].message.content)
"""
EXPECTED = "Hello from the routeproof mock."
WHEEL_FILES = ("routeproof/py.typed", "routeproof/models.toml", "routeproof/__init__.py")


class SmokeFailure(Exception):
    """A smoke check failed; the message says which and shows the output."""


def _version() -> str:
    namespace: dict[str, object] = {}
    exec((ROOT / "src" / "routeproof" / "_version.py").read_text(encoding="utf-8"), namespace)
    return str(namespace["__version__"])


def _run(args: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise SmokeFailure(f"{' '.join(args[:3])} ... exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@contextmanager
def _serving(args: list[str], *, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """Start a long-running command; yield its first line (its address); SIGTERM it at the end."""
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # both commands print their address first, or exit
        if not line:
            raise SmokeFailure(f"{' '.join(args[:2])} exited before printing its address ({proc.wait()!r})")
        yield line.strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def check_dist(dist: Path) -> Path:
    """The sdist and one wheel are in ``dist``; the wheel carries py.typed and the data files."""
    version = _version()
    wheels = sorted(dist.glob(f"routeproof-{version}-py3-none-any.whl"))
    sdists = sorted(dist.glob(f"routeproof-{version}.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise SmokeFailure(f"expected one wheel and one sdist of {version} in {dist}, found {sorted(dist.iterdir())}")
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    if missing := [name for name in WHEEL_FILES if name not in names]:
        raise SmokeFailure(f"{wheels[0].name} lacks {missing}")
    return wheels[0]


def smoke(wheel: Path, work: Path, step: list[tuple[str, float]]) -> None:
    """Install ``wheel`` into a fresh virtualenv under ``work`` and run the checks, appending timings."""

    def timed(name: str, start: float) -> None:
        step.append((name, time.monotonic() - start))

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"OPENAI_API_KEY": "sk-smoke", "ROUTEPROOF_SMOKE_KEY": GATEWAY_KEY, "PYTHONDONTWRITEBYTECODE": "1"}
    venv = work / "venv"
    bin_dir = venv / "bin"
    python, routeproof = str(bin_dir / "python"), str(bin_dir / "routeproof")
    start = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)], cwd=work, env=env)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, f"{wheel}[gateway]", "openai"], cwd=work, env=env)
    timed("fresh virtualenv + pip install wheel[gateway] openai", start)

    start = time.monotonic()
    where = _run(
        [python, "-c", "import routeproof; print(routeproof.__file__, routeproof.__version__)"], cwd=work, env=env
    )
    if not where.startswith(str(venv)) or where.split()[1] != _version():
        raise SmokeFailure(f"import routeproof resolved to {where.strip()!r}, not the wheel in {venv}")
    shown = _run([routeproof, "--version"], cwd=work, env=env).strip()
    if shown != f"routeproof {_version()}":
        raise SmokeFailure(f"routeproof --version printed {shown!r}")
    timed("import + routeproof --version", start)

    (work / "mock.toml").write_text(MOCK_TOML, encoding="utf-8")
    with ExitStack() as stack:
        start = time.monotonic()
        mock_url = stack.enter_context(_serving([routeproof, "mock", "--config", "mock.toml"], cwd=work, env=env))
        mock_url = mock_url.split()[-1]
        answer = _run([python, "-c", ROUTED_CALL.format(mock_url=mock_url)], cwd=work, env=env).strip()
        if answer != EXPECTED:
            raise SmokeFailure(f"the routed call answered {answer!r}")
        timed("routeproof mock + one routed call", start)

        start = time.monotonic()
        (work / "agent.toml").write_text(AGENT_TOML.format(mock_url=mock_url), encoding="utf-8")
        banner = stack.enter_context(
            _serving([routeproof, "serve", "--config", "agent.toml", "--port", "0"], cwd=work, env=env)
        )
        gateway_url = banner.split()[3]
        sdk = SDK_CALL.format(gateway_url=gateway_url, key=GATEWAY_KEY)
        answer = _run([python, "-c", sdk], cwd=work, env=env).strip()
        if answer != EXPECTED:
            raise SmokeFailure(f"the OpenAI SDK through routeproof serve got {answer!r}")
        timed("routeproof serve + one OpenAI SDK call", start)


def main(argv: list[str] | None = None) -> int:
    """Run every check; print each one's time; 1 at the first failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dist", type=Path, required=True, help="the directory python -m build wrote")
    args = parser.parse_args(argv)
    steps: list[tuple[str, float]] = []
    try:
        wheel = check_dist(args.dist)
        with tempfile.TemporaryDirectory(prefix="routeproof-wheel-") as work:
            smoke(wheel, Path(work), steps)
    except SmokeFailure as exc:
        print(f"wheel smoke test FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        for name, seconds in steps:
            print(f"{seconds:7.1f} s  {name}")
    print(f"wheel smoke test passed: {wheel.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
