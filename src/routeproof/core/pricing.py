"""Exact money: the unit, prices, the pricing table, the cost of a usage and the worst case of a request.

**The unit is the pico-USD (1e-12 USD), an ``int``.** Prices are held as integer micro-USD per
million tokens, which is the same number as pico-USD per token, so
``tokens * price_micro_usd_per_mtok`` is an exact integer count of pico-USD: the ``cost_budget``
equation ``(tokens * rate) / 1_000_000`` with the division absorbed by the unit. No float is used
anywhere: TOML prices are parsed with ``parse_float=Decimal`` straight from their source text and
refused unless they are an exact multiple of 1e-6 USD per Mtok.

:mod:`routeproof.core.ledger` re-exports everything here; import from there.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from types import MappingProxyType

import icontract

from routeproof.core.errors import ConfigError
from routeproof.core.input_size import block_tokens_bound
from routeproof.core.types import ChatRequest, ProviderKind, TextBlock, ToolResultBlock, ToolUseBlock, Usage

__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "COST_ITEMS",
    "MESSAGE_OVERHEAD_TOKENS",
    "PICO_USD_PER_USD",
    "PRICE_FIELDS",
    "REQUEST_OVERHEAD_TOKENS",
    "REQUIRED_PRICE_FIELDS",
    "TOOL_DEFINITION_OVERHEAD_TOKENS",
    "TOOL_USE_SYSTEM_PROMPT_TOKENS",
    "CostLine",
    "Price",
    "PricingTable",
    "cost",
    "cost_lines",
    "cost_pico_usd",
    "format_usd",
    "load_pricing",
    "parse_usd",
    "price_well_formed",
    "worst_case_cost_pico_usd",
    "worst_case_prompt_tokens",
]

PICO_USD_PER_USD = 10**12
_MICRO_PER_USD = 10**6

PRICE_FIELDS: tuple[str, ...] = (
    "input_per_mtok",
    "output_per_mtok",
    "cache_read_per_mtok",
    "cache_write_per_mtok",
    "cache_write_1h_per_mtok",
    "image_input_per_mtok",
    "document_input_per_mtok",
)
"""The keys of one model's table in pricing TOML (USD per million tokens). ``cache_write_per_mtok``
is the 5-minute cache write; reasoning tokens are output and billed at ``output_per_mtok``."""
REQUIRED_PRICE_FIELDS: tuple[str, ...] = ("input_per_mtok", "output_per_mtok")
"""The keys every model needs. Seed 003's own table omits the cache prices; see
:func:`_with_default_cache_prices` for how an absent one is charged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """One model's prices in integer micro-USD per million tokens (= pico-USD per token)."""

    input_micro_usd_per_mtok: int
    output_micro_usd_per_mtok: int
    cache_read_micro_usd_per_mtok: int
    cache_write_micro_usd_per_mtok: int  # the 5-minute TTL
    # None: derived (the 1-hour write at the 5-minute rate; image and document input at the input rate)
    cache_write_1h_micro_usd_per_mtok: int | None = None
    image_input_micro_usd_per_mtok: int | None = None
    document_input_micro_usd_per_mtok: int | None = None
    # Prices of the service tiers that change it (OpenAI's priority, flex), by the name the provider's
    # answer gives the tier it used; a tier not listed is billed at this (the standard) price.
    service_tiers: tuple[tuple[str, Price], ...] = ()

    def for_tier(self, tier: str | None) -> Price:
        """The price of a call the provider says it served on ``tier`` (this price when unlisted)."""
        return next((price for name, price in self.service_tiers if name == tier), self)

    @property
    def every_tier(self) -> tuple[Price, ...]:
        """This price and each service tier's: what a reservation must bound before the answer says."""
        return (self, *(price for _, price in self.service_tiers))

    @property
    def cache_write_1h_rate(self) -> int:
        """The 1-hour cache write rate; without one, the 5-minute rate (a provider without a 1-hour
        TTL bills none; :func:`load_pricing` gives Anthropic models 2 x input when the table does not)."""
        rate = self.cache_write_1h_micro_usd_per_mtok
        return self.cache_write_micro_usd_per_mtok if rate is None else rate

    @property
    def image_input_rate(self) -> int:
        """The rate of an image input token (the input rate, when the table gives none)."""
        rate = self.image_input_micro_usd_per_mtok
        return self.input_micro_usd_per_mtok if rate is None else rate

    @property
    def document_input_rate(self) -> int:
        """The rate of a document input token (the input rate, when the table gives none)."""
        rate = self.document_input_micro_usd_per_mtok
        return self.input_micro_usd_per_mtok if rate is None else rate

    @property
    def max_prompt_rate(self) -> int:
        """The dearest way a prompt token can be billed: input (text, image, document), cache read or
        cache write (either TTL)."""
        return max(
            self.input_micro_usd_per_mtok,
            self.cache_read_micro_usd_per_mtok,
            self.cache_write_micro_usd_per_mtok,
            self.cache_write_1h_rate,
            self.image_input_rate,
            self.document_input_rate,
        )


