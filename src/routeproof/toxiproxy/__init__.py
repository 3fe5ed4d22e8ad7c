"""An embedded, Toxiproxy-compatible fault-injection server (asyncio, loopback only).

It speaks Toxiproxy 2.12.0's HTTP API (``/version``, ``/proxies``, ``/populate``, ``/reset``, the
toxics endpoints: same paths, JSON, status codes and error envelopes) and reproduces its toxics on
the byte stream: ``latency`` (with jitter), ``bandwidth``, ``slow_close``, ``timeout``,
``reset_peer``, ``slicer``, ``limit_data`` and ``noop``, per direction, with toxicity. It exists
because no package registry ships the Go server; when one is available, use it instead.

Deliberate differences from 2.12.0 (each documented where it is implemented):

* every listener binds 127.0.0.1, whatever host a request names (an empty ``listen`` binds
  127.0.0.1, not all interfaces);
* attribute values that crash or spin the real server (``bandwidth`` rate < 0, ``slicer``
  average_size <= 0 or size_variation outside [0, average_size], negative slicer delay) get a 400;
* JSON *syntax* errors keep the ``bad request body:`` prefix but not Go's exact wording;
* ``/metrics`` is not served (404, as the real server without ``-proxy-metrics``);
* the upstream dial has a 10 s timeout (Go's has none).

    routeproof toxiproxy --port 8474
"""

from __future__ import annotations

from routeproof.toxiproxy.api import VERSION, ToxiproxyServer
from routeproof.toxiproxy.model import ApiError, Toxic

__all__ = ["VERSION", "ApiError", "Toxic", "ToxiproxyServer"]
