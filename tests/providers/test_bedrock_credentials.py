"""Bedrock credentials through botocore's own chain (profile, container endpoint), refreshed per request.

The chain reads the process environment: ``tests/conftest.py`` points it at nothing (no instance
metadata, /dev/null config files); each test here points it at a temp file or a loopback server.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from botocore.credentials import RefreshableCredentials  # type: ignore[import-untyped]
from botocore.exceptions import CredentialRetrievalError  # type: ignore[import-untyped]

from routeproof.config import build_providers, load_config
from routeproof.core.types import AttemptFailureKind
from routeproof.errors import ConfigError, ProviderCallFailed
from routeproof.providers.bedrock import SIGNING_LOG_FILTER, BedrockProvider

from .conftest import BEDROCK_MODEL, BEDROCK_OK, request_hello

PROFILE_KEY = "AKIDPROFILE0000CANARY"
PROFILE_SECRET = "profile-SECRET-canary-value"
AGENT = '[driver.providers.bedrock]\nmodel = "m"\nregion = "us-east-1"\n'


def _load_bedrock(tmp_path: Path, text: str) -> BedrockProvider:
    path = tmp_path / "agent.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path, environ={})
    provider = build_providers(config, httpx.AsyncClient())["bedrock"]
    assert isinstance(provider, BedrockProvider)
    return provider


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load_bedrock(tmp_path, text)
    return str(info.value)


@pytest.fixture
def credentials_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shared credentials file with one profile, where botocore looks for it."""
    path = tmp_path / "credentials"
    path.write_text(
        f"[canary]\naws_access_key_id = {PROFILE_KEY}\naws_secret_access_key = {PROFILE_SECRET}\n", encoding="utf-8"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(path))
    return path


def test_profile_from_the_shared_credentials_file_signs_requests(tmp_path: Path, credentials_file: Path) -> None:
    """``profile = "canary"`` resolves that profile's keys from the credentials file and signs with them."""
    provider = _load_bedrock(tmp_path, AGENT + 'profile = "canary"\n')
    headers = provider.sign(provider.url_for(BEDROCK_MODEL), b"{}")
    assert f"Credential={PROFILE_KEY}/" in headers["Authorization"]
    assert "X-Amz-Security-Token" not in headers
    assert PROFILE_SECRET not in repr(provider)


def test_default_profile_is_used_without_explicit_keys(
    tmp_path: Path, credentials_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without keys in the environment and without ``profile``, AWS_PROFILE's profile is resolved."""
    monkeypatch.setenv("AWS_PROFILE", "canary")
    provider = _load_bedrock(tmp_path, AGENT)
    assert f"Credential={PROFILE_KEY}/" in provider.sign(provider.url_for(BEDROCK_MODEL), b"{}")["Authorization"]


def test_unknown_profile_is_a_config_error_naming_it(tmp_path: Path, credentials_file: Path) -> None:
    """A profile that is in no file fails at load, naming the profile and the key it came from."""
    message = _error(tmp_path, AGENT + 'profile = "nope"\n')
    assert "driver.providers.bedrock" in message
    assert "'nope'" in message


def test_no_credentials_anywhere_names_what_was_tried(tmp_path: Path) -> None:
    """Nothing in the environment, the files, a container or instance metadata: one ConfigError listing it."""
    message = _error(tmp_path, AGENT)
    for tried in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "shared config", "SSO", "container", "instance"):
        assert tried in message


@pytest.mark.parametrize("profile", ["", "has space", "x" * 65, "bad\nline"])
def test_malformed_profile_is_refused(tmp_path: Path, profile: str) -> None:
    """A profile that cannot be an AWS profile name is refused at load, naming the key."""
    assert "driver.providers.bedrock.profile" in _error(tmp_path, AGENT + f"profile = {json.dumps(profile)}\n")


