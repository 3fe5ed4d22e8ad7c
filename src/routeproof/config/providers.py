"""One ``[driver.providers.NAME]`` table: its kind, endpoint, tier, model and credentials (from the
environment), validated into a :class:`~routeproof.config.types.ProviderConfig`; and the provider
clients built from them (:func:`build_providers`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from routeproof.clock import ms_of_s
from routeproof.config.read import (
    Missing,
    fail,
    read_int,
    read_micro,
    read_secret,
    read_str,
    read_table,
    read_timeout_ms,
    read_usd,
)
from routeproof.config.types import DEFAULT_KEY_ENV, ProviderConfig
from routeproof.core.identity import KIND_ALIASES
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import PrivacyTier, ProviderKind
from routeproof.errors import ConfigError
from routeproof.providers.anthropic import DEFAULT_BASE_URL as ANTHROPIC_BASE_URL
from routeproof.providers.gemini import GEMINI_BASE_URL
from routeproof.providers.openai import DEFAULT_BASE_URLS as OPENAI_BASE_URLS

if TYPE_CHECKING:
    import httpx

    from routeproof.config.types import RoutingConfig
    from routeproof.providers.bedrock import AwsCredentials
    from routeproof.providers.protocol import Provider

__all__ = [
    "base_url_of",
    "build_providers",
    "provider_config",
    "provider_kind",
    "resolve_aws_credentials",
]

# the providers' own defaults, written once in their modules (vLLM has none: it is wherever it is served)
_DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = MappingProxyType(
    {ProviderKind.ANTHROPIC: ANTHROPIC_BASE_URL, **OPENAI_BASE_URLS, ProviderKind.GEMINI: GEMINI_BASE_URL}
)
AZURE_API_VERSION = "2024-10-21"
"""Azure OpenAI's GA data-plane api-version used when ``api_version`` is not set."""
_AZURE_AUTH = {"api-key": False, "bearer": True, "azure-identity": True}
_API_VERSION = re.compile(r"^(v1|\d{4}-\d{2}-\d{2}(-preview)?)$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_PROFILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=,@/-]{0,63}$")  # an AWS config profile name
_AWS_KEY_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_TIERS: Mapping[str, PrivacyTier] = MappingProxyType({tier.name.lower(): tier for tier in PrivacyTier})

_PROVIDER_KEYS = (
    frozenset(
        {
            "kind",
            "base_url",
            "model",
            "priority",
            "privacy_tier",
            "daily_budget_usd",
            "api_key_env",
            "timeout_ms",
            "region",
        }
    )
    | {"profile"}
    | {"weight", "rpm", "tpm", "cache_affinity_ttl_s"}
    | {"api_version", "auth"}
    | {"responses_api"}
)  # profile: Bedrock's AWS config profile; weight/rpm/tpm/cache_affinity_ttl_s: traffic; api_version, auth: Azure's;
# responses_api: an openai/azure endpoint serving OpenAI's Responses API (verbatim POST /v1/responses)


def provider_kind(name: str, table: Mapping[str, object], where: str) -> ProviderKind:
    raw = table.get("kind")
    if raw is None:
        implied = KIND_ALIASES.get(name) or next((k for k in ProviderKind if k.value == name), None)
        if implied is None:
            raise fail(f"{where}.kind", raw, f"missing, and {name!r} is not a provider kind")
        kind = implied
    elif isinstance(raw, str) and raw in {k.value for k in ProviderKind}:
        kind = ProviderKind(raw)
    else:
        raise fail(f"{where}.kind", raw, f"unknown kind (known: {sorted(k.value for k in ProviderKind)})")
    if not kind.is_supported:
        raise fail(f"{where}.kind", kind.value, "declared but not implemented yet; use another provider")
    return kind


