"""Tests of the provider clients and the configuration loader."""
