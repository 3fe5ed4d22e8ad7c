"""docs/configuration-reference.md is what the configuration loader accepts, key for key."""

from __future__ import annotations

import pytest

import routeproof.config.load
from tools import config_reference


def test_reference_page_is_up_to_date() -> None:
    """The committed page equals what tools/config_reference.py generates from the loader now."""
    assert config_reference.main(["--check"]) == 0


def test_every_table_of_the_loader_is_probed() -> None:
    """Each probe reads its table's keys from the loader (the provider table has ``model``)."""
    keys = config_reference.accepted_keys(config_reference.PROBES["driver.providers.NAME"])
    assert {"kind", "model", "base_url", "timeout_ms"} <= set(keys)


def test_a_new_loader_key_without_a_description_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key the loader starts accepting cannot ship undocumented: the generator names it."""
    monkeypatch.setattr(routeproof.config.load, "_FAILOVER_KEYS", routeproof.config.load._FAILOVER_KEYS | {"hedge_ms"})
    keys = {table: config_reference.accepted_keys(probe) for table, probe in config_reference.PROBES.items()}
    with pytest.raises(SystemExit, match=r"no description.*'driver.failover', 'hedge_ms'"):
        config_reference.render(keys)
