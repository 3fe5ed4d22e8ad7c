"""botocore is the ``bedrock`` extra: routeproof imports without it, and Bedrock says how to get it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Run in a fresh interpreter where importing botocore fails as it does when it is not installed.
_WITHOUT_BOTOCORE = textwrap.dedent(
    """
    import sys
    for name in [m for m in sys.modules if m == "botocore" or m.startswith("botocore.")]:
        del sys.modules[name]
    sys.modules["botocore"] = None  # `import botocore...` now raises ModuleNotFoundError

    import routeproof, routeproof.providers, routeproof.testing, routeproof.config, routeproof.factory
    from routeproof import ConfigError
    from routeproof.providers import BedrockProvider

    try:
        BedrockProvider(region="us-east-1", access_key_id="AKIDEXAMPLE0123456789", secret_access_key="k" * 40)
    except ConfigError as exc:
        print("provider:", exc)
    try:
        routeproof.config.resolve_aws_credentials(None, "driver.providers.aws")
    except ConfigError as exc:
        print("config:", exc)
    """
)


def test_routeproof_imports_without_botocore_and_bedrock_names_the_extra() -> None:
    """Without botocore routeproof imports; building Bedrock or its AWS chain is a ConfigError naming the extra."""
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_BOTOCORE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["provider", "config"]
    assert all("pip install 'routeproof[bedrock]'" in line for line in lines)
