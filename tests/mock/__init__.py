"""Tests of routeproof.mock over real loopback sockets."""
