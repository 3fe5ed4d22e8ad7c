"""Chaos: Toxiproxy faults between the real router and the mock providers (``tox -e chaos``)."""