def base_url_of(kind: ProviderKind, table: Mapping[str, object], where: str) -> str | None:
    raw = read_str(table, "base_url", f"{where}")
    if raw is None:
        if kind is ProviderKind.VLLM:
            raise fail(f"{where}.base_url", raw, "vllm needs the base URL it is served at")
        if kind is ProviderKind.AZURE:
            raise fail(f"{where}.base_url", raw, "azure needs its resource endpoint (https://NAME.openai.azure.com)")
        return _DEFAULT_BASE_URLS.get(kind)
    if kind is ProviderKind.LOCAL:
        raise fail(f"{where}.base_url", raw, "the local provider is in-process and has no URL")
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise fail(f"{where}.base_url", raw, "must be an http:// or https:// URL with a host")
    url = raw.rstrip("/")
    if kind in {ProviderKind.OLLAMA, ProviderKind.VLLM} and parts.path in {"", "/"}:
        url += "/v1"  # their documented OpenAI-compatible prefix
    return url


def provider_config(
    name: str,
    raw: object,
    position: int,
    environ: Mapping[str, str],
    private_hosts: frozenset[str],
    *,
    missing: Missing,
) -> ProviderConfig:
    where = f"driver.providers.{name}"
    table = read_table(raw, where, _PROVIDER_KEYS)
    kind = provider_kind(name, table, where)
    base_url = base_url_of(kind, table, where)
    model = read_str(table, "model", where)
    if model is None:
        raise fail(f"{where}.model", None, "missing: every provider needs a model")
    actual_tier = endpoint_tier(kind, base_url, private_hosts)
    tier_raw = table.get("privacy_tier", actual_tier.name.lower())
    if tier_raw not in _TIERS:
        raise fail(f"{where}.privacy_tier", tier_raw, f"must be one of {sorted(_TIERS)}")
    tier = _TIERS[str(tier_raw)]
    if tier < actual_tier:
        raise fail(f"{where}.privacy_tier", tier_raw, f"the endpoint {base_url!r} is only {actual_tier.name.lower()}")
    api_version, bearer_auth = _azure_settings(kind, table, where)
    default_env = "AZURE_OPENAI_AD_TOKEN" if bearer_auth else DEFAULT_KEY_ENV.get(kind)
    key_env = read_str(table, "api_key_env", where) or default_env
    azure_credential = _azure_identity(where) if table.get("auth") == "azure-identity" else None
    if azure_credential is not None:
        key_env = None  # azure-identity's own chain finds the credential
    api_key = None if key_env is None else read_secret(environ, key_env, f"{where}.api_key_env", missing)
    if kind is ProviderKind.LOCAL and api_key is not None:
        raise fail(f"{where}.api_key_env", key_env, "the local provider takes no key")
    region = read_str(table, "region", where)
    if region is not None and kind is not ProviderKind.BEDROCK:
        raise fail(f"{where}.region", region, "only bedrock takes a region")
    aws: dict[str, str | None] = {}
    profile: str | None = None
    aws_credentials: object | None = None
    if kind is ProviderKind.BEDROCK:
        region = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if region is None or not _REGION.match(region):
            raise fail(f"{where}.region", region, "set region, AWS_REGION or AWS_DEFAULT_REGION to an AWS region")
        profile = read_str(table, "profile", where)
        if profile is not None and not _PROFILE.match(profile):
            raise fail(f"{where}.profile", profile, "must be an AWS config profile name (letters, digits, _.-+=,@/)")
        if profile is None and any(environ.get(variable) for variable in _AWS_KEY_ENV):
            aws = {
                "aws_access_key_id": read_secret(environ, "AWS_ACCESS_KEY_ID", f"{where} credentials", missing),
                "aws_secret_access_key": read_secret(environ, "AWS_SECRET_ACCESS_KEY", f"{where} credentials", missing),
                "aws_session_token": None,
            }
            if environ.get("AWS_SESSION_TOKEN"):
                aws["aws_session_token"] = read_secret(environ, "AWS_SESSION_TOKEN", f"{where} credentials", missing)
        else:
            credentials = resolve_aws_credentials(profile, where)
            if credentials is None:
                tried = f"profile {profile!r}" if profile else "AWS_PROFILE or the default profile"
                missing.variables.append(
                    (
                        " and ".join(_AWS_KEY_ENV),
                        f"{where} credentials; botocore's chain ({tried} in the shared config and"
                        " credentials files, SSO, container credentials, instance metadata) found none either",
                    )
                )
            aws_credentials = credentials
    elif table.get("profile") is not None:
        raise fail(f"{where}.profile", table.get("profile"), "only bedrock takes an AWS profile")
    return ProviderConfig(
        name=name,
        kind=kind,
        model=model,
        priority=read_int(table, "priority", where, position, minimum=0),
        privacy_tier=tier,
        base_url=base_url,
        daily_budget_usd=read_usd(table, where),
        api_key_env=key_env,
        timeout_ms=read_timeout_ms(table, where),
        region=region,
        profile=profile,
        api_key=api_key,
        aws_credentials=aws_credentials,
        weight_micro=read_micro(table, "weight", where, 1_000_000, maximum=10**12),
        rpm=_limit(table, "rpm", where),
        tpm=_limit(table, "tpm", where),
        cache_ttl_ms=_cache_ttl_ms(table, where),
        api_version=api_version,
        bearer_auth=bearer_auth,
        responses_api=_responses_api(kind, table, where),
        azure_credential=azure_credential,
        **aws,
    )