FREE = Price(
    input_micro_usd_per_mtok=0,
    output_micro_usd_per_mtok=0,
    cache_read_micro_usd_per_mtok=0,
    cache_write_micro_usd_per_mtok=0,
)
"""What an unpriced in-process Local call costs."""


def price_well_formed(price: Price) -> bool:
    """Every rate is a non-negative int (the predicate the contracts use)."""
    rates = (
        price.input_micro_usd_per_mtok,
        price.output_micro_usd_per_mtok,
        price.cache_read_micro_usd_per_mtok,
        price.cache_write_micro_usd_per_mtok,
    )
    derived = (
        price.cache_write_1h_micro_usd_per_mtok,
        price.image_input_micro_usd_per_mtok,
        price.document_input_micro_usd_per_mtok,
    )
    return (
        all(type(r) is int and r >= 0 for r in rates)
        and all(r is None or (type(r) is int and r >= 0) for r in derived)
        and all(isinstance(name, str) and price_well_formed(tier) for name, tier in price.service_tiers)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PricingTable:
    """Prices by (provider kind, model). Build it with :func:`load_pricing`."""

    prices: Mapping[tuple[ProviderKind, str], Price]

    def __post_init__(self) -> None:
        object.__setattr__(self, "prices", MappingProxyType(dict(self.prices)))

    def get(self, provider: ProviderKind, model: str) -> Price | None:
        """The price of ``model`` at ``provider``, or None when the table has none."""
        return self.prices.get((provider, model))

    def price_for(self, provider: ProviderKind, model: str) -> Price:
        """The price of ``model`` at ``provider``; a model without a price is a ConfigError."""
        price = self.get(provider, model)
        if price is None:
            raise ConfigError(f"no price for model {model!r} of provider {provider.value!r} in the pricing table")
        return price

    def price_of_call(self, provider: ProviderKind, model: str) -> Price:
        """The price a call is booked at: the table's, or free for the in-process Local model when
        the table has no entry for it (nothing is billed). Any other unpriced model is a ConfigError:
        without a price no call can be bounded by a budget."""
        price = self.get(provider, model)
        if price is None and provider is ProviderKind.LOCAL:
            return FREE
        return self.price_for(provider, model)


# --- parsing -------------------------------------------------------------------------------------


def _exact_units(value: object, units_per_usd: int, what: str, *, allow_text: bool = False) -> int:
    number_types = (int, Decimal, str) if allow_text else (int, Decimal)
    if isinstance(value, bool) or not isinstance(value, number_types):
        raise ConfigError(f"{what}: expected a number, got {value!r}")
    try:
        amount = Decimal(value)
    except (InvalidOperation, ValueError) as exc:
        raise ConfigError(f"{what}: not a number: {value!r}") from exc
    if not amount.is_finite():
        raise ConfigError(f"{what}: not finite: {value!r}")
    if amount < 0:
        raise ConfigError(f"{what}: negative: {value!r}")
    scaled = amount * units_per_usd
    if scaled != scaled.to_integral_value():
        raise ConfigError(f"{what}: {value!r} is not an exact multiple of {Decimal(1) / units_per_usd} USD")
    return int(scaled)


def parse_usd(value: object, *, what: str = "amount") -> int:
    """An exact, non-negative USD amount (int, Decimal or decimal text; never float) as pico-USD.

    :raises ConfigError: for a float, a negative, non-finite or non-numeric value, or one finer than 1e-12.
    """
    return _exact_units(value, PICO_USD_PER_USD, what, allow_text=True)


def _load_pricing(toml_text: str) -> PricingTable:
    try:
        doc = tomllib.loads(toml_text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"pricing TOML does not parse: {exc}") from exc
    by_value = {kind.value: kind for kind in ProviderKind}
    prices: dict[tuple[ProviderKind, str], Price] = {}
    for provider_name, models in doc.items():
        kind = by_value.get(provider_name)
        if kind is None:
            raise ConfigError(f"pricing: unknown provider {provider_name!r}; expected one of {sorted(by_value)}")
        if not isinstance(models, dict):
            raise ConfigError(f"pricing: [{provider_name}] must be a table of models, got {models!r}")
        for model, raw_fields in models.items():
            where = f"pricing: model {model!r} of provider {provider_name!r}"
            if not isinstance(raw_fields, dict):
                raise ConfigError(f"{where}: must be a table of prices, got {raw_fields!r}")
            fields = dict(raw_fields)
            tiers = fields.pop("service_tier", {})
            if not isinstance(tiers, dict) or not all(isinstance(t, dict) for t in tiers.values()):
                raise ConfigError(f"{where}: service_tier must be a table of tier price tables, got {tiers!r}")
            unknown = sorted(set(fields) - set(PRICE_FIELDS))
            if unknown:
                raise ConfigError(f"{where}: unknown keys {unknown!r}; expected {list(PRICE_FIELDS)}")
            missing = [name for name in REQUIRED_PRICE_FIELDS if name not in fields]
            if missing:
                raise ConfigError(f"{where}: missing price(s) {missing!r}")
            rates = {
                name: _exact_units(fields[name], _MICRO_PER_USD, f"{where}: {name}")
                for name in PRICE_FIELDS
                if name in fields
            }
            base = _with_default_cache_prices(rates, kind)
            prices[(kind, model)] = replace(
                base,
                service_tiers=tuple(
                    (str(tier), _tier_price(tier_fields, kind, f"{where}: service_tier.{tier}"))
                    for tier, tier_fields in tiers.items()
                ),
            )
    return PricingTable(prices=prices)


def _tier_price(fields: Mapping[str, object], kind: ProviderKind, where: str) -> Price:
    """One service tier's price table: the same keys as a model's, input and output required."""
    unknown = sorted(set(fields) - set(PRICE_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown!r}; expected {list(PRICE_FIELDS)}")
    missing = [name for name in REQUIRED_PRICE_FIELDS if name not in fields]
    if missing:
        raise ConfigError(f"{where}: missing price(s) {missing!r}")
    rates = {
        name: _exact_units(fields[name], _MICRO_PER_USD, f"{where}: {name}") for name in PRICE_FIELDS if name in fields
    }
    return _with_default_cache_prices(rates, kind)


def _with_default_cache_prices(rates: Mapping[str, int], kind: ProviderKind) -> Price:
    """A Price from parsed rates, charging absent cache prices so that no bill is under-counted:
    an absent ``cache_read_per_mtok`` costs the input price (no provider charges more for a cache
    read than for input); an absent ``cache_write_per_mtok`` costs 1.25 x the input price, rounded
    up to the next micro-USD (Anthropic's 5-minute cache write); an absent
    ``cache_write_1h_per_mtok`` costs 2 x the input price for an Anthropic model (its published
    1-hour rate) and the 5-minute rate for the others (no 1-hour TTL); absent image and document
    prices are the input price (every provider routeproof calls bills image and PDF input as input
    tokens)."""
    input_rate = rates["input_per_mtok"]
    one_hour = rates.get("cache_write_1h_per_mtok")
    if one_hour is None and kind is ProviderKind.ANTHROPIC:
        one_hour = 2 * input_rate
    return Price(
        input_micro_usd_per_mtok=input_rate,
        output_micro_usd_per_mtok=rates["output_per_mtok"],
        cache_read_micro_usd_per_mtok=rates.get("cache_read_per_mtok", input_rate),
        cache_write_micro_usd_per_mtok=rates.get("cache_write_per_mtok", -(-input_rate * 5 // 4)),
        cache_write_1h_micro_usd_per_mtok=one_hour,  # None: Price derives it
        image_input_micro_usd_per_mtok=rates.get("image_input_per_mtok"),
        document_input_micro_usd_per_mtok=rates.get("document_input_per_mtok"),
    )


@icontract.ensure(lambda result: all(price_well_formed(p) for p in result.prices.values()))
def load_pricing(toml_text: str) -> PricingTable:
    """Parse pricing TOML (``[provider."model"]`` tables of ``*_per_mtok`` USD prices; input and
    output are required, absent cache prices are charged as :func:`_with_default_cache_prices` says).

    Floats are read exactly (``parse_float=Decimal``). A missing, negative, non-finite or
    non-numeric price, a price finer than 1e-6 USD/Mtok, an unknown key or an unknown provider is a
    :class:`ConfigError` naming the model.

    :raises ConfigError: on any invalid table.
    """
    return _load_pricing(toml_text)


# --- cost ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CostLine:
    """One line of a bill: what was billed, how many tokens, at which rate, for how much."""

    item: str  # one of COST_ITEMS
    tokens: int
    micro_usd_per_mtok: int  # = pico-USD per token
    cost_pico_usd: int


def _cost_lines(price: Price, usage: Usage) -> tuple[CostLine, ...]:
    text = usage.prompt_tokens - usage.image_input_tokens - usage.document_input_tokens
    rows = (
        ("input", text, price.input_micro_usd_per_mtok),
        ("image input", usage.image_input_tokens, price.image_input_rate),
        ("document input", usage.document_input_tokens, price.document_input_rate),
        ("cache read", usage.cached_input_tokens, price.cache_read_micro_usd_per_mtok),
        (
            "cache write 5m",
            usage.cache_creation_tokens - usage.cache_creation_1h_tokens,
            price.cache_write_micro_usd_per_mtok,
        ),
        ("cache write 1h", usage.cache_creation_1h_tokens, price.cache_write_1h_rate),
        ("output", usage.completion_tokens - usage.reasoning_tokens, price.output_micro_usd_per_mtok),
        ("reasoning", usage.reasoning_tokens, price.output_micro_usd_per_mtok),
    )
    return tuple(
        CostLine(item=item, tokens=tokens, micro_usd_per_mtok=rate, cost_pico_usd=tokens * rate)
        for item, tokens, rate in rows
    )


def _cost_pico_usd(price: Price, usage: Usage) -> int:
    return sum(line.cost_pico_usd for line in _cost_lines(price.for_tier(usage.service_tier), usage))


@icontract.require(price_well_formed)
@icontract.ensure(lambda result: result >= 0)
@icontract.ensure(
    lambda price, usage, result: (
        result
        <= (usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens)
        * price.for_tier(usage.service_tier).max_prompt_rate
        + usage.completion_tokens * price.for_tier(usage.service_tier).output_micro_usd_per_mtok
    ),
    "a usage never costs more than its prompt at the dearest prompt rate plus its completion",
)
def cost_pico_usd(price: Price, usage: Usage) -> int:
    """The exact cost of ``usage`` in pico-USD (``cost_budget``, cache read and write included), at
    the price of the service tier the answer says it used (``usage.service_tier``, :meth:`Price.for_tier`)."""
    return _cost_pico_usd(price, usage)


cost = cost_pico_usd
"""Alias: ``cost(price, usage)`` is :func:`cost_pico_usd`."""


COST_ITEMS = (
    "input",
    "image input",
    "document input",
    "cache read",
    "cache write 5m",
    "cache write 1h",
    "output",
    "reasoning",
)
"""The lines of :func:`cost_lines`, in order. Reasoning is output, billed at the output rate, on its own line."""


@icontract.require(price_well_formed)
@icontract.ensure(lambda result: tuple(line.item for line in result) == COST_ITEMS)
@icontract.ensure(
    lambda price, usage, result: sum(line.cost_pico_usd for line in result) == cost_pico_usd(price, usage)
)
@icontract.ensure(
    lambda usage, result: (
        sum(line.tokens for line in result)
        == usage.prompt_tokens + usage.completion_tokens + usage.cached_input_tokens + usage.cache_creation_tokens
    )
)
def cost_lines(price: Price, usage: Usage) -> tuple[CostLine, ...]:
    """The bill of ``usage`` line by line (:data:`COST_ITEMS`): every token on exactly one line,
    each line its tokens times its rate (the answer's service tier's); the lines sum to :func:`cost_pico_usd`."""
    return _cost_lines(price.for_tier(usage.service_tier), usage)


def _format_usd(pico_usd: int) -> str:
    sign = "-" if pico_usd < 0 else ""
    whole, frac = divmod(abs(pico_usd), PICO_USD_PER_USD)
    digits = f"{frac:012d}".rstrip("0").ljust(2, "0")
    return f"{sign}${whole}.{digits}"


@icontract.ensure(lambda pico_usd, result: result.startswith("-$") == (pico_usd < 0))
@icontract.ensure(lambda result: "." in result)
def format_usd(pico_usd: int) -> str:
    """A human, exact rendering of a pico-USD amount: ``$0.01``, ``$0.000003``, ``-$1.50``."""
    return _format_usd(pico_usd)


# --- worst case of a request --------------------------------------------------------------------

REQUEST_OVERHEAD_TOKENS = 64
"""Framing of the whole conversation: begin/end markers, the priming of the assistant's reply."""
MESSAGE_OVERHEAD_TOKENS = 16
"""Role markers and separators around one message (OpenAI documents 3-4; margin for others)."""
BLOCK_OVERHEAD_TOKENS = 16
"""Wrappers around one content block (tool_use / tool_result tags, a SentencePiece dummy prefix)."""
TOOL_DEFINITION_OVERHEAD_TOKENS = 32
"""Rendering of one tool definition around its name, description and schema."""
TOOL_USE_SYSTEM_PROMPT_TOKENS = 1024
"""Hidden system prompt a provider adds when tools are present (Anthropic documents 313-346)."""


def _json_bytes_bound(text: str) -> int:
    # JSON text may be re-serialised on the way to the provider: ensure_ascii turns one non-ASCII
    # code point (<= 4 UTF-8 bytes) into at most 12 bytes (a surrogate pair of \uXXXX), and the
    # default separators add one space after each ',' and ':'. Bound every character by that: 12
    # bytes per non-ASCII character, 2 per ',' or ':', 1 per other, counted by str methods (a tool's
    # 10 KB result was a Python-level loop of 10,000 steps per call).
    non_ascii = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    return len(text) + text.count(",") + text.count(":") + 11 * non_ascii


def _utf8(text: str) -> int:
    # an ASCII text (most prompts) is as many bytes as characters: no encoded copy made to count them
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _worst_case_prompt_tokens(req: ChatRequest) -> int:
    total = REQUEST_OVERHEAD_TOKENS
    if req.system is not None:
        total += MESSAGE_OVERHEAD_TOKENS + _utf8(req.system)
    if req.tools:
        total += TOOL_USE_SYSTEM_PROMPT_TOKENS
    for tool in req.tools:
        total += TOOL_DEFINITION_OVERHEAD_TOKENS + _utf8(tool.name) + _utf8(tool.description)
        total += _json_bytes_bound(tool.input_schema_json)
    for message in req.messages:
        total += MESSAGE_OVERHEAD_TOKENS
        for block in message.content:
            total += BLOCK_OVERHEAD_TOKENS
            if isinstance(block, TextBlock):
                total += _utf8(block.text)
            elif isinstance(block, ToolUseBlock):
                total += _utf8(block.id) + _utf8(block.name) + _json_bytes_bound(block.input_json)
            elif isinstance(block, ToolResultBlock):
                total += _utf8(block.tool_use_id) + _json_bytes_bound(block.content)
            else:  # images, documents, thinking: core/input_size.py's conservative bound
                total += block_tokens_bound(block)
    return total


@icontract.ensure(lambda result: result >= REQUEST_OVERHEAD_TOKENS)
@icontract.ensure(
    lambda req, result: (
        result >= sum(_utf8(b.text) for m in req.messages for b in m.content if isinstance(b, TextBlock))
    )
)
def worst_case_prompt_tokens(req: ChatRequest) -> int:
    """An upper bound on the prompt tokens any provider will bill for ``req``.

    Why it is an upper bound: a byte-level BPE tokenizer (tiktoken, Claude's, Llama 3's) starts
    from one token per UTF-8 byte and every merge joins two tokens into one, so a text never has
    more tokens than bytes; SentencePiece with byte fallback is the same plus one dummy-prefix
    piece per segment, which ``BLOCK_OVERHEAD_TOKENS`` covers. Everything the provider renders
    around the text (role markers, tool wrappers, the hidden tool-use prompt) is bounded by the
    overhead constants; JSON is counted at its longest re-serialisation (``ensure_ascii`` escapes,
    spaces after separators). Tool results are counted as JSON because some providers quote them.
    """
    return _worst_case_prompt_tokens(req)


def _worst_case_cost_pico_usd(price: Price, req: ChatRequest) -> int:
    prompt = _worst_case_prompt_tokens(req)  # at the dearest tier: the answer says which it used only afterwards
    return max(prompt * p.max_prompt_rate + req.max_tokens * p.output_micro_usd_per_mtok for p in price.every_tier)


@icontract.require(price_well_formed)
@icontract.ensure(lambda price, req, result: result >= req.max_tokens * price.output_micro_usd_per_mtok)
@icontract.ensure(lambda price, req, result: result >= worst_case_prompt_tokens(req) * price.input_micro_usd_per_mtok)
def worst_case_cost_pico_usd(price: Price, req: ChatRequest) -> int:
    """What ``req`` can cost at most, in pico-USD: the prompt bound at the dearest prompt rate
    (input, cache read or cache write) plus ``max_tokens`` at the output rate. This is the amount
    to reserve before the call; any usage with prompt-side tokens <= ``worst_case_prompt_tokens``
    and completion tokens <= ``max_tokens`` costs no more."""
    return _worst_case_cost_pico_usd(price, req)
