"""``routeproof.testing.check_provider`` run against every shipped provider, and shown to have teeth."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from routeproof import ChatRequest, Message, ProviderKind, ProviderResponse
from routeproof.providers import (
    AnthropicProvider,
    AttemptFailure,
    AttemptFailureKind,
    BedrockProvider,
    LocalProvider,
    OpenAIProvider,
    Provider,
    ProviderCallFailed,
)
from routeproof.testing import (
    Failure,
    ProviderCheckFailed,
    Reply,
    Scenario,
    ScriptedProvider,
    Shape,
    Stall,
    Subject,
    check_provider,
    wire_scenario,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

KEY = "sk-check-SECRET-0123456789abcdef"
AWS_SECRET = "wJalrXUtnFEMI-check-SECRET-bPxRfiCYEXAMPLEKEY"


def _http(make: Callable[[httpx.AsyncClient], Provider], shape: Shape, secret: str) -> Callable[[Scenario], Subject]:
    def factory(scenario: Scenario) -> Subject:
        wire = wire_scenario(shape, scenario, secret=secret)
        provider = make(httpx.AsyncClient(transport=wire.transport))
        return Subject(provider=provider, secret=secret, released=wire.released)

    return factory


def _openai_compatible(kind: ProviderKind) -> Callable[[httpx.AsyncClient], Provider]:
    return lambda client: OpenAIProvider(kind=kind, api_key=KEY, client=client, base_url="https://upstream.test/v1")


SHIPPED_HTTP: dict[str, Callable[[Scenario], Subject]] = {
    "anthropic": _http(lambda c: AnthropicProvider(api_key=KEY, client=c), Shape.ANTHROPIC, KEY),
    **{
        kind.value: _http(_openai_compatible(kind), Shape.OPENAI, KEY)
        for kind in (ProviderKind.OPENAI, ProviderKind.OPENROUTER, ProviderKind.OLLAMA, ProviderKind.VLLM)
    },
    "bedrock": _http(
        lambda c: BedrockProvider(
            region="us-east-1", access_key_id="AKIDCHECK0123456789", secret_access_key=AWS_SECRET, client=c
        ),
        Shape.BEDROCK,
        AWS_SECRET,
    ),
}


@pytest.mark.parametrize("name", sorted(SHIPPED_HTTP))
async def test_every_shipped_http_provider_passes_check_provider(name: str) -> None:
    """Anthropic, OpenAI, OpenRouter, Ollama, vLLM and Bedrock pass every scenario, none skipped."""
    assert await check_provider(SHIPPED_HTTP[name]) == ()


def _local(scenario: Scenario) -> Subject | None:
    """The in-process Local model: failures are scripted; it cannot stall mid-stream."""
    if scenario is Scenario.ANSWER:
        return Subject(provider=LocalProvider())
    if scenario is Scenario.SERVER_ERROR:
        failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="scripted 503")
        return Subject(provider=LocalProvider(failures=[failure, failure]))
    if scenario is Scenario.AUTH_ERROR_ECHOING_KEY:
        failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=401, message="scripted 401")
        return Subject(provider=LocalProvider(failures=[failure, failure]))
    if scenario is Scenario.HANG:
        return Subject(provider=LocalProvider(latency_s=3600.0))
    return None


async def test_the_local_provider_passes_check_provider() -> None:
    """LocalProvider passes every scenario it can be put in (it has no stream to stall)."""
    assert await check_provider(_local) == (Scenario.STALL_AFTER_FIRST_EVENT,)


def _scripted(scenario: Scenario) -> Subject:
    provider = ScriptedProvider()
    if scenario is Scenario.SERVER_ERROR:
        provider.script([Failure(failure=AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503))] * 2)
    elif scenario is Scenario.AUTH_ERROR_ECHOING_KEY:
        provider.script([Failure(failure=AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=401))] * 2)
    elif scenario is Scenario.HANG:
        provider.script([Reply(delay_s=3600.0)] * 2)
    elif scenario is Scenario.STALL_AFTER_FIRST_EVENT:
        provider.script([Stall()])
    return Subject(provider=provider, released=lambda: provider.open_streams == 0)


async def test_the_scripted_provider_passes_check_provider() -> None:
    """routeproof.testing's own ScriptedProvider is a well-behaved Provider in every scenario."""
    assert await check_provider(_scripted) == ()


async def test_the_scripted_provider_plays_its_script_in_order() -> None:
    """Steps are consumed one per call, then the default answers; every call is journalled."""
    failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503)
    provider = ScriptedProvider([Failure(failure=failure), Reply(text="second")])
    request = ChatRequest(messages=(Message.user("hi"),))
    timeout_at = asyncio.get_running_loop().time() + 5
    with pytest.raises(ProviderCallFailed) as caught:
        await provider.complete(request, "m", timeout_at=timeout_at)
    assert caught.value.failure is failure
    assert (await provider.complete(request, "m", timeout_at=timeout_at)).choices[0].content == "second"
    assert (await provider.complete(request, "m", timeout_at=timeout_at)).choices[0].content == Reply().text
    assert [model for _, model in provider.calls] == ["m", "m", "m"]


class _LeakyProvider(ScriptedProvider):
    """A planted break: its errors quote the API key."""

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """The scripted answer, or its failure with the key in the message."""
        try:
            return await super().complete(request, model, timeout_at=timeout_at)
        except ProviderCallFailed as exc:
            leaked = replace(exc.failure, message=f"bad key {KEY}")
            raise ProviderCallFailed(leaked) from exc


async def test_check_provider_catches_a_provider_that_leaks_its_key() -> None:
    """A provider whose 401 message quotes the key fails the check, naming the scenario."""

    def leaky(scenario: Scenario) -> Subject:
        subject = _scripted(scenario)
        provider = _LeakyProvider()
        assert isinstance(subject.provider, ScriptedProvider)
        provider.script(subject.provider._script)  # the same steps
        return Subject(provider=provider, secret=KEY, released=lambda: provider.open_streams == 0)

    with pytest.raises(ProviderCheckFailed, match="server_error: the secret is in a ProviderCallFailed"):
        await check_provider(leaky)


@pytest.mark.parametrize(
    ("scenario", "wrong", "rule"),
    [
        (Scenario.SERVER_ERROR, 500, "server_error: a 503 must be ProviderCallFailed(HTTP_STATUS, http_status=503)"),
        (Scenario.AUTH_ERROR_ECHOING_KEY, 403, "auth_error_echoing_key: a 401 must be ProviderCallFailed"),
    ],
)
async def test_check_provider_catches_a_provider_that_misreports_the_status(
    scenario: Scenario, wrong: int, rule: str
) -> None:
    """A provider that reports another status than the upstream's fails the check, naming the rule."""

    def misreporting(asked: Scenario) -> Subject:
        subject = _scripted(asked)
        if asked is scenario:
            assert isinstance(subject.provider, ScriptedProvider)
            failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=wrong)
            subject.provider._script.clear()
            subject.provider.script([Failure(failure=failure)] * 2)
        return subject

    with pytest.raises(ProviderCheckFailed) as caught:
        await check_provider(misreporting)
    assert str(caught.value).startswith(rule)