def _azure_identity(where: str) -> object:
    """``auth = "azure-identity"``: azure-identity's ``DefaultAzureCredential`` (the ``azure`` extra)."""
    try:
        from azure.identity import DefaultAzureCredential  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError as exc:
        message = f"{where}.auth: 'azure-identity' needs the package: pip install 'routeproof[azure]'"
        raise ConfigError(message) from exc
    credential: object = DefaultAzureCredential()
    return credential


_RESPONSES_KINDS = frozenset({ProviderKind.OPENAI, ProviderKind.AZURE})


def _responses_api(kind: ProviderKind, table: Mapping[str, object], where: str) -> bool:
    """``responses_api = true``: this OpenAI or Azure endpoint serves OpenAI's Responses API."""
    raw = table.get("responses_api", False)
    if not isinstance(raw, bool):
        raise fail(f"{where}.responses_api", raw, "must be true or false")
    if raw and kind not in _RESPONSES_KINDS:
        raise fail(f"{where}.responses_api", raw, f"only {sorted(k.value for k in _RESPONSES_KINDS)} serve it")
    return raw


def _limit(table: Mapping[str, object], key: str, where: str) -> int | None:
    """A declared rate limit (``rpm``/``tpm``): an integer >= 1, or absent."""
    return None if table.get(key) is None else read_int(table, key, where, 0, minimum=1)


def _cache_ttl_ms(table: Mapping[str, object], where: str) -> int | None:
    """The deployment's own prompt-cache lifetime (``cache_affinity_ttl_s``, seconds >= 1) in ms, or None."""
    ttl_s = _limit(table, "cache_affinity_ttl_s", where)
    return None if ttl_s is None else ms_of_s(ttl_s)


def _azure_settings(kind: ProviderKind, table: Mapping[str, object], where: str) -> tuple[str | None, bool]:
    """Azure's ``api_version`` (default :data:`AZURE_API_VERSION`) and whether ``auth = "bearer"``."""
    version, auth = read_str(table, "api_version", where), read_str(table, "auth", where)
    if kind is not ProviderKind.AZURE:
        for key, value in (("api_version", version), ("auth", auth)):
            if value is not None:
                raise fail(f"{where}.{key}", value, "only azure takes it")
        return None, False
    if version is not None and not _API_VERSION.match(version):
        raise fail(f"{where}.api_version", version, "must be 'v1' or a date like '2024-10-21' (optionally -preview)")
    if auth is not None and auth not in _AZURE_AUTH:
        raise fail(f"{where}.auth", auth, f"must be one of {sorted(_AZURE_AUTH)}")
    return version or AZURE_API_VERSION, _AZURE_AUTH.get(auth or "api-key", False)


