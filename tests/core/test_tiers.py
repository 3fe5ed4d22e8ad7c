"""Privacy tiers: allowed kinds, the endpoint tier of a base URL, and the chain filter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.tiers import NETWORK_KINDS, PrivacyTier, allowed_kinds, endpoint_tier, filter_chain, tier_admits
from routeproof.core.types import ChainEntry, ProviderKind, ProviderName

ALL_KINDS = tuple(ProviderKind)
TIERS = tuple(PrivacyTier)


def _chain(*kinds: ProviderKind) -> tuple[ChainEntry, ...]:
    return tuple(ChainEntry(provider=k, model=f"m-{k.value}", fallback_position=i) for i, k in enumerate(kinds))


chains = st.lists(st.sampled_from(ALL_KINDS), max_size=10).map(lambda ks: _chain(*ks))
endpoint_maps = st.dictionaries(st.sampled_from(ALL_KINDS), st.sampled_from(TIERS))


def test_tier_order_is_total() -> None:
    """Sovereign < Private < Standard."""
    assert PrivacyTier.SOVEREIGN < PrivacyTier.PRIVATE < PrivacyTier.STANDARD


def test_allowed_kinds_per_tier() -> None:
    """Sovereign: local; Private: local + Ollama + vLLM; Standard: every supported kind."""
    assert allowed_kinds(PrivacyTier.SOVEREIGN) == {ProviderKind.LOCAL}
    assert allowed_kinds(PrivacyTier.PRIVATE) == {ProviderKind.LOCAL, ProviderKind.OLLAMA, ProviderKind.VLLM}
    assert allowed_kinds(PrivacyTier.STANDARD) == {k for k in ProviderKind if k is not ProviderKind.VERTEX}


def test_lowering_tier_never_grows_allowed_set() -> None:
    """allowed(lower) is a subset of allowed(higher) for every pair of tiers."""
    for low in TIERS:
        for high in TIERS:
            if low <= high:
                assert allowed_kinds(low) <= allowed_kinds(high)


@pytest.mark.parametrize(
    ("url", "tier"),
    [
        ("http://localhost:11434", PrivacyTier.PRIVATE),
        ("http://LOCALHOST.:11434/v1", PrivacyTier.PRIVATE),
        ("http://127.0.0.1:8000", PrivacyTier.PRIVATE),
        ("http://127.8.9.10", PrivacyTier.PRIVATE),
        ("http://[::1]:8000", PrivacyTier.PRIVATE),
        ("http://10.1.2.3", PrivacyTier.PRIVATE),
        ("http://172.16.0.1", PrivacyTier.PRIVATE),
        ("http://172.31.255.255", PrivacyTier.PRIVATE),
        ("http://192.168.1.10:11434", PrivacyTier.PRIVATE),
        ("http://169.254.1.1", PrivacyTier.PRIVATE),
        ("http://[fe80::1]", PrivacyTier.PRIVATE),
        ("http://[fd12:3456::1]:8000", PrivacyTier.PRIVATE),
        ("http://[::ffff:192.168.0.1]", PrivacyTier.PRIVATE),
        ("http://172.32.0.1", PrivacyTier.STANDARD),
        ("http://8.8.8.8", PrivacyTier.STANDARD),
        ("http://0.0.0.0:11434", PrivacyTier.STANDARD),
        ("http://100.64.0.1", PrivacyTier.STANDARD),
        ("http://192.0.2.1", PrivacyTier.STANDARD),
        ("https://ollama.example.com", PrivacyTier.STANDARD),
        ("http://localhost@evil.example.com", PrivacyTier.STANDARD),
        ("http://localhost.evil.example.com", PrivacyTier.STANDARD),
        ("http://127.1", PrivacyTier.STANDARD),
        ("http://[::1", PrivacyTier.STANDARD),
        ("not a url", PrivacyTier.STANDARD),
        ("", PrivacyTier.STANDARD),
    ],
)
def test_endpoint_tier_of_self_hosted_url(url: str, tier: PrivacyTier) -> None:
    """An Ollama base URL is Private only on loopback / RFC 1918 / ULA / link-local / localhost."""
    assert endpoint_tier(ProviderKind.OLLAMA, url) is tier
    assert endpoint_tier(ProviderKind.VLLM, url) is tier


def test_endpoint_tier_allow_list() -> None:
    """A named host is Private only when it is on the allow-list (case-insensitive, exact)."""
    url = "http://gpu-box.lan:8000"
    assert endpoint_tier(ProviderKind.VLLM, url) is PrivacyTier.STANDARD
    assert endpoint_tier(ProviderKind.VLLM, url, frozenset({"GPU-box.lan"})) is PrivacyTier.PRIVATE
    assert endpoint_tier(ProviderKind.VLLM, "http://x.gpu-box.lan", frozenset({"gpu-box.lan"})) is PrivacyTier.STANDARD


def test_endpoint_tier_fixed_kinds() -> None:
    """LOCAL is Sovereign whatever the URL; hosted kinds are Standard even on loopback."""
    assert endpoint_tier(ProviderKind.LOCAL, None) is PrivacyTier.SOVEREIGN
    assert endpoint_tier(ProviderKind.LOCAL, "https://api.anthropic.com") is PrivacyTier.SOVEREIGN
    assert endpoint_tier(ProviderKind.ANTHROPIC, "http://127.0.0.1") is PrivacyTier.STANDARD
    assert endpoint_tier(ProviderKind.OLLAMA, None) is PrivacyTier.STANDARD


def test_sovereign_chain_drops_every_network_provider() -> None:
    """Under Sovereign, a chain of Ollama (on localhost), Anthropic and local keeps only local."""
    chain = _chain(ProviderKind.OLLAMA, ProviderKind.ANTHROPIC, ProviderKind.LOCAL)
    tiers = {ProviderKind.OLLAMA: PrivacyTier.PRIVATE, ProviderKind.LOCAL: PrivacyTier.SOVEREIGN}
    kept, skipped = filter_chain(chain, PrivacyTier.SOVEREIGN, tiers)
    assert [e.provider for e in kept] == [ProviderKind.LOCAL]
    assert [e.provider for e in skipped] == [ProviderKind.OLLAMA, ProviderKind.ANTHROPIC]


def test_private_tier_skips_public_ollama() -> None:
    """Under Private, an Ollama whose endpoint is public is skipped; a loopback one is kept."""
    chain = _chain(ProviderKind.OLLAMA, ProviderKind.VLLM, ProviderKind.OPENAI)
    tiers = {
        ProviderKind.OLLAMA: endpoint_tier(ProviderKind.OLLAMA, "https://ollama.example.com"),
        ProviderKind.VLLM: endpoint_tier(ProviderKind.VLLM, "http://127.0.0.1:8000"),
    }
    kept, _ = filter_chain(chain, PrivacyTier.PRIVATE, tiers)
    assert [e.provider for e in kept] == [ProviderKind.VLLM]


def test_standard_keeps_supported_in_order_and_drops_vertex() -> None:
    """Under Standard every supported provider is kept in chain order; Vertex is unsupported."""
    chain = _chain(ProviderKind.OPENAI, ProviderKind.VERTEX, ProviderKind.ANTHROPIC, ProviderKind.LOCAL)
    kept, skipped = filter_chain(chain, PrivacyTier.STANDARD, {})
    assert [e.provider for e in kept] == [ProviderKind.OPENAI, ProviderKind.ANTHROPIC, ProviderKind.LOCAL]
    assert [e.provider for e in skipped] == [ProviderKind.VERTEX]


@given(chains, st.sampled_from(TIERS), endpoint_maps)
def test_filter_never_yields_disallowed_provider(
    chain: tuple[ChainEntry, ...], tier: PrivacyTier, tiers: dict[ProviderKind, PrivacyTier]
) -> None:
    """For any chain and tier, every kept entry is allowed and its endpoint tier is <= tier."""
    kept, skipped = filter_chain(chain, tier, tiers)
    for entry in kept:
        assert isinstance(entry.provider, ProviderKind)  # the chain is of kinds (default-named instances)
        assert entry.provider in allowed_kinds(tier)
        assert tiers.get(entry.provider, endpoint_tier(entry.provider, None)) <= tier
        if tier is PrivacyTier.SOVEREIGN:
            assert entry.provider not in NETWORK_KINDS
    assert sorted(kept + skipped, key=lambda e: e.fallback_position) == list(chain)
    assert list(kept) == [e for e in chain if e in kept]


@given(chains, endpoint_maps)
def test_filter_monotone_in_tier(chain: tuple[ChainEntry, ...], tiers: dict[ProviderKind, PrivacyTier]) -> None:
    """Lowering the tier never grows the kept set."""
    kept = {t: set(filter_chain(chain, t, tiers)[0]) for t in TIERS}
    assert kept[PrivacyTier.SOVEREIGN] <= kept[PrivacyTier.PRIVATE] <= kept[PrivacyTier.STANDARD]


@given(st.sampled_from(ALL_KINDS), st.one_of(st.none(), st.text(max_size=40)))
def test_endpoint_tier_total_and_bounded(kind: ProviderKind, url: str | None) -> None:
    """endpoint_tier never raises, and only self-hosted kinds are ever Private."""
    tier = endpoint_tier(kind, url)
    if tier is PrivacyTier.PRIVATE:
        assert kind in (ProviderKind.OLLAMA, ProviderKind.VLLM)


def test_sovereign_drops_ollama_even_if_its_endpoint_claims_sovereign() -> None:
    """The kind rule alone keeps Ollama out of a Sovereign chain, whatever the endpoint map says."""
    chain = _chain(ProviderKind.OLLAMA, ProviderKind.VLLM, ProviderKind.LOCAL)
    every_endpoint_sovereign = dict.fromkeys(ProviderKind, PrivacyTier.SOVEREIGN)
    kept, _ = filter_chain(chain, PrivacyTier.SOVEREIGN, every_endpoint_sovereign)
    assert [e.provider for e in kept] == [ProviderKind.LOCAL]


@given(chains, st.sampled_from(TIERS))
def test_kind_rule_holds_when_every_endpoint_claims_sovereign(chain: tuple[ChainEntry, ...], tier: PrivacyTier) -> None:
    """With the endpoint check neutralised, kept kinds are still exactly the tier's allowed kinds."""
    kept, _ = filter_chain(chain, tier, dict.fromkeys(ProviderKind, PrivacyTier.SOVEREIGN))
    assert [e.provider for e in kept] == [e.provider for e in chain if e.provider in allowed_kinds(tier)]