def test_profile_is_bedrock_only(tmp_path: Path) -> None:
    """``profile`` on a non-Bedrock provider is refused, not ignored."""
    path = tmp_path / "agent.toml"
    path.write_text('[driver.providers.anthropic]\nmodel = "c"\nprofile = "canary"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="only bedrock takes an AWS profile"):
        load_config(path, environ={"ANTHROPIC_API_KEY": "k"})


class _Refresher:
    """A refresh function whose every call returns new keys that expire within the refresh window."""

    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[str] = []

    def __call__(self) -> dict[str, str]:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        expiry = datetime.now(tz=UTC) + timedelta(seconds=30)  # < botocore's 10-minute mandatory window
        n = self.calls
        return {
            "access_key": f"AKIDREFRESH{n}",
            "secret_key": f"refresh-secret-{n}",
            "token": f"refresh-token-{n}",
            "expiry_time": expiry.isoformat(),
        }


@pytest.mark.asyncio
async def test_refreshable_credentials_refresh_between_calls_off_the_event_loop() -> None:
    """Each request signs with keys fetched just then: two calls carry two different refreshed keys,
    and the refresh ran in a worker thread, not on the event loop's thread."""
    refresher = _Refresher()
    credentials = RefreshableCredentials.create_from_metadata(
        metadata=refresher(), refresh_using=refresher, method="test-refresh"
    )
    seen: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers["authorization"], request.headers["x-amz-security-token"]))
        return httpx.Response(200, json=BEDROCK_OK, headers={"x-amzn-requestid": "r"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        provider = BedrockProvider(region="us-east-1", credentials=credentials, client=client)
        for _ in range(2):
            await provider.complete(request_hello(), BEDROCK_MODEL, timeout_at=float("inf"))
    assert [token for _, token in seen] == ["refresh-token-2", "refresh-token-3"]
    assert "Credential=AKIDREFRESH2/" in seen[0][0]
    assert "Credential=AKIDREFRESH3/" in seen[1][0]
    assert refresher.threads[0] == threading.main_thread().name  # the creation call above
    assert all(name != threading.main_thread().name for name in refresher.threads[1:])


def test_keys_and_a_credentials_object_are_exclusive() -> None:
    """A provider given both static keys and a credentials object refuses rather than pick one."""
    credentials = RefreshableCredentials.create_from_metadata(
        metadata=_Refresher()(), refresh_using=_Refresher(), method="test"
    )
    with pytest.raises(ValueError, match="not both"):
        BedrockProvider(region="us-east-1", access_key_id="a", secret_access_key="b", credentials=credentials)


class _ContainerCredentials(BaseHTTPRequestHandler):
    """The ECS/EKS container credentials endpoint's answer (a loopback stand-in)."""

    def do_GET(self) -> None:
        expiry = (datetime.now(tz=UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = json.dumps(
            {
                "AccessKeyId": "AKIDCONTAINER0CANARY",
                "SecretAccessKey": "container-SECRET",
                "Token": "container-token-SECRET",
                "Expiration": expiry,
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the default writes every request to stderr."""


@pytest.fixture
def container_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A loopback container-credentials server, named by AWS_CONTAINER_CREDENTIALS_FULL_URI."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ContainerCredentials)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v2/credentials/canary"
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_container_credentials_from_a_loopback_endpoint(tmp_path: Path, container_endpoint: str) -> None:
    """The container provider of botocore's chain fetches refreshable role credentials from the endpoint."""
    provider = _load_bedrock(tmp_path, AGENT)
    assert isinstance(provider._credentials, RefreshableCredentials)
    headers = provider.sign(provider.url_for(BEDROCK_MODEL), b"{}")
    assert "Credential=AKIDCONTAINER0CANARY/" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "container-token-SECRET"


@pytest.mark.parametrize(
    ("message", "secret"),
    [
        (
            "CanonicalRequest:\nPOST\n/\n\nhost:h\nx-amz-security-token:tok-UNSEEN-1\n\nhost;x-amz-security-token",
            "tok-UNSEEN-1",
        ),
        (
            "CanonicalRequest:\nGET\n/\nX-Amz-Credential=a&X-Amz-Security-Token=tok-UNSEEN-2&X-Amz-Signature=s",
            "tok-UNSEEN-2",
        ),
    ],
)
def test_signing_log_filter_redacts_tokens_it_was_never_told(message: str, secret: str) -> None:
    """The botocore.auth filter redacts the security-token header or query value by name, so a token
    that a refresh has not yet handed to any provider is redacted too."""
    record = logging.LogRecord("botocore.auth", logging.DEBUG, __file__, 1, "%s", (message,), None)
    assert SIGNING_LOG_FILTER.filter(record)
    assert secret not in record.getMessage()
    assert "<redacted>" in record.getMessage()
    assert SIGNING_LOG_FILTER in logging.getLogger("botocore.auth").filters


def test_a_value_too_short_to_be_a_credential_does_not_shred_the_log() -> None:
    """A one-character 'secret' (a test key) is not replaced verbatim: 'CanonicalRequest' stays readable."""
    SIGNING_LOG_FILTER.add_secret("s")
    record = logging.LogRecord("botocore.auth", logging.DEBUG, __file__, 1, "CanonicalRequest:\n%s", ("POST",), None)
    assert SIGNING_LOG_FILTER.filter(record)
    assert record.getMessage() == "CanonicalRequest:\nPOST"


@pytest.mark.asyncio
async def test_a_failed_refresh_fails_the_attempt_over_without_the_message() -> None:
    """A refresh that raises becomes ProviderCallFailed (persistent: fail over), naming only the error type."""
    refresher = _Refresher()
    credentials = RefreshableCredentials.create_from_metadata(
        metadata=refresher(), refresh_using=refresher, method="test-refresh"
    )

    def broken() -> dict[str, str]:
        raise CredentialRetrievalError(provider="test", error_msg="answer quoted refresh-secret-9")

    credentials._refresh_using = broken
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda _: httpx.Response(500))) as client:
        provider = BedrockProvider(region="us-east-1", credentials=credentials, client=client)
        with pytest.raises(ProviderCallFailed) as info:
            await provider.complete(request_hello(), BEDROCK_MODEL, timeout_at=float("inf"))
    assert info.value.failure.kind is AttemptFailureKind.CONN_REFUSED
    assert "CredentialRetrievalError" in str(info.value)
    assert "refresh-secret" not in str(info.value)