def resolve_aws_credentials(profile: str | None, where: str) -> object | None:
    """What botocore's own credential chain resolves (``profile``, or ``AWS_PROFILE``/default when None):
    environment, shared config and credentials files, SSO, assume-role, container credentials,
    instance metadata. None when it finds nothing.

    Blocking I/O (files; the container and instance-metadata endpoints over HTTP), so it runs at
    load, never on a call's path. It reads the process environment, as botocore does (set
    ``AWS_EC2_METADATA_DISABLED=true`` where no instance metadata service should be asked). A
    botocore error (an unknown profile, an unreachable container endpoint) is a ``ConfigError``
    naming the profile and the error, never a credential.
    """
    try:  # lazily: only Bedrock needs it (the ``bedrock`` extra)
        import botocore.session  # type: ignore[import-untyped]
        from botocore.exceptions import BotoCoreError  # type: ignore[import-untyped]
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{where}: Bedrock needs botocore: pip install 'routeproof[bedrock]'") from exc

    try:
        session = botocore.session.Session(profile=profile)
        credentials: object | None = session.get_credentials()
        return credentials
    except (BotoCoreError, ValueError) as exc:  # ValueError: botocore refusing a container URL's host
        raise ConfigError(
            f"{where}: botocore could not resolve AWS credentials (profile {profile!r}): {type(exc).__name__}: {exc}"
        ) from exc


def build_providers(config: RoutingConfig, client: httpx.AsyncClient) -> dict[str, Provider]:
    """One provider client per configured provider, keyed by name, sharing ``client``.

    The one place that imports every provider module (lazily: loading config needs none of them).
    """
    from routeproof.providers.anthropic import AnthropicProvider
    from routeproof.providers.bedrock import BedrockProvider
    from routeproof.providers.local import LocalProvider
    from routeproof.providers.openai import OpenAIProvider

    built: dict[str, Provider] = {}
    for p in config.providers:
        if p.kind is ProviderKind.ANTHROPIC:
            assert p.api_key is not None, "parse_config guarantees a key"
            assert p.base_url is not None, "parse_config guarantees a URL"
            built[p.name] = AnthropicProvider(api_key=p.api_key, client=client, base_url=p.base_url, name=p.name)
        elif p.kind is ProviderKind.BEDROCK:
            assert p.region is not None, "parse_config guarantees a region"
            built[p.name] = BedrockProvider(
                region=p.region,
                access_key_id=p.aws_access_key_id,
                secret_access_key=p.aws_secret_access_key,
                session_token=p.aws_session_token,
                credentials=cast("AwsCredentials | None", p.aws_credentials),
                client=client,
                base_url=p.base_url,
                name=p.name,
            )
        elif p.kind is ProviderKind.LOCAL:
            built[p.name] = LocalProvider(name=p.name)
        elif p.kind is ProviderKind.AZURE:
            from routeproof.providers.azure import AzureOpenAIProvider

            assert p.base_url is not None, "parse_config guarantees an endpoint"
            from routeproof.providers.azure import EnvironmentToken, TokenCredential

            credential = cast("TokenCredential | None", p.azure_credential)
            if credential is None and p.bearer_auth and p.api_key_env is not None:
                credential = EnvironmentToken(p.api_key_env, fallback=p.api_key)  # read again when due
            built[p.name] = AzureOpenAIProvider(
                endpoint=p.base_url, api_key=p.api_key, bearer_auth=p.bearer_auth, credential=credential,
                api_version=p.api_version or "", client=client, name=p.name, responses_api=p.responses_api,
            )  # fmt: skip
        elif p.kind is ProviderKind.GEMINI:
            from routeproof.providers.gemini import GeminiProvider

            built[p.name] = GeminiProvider(api_key=p.api_key, client=client, base_url=p.base_url, name=p.name)
        else:
            built[p.name] = OpenAIProvider(
                kind=p.kind, api_key=p.api_key, client=client, base_url=p.base_url, name=p.name,
                responses_api=p.responses_api,
            )  # fmt: skip
    return built