def test_tier_admits_states_the_filter_rule_per_entry() -> None:
    """tier_admits: the kind allowed (an unbound name only under Standard) and the endpoint's tier <= the tier."""
    local, ollama, openai = _chain(ProviderKind.LOCAL, ProviderKind.OLLAMA, ProviderKind.OPENAI)
    unbound = ChainEntry(provider=ProviderName("vllm-a"), model="m", fallback_position=0)
    sovereign, private, standard = TIERS
    assert tier_admits(local, sovereign, {})  # an unconfigured endpoint counts as Sovereign
    assert not tier_admits(openai, private, {})  # kind not allowed, whatever its endpoint
    assert tier_admits(ollama, private, {ProviderKind.OLLAMA: private})
    assert not tier_admits(ollama, private, {ProviderKind.OLLAMA: standard})  # kind allowed, endpoint not
    assert tier_admits(openai, standard, {ProviderKind.OPENAI: standard})
    assert tier_admits(unbound, standard, {})
    assert not tier_admits(unbound, private, {})


@given(chains, st.sampled_from(TIERS), endpoint_maps)
def test_tier_admits_every_entry_the_filter_keeps(
    chain: tuple[ChainEntry, ...], tier: PrivacyTier, tiers: dict[ProviderKind, PrivacyTier]
) -> None:
    """Every entry filter_chain keeps is admitted by tier_admits (the rule plan_chain's contract states)."""
    kept, _ = filter_chain(chain, tier, tiers)
    assert all(tier_admits(e, tier, tiers) for e in kept)
