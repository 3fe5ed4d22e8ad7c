"""Shared test configuration: Hypothesis profiles (HYPOTHESIS_PROFILE) and the stray-loop guard."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support import close_stray_event_loop, load_hypothesis_profiles

__all__ = ["close_stray_event_loop"]  # the autouse fixture, registered by being here

load_hypothesis_profiles()


# botocore's credential chain (Bedrock without explicit keys) reads the process environment and would
# ask the instance-metadata service, the container endpoint and ~/.aws: in tests it may ask nothing
# but what a test points it at (a temp file, a loopback server). Set before any test imports botocore.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
for _variable in (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
):
    os.environ.pop(_variable, None)


@pytest.fixture(autouse=True)
def _respx_modules_select_the_httpx_transport(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module that intercepts with respx selects the httpx transport, explicitly: respx patches
    httpcore's pool, and the default transport (aiohttp's, ``routeproof.transport``) never calls it."""
    module = getattr(request, "module", None)
    if module is None or "respx" not in vars(module):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROUTEPROOF_TRANSPORT", "httpx")
        yield
