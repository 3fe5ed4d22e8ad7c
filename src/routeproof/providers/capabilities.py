"""The model-capability table the providers use: the shipped ``routeproof/models.toml``, then the
user's rows from the file named by ``ROUTEPROOF_MODELS_TOML`` (read once per process).

The lookup and the fitting rules are pure (:mod:`routeproof.core.capabilities`); this module only
reads the two files.
"""

from __future__ import annotations

import functools
import logging
import os
from importlib import resources
from pathlib import Path

from routeproof.core.boundary import UnsupportedParameters
from routeproof.core.capabilities import (
    CapabilityTable,
    FittedRequest,
    ModelCapabilities,
    fit_request,
    load_capabilities,
)
from routeproof.core.types import ChatRequest, ProviderKind
from routeproof.errors import ConfigError
from routeproof.providers._passthrough import log_dropped

__all__ = ["MODELS_TOML_ENV", "default_capabilities", "fit_for", "shipped_capabilities"]

logger = logging.getLogger("routeproof")

MODELS_TOML_ENV = "ROUTEPROOF_MODELS_TOML"
"""An environment variable naming a TOML file of capability rows applied after the shipped ones."""


@functools.cache
def shipped_capabilities() -> CapabilityTable:
    """The table that ships with routeproof."""
    return load_capabilities(resources.files("routeproof").joinpath("models.toml").read_text(encoding="utf-8"))


def default_capabilities() -> CapabilityTable:
    """The shipped table, extended by the user's file when ``ROUTEPROOF_MODELS_TOML`` names one.

    :raises ConfigError: when that file cannot be read or is not a valid table (naming the path).
    """
    path = os.environ.get(MODELS_TOML_ENV)
    if not path:
        return shipped_capabilities()
    return _with_user_file(path)


@functools.cache
def _with_user_file(path: str) -> CapabilityTable:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{MODELS_TOML_ENV}={path!r} cannot be read: {exc}") from exc
    try:
        user = load_capabilities(text)
    except ConfigError as exc:
        raise ConfigError(f"{MODELS_TOML_ENV}={path!r}: {exc}") from exc
    return shipped_capabilities().extended(user)


def fit_for(
    table: CapabilityTable, kind: ProviderKind, request: ChatRequest, model: str
) -> tuple[FittedRequest, ModelCapabilities]:
    """``request`` fitted to ``model``'s capabilities, and those capabilities.

    Parameters the model rejects are left out with a log line naming them; with
    ``request.strict_parameters`` they raise ``UnsupportedParameters`` instead, which the attempt
    boundary turns into a skip of this provider.
    """
    caps = table.lookup(kind, model)
    fitted = fit_request(request, caps)
    if fitted.dropped:
        if request.strict_parameters:
            raise UnsupportedParameters(model, fitted.dropped)
        log_dropped(kind, model, fitted.dropped)
    return fitted, caps
