"""A/B: the CPU one gateway request spends in metrics, OpenTelemetry SDK meter vs the in-process meter.

Each "request" makes the calls the router makes for a one-attempt answered call: ``attempt``
(latency, GenAI duration), ``usage`` (two token observations) and ``call`` (the terminal row and
attempts-per-call). Prints microseconds per request for each meter, best of ``--repeat`` runs.
Usage: ``python -O -m benchmarks.metrics_ab [--requests 20000] [--repeat 5]`` (note the load average).
"""

from __future__ import annotations

import argparse
import time

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.core.types import AttemptRecord, AttemptStatus, ProviderKind, Usage
from routeproof.gateway.local_meter import LocalMeterProvider
from routeproof.observe import RouterMetrics

_RECORD = AttemptRecord(
    provider=ProviderKind.OPENAI,
    model="gpt-4o",
    attempt_num=1,
    fallback_position=0,
    status=AttemptStatus.SUCCEEDED,
    elapsed_ms=42,
    http_status=200,
)
_USAGE = Usage(prompt_tokens=900, completion_tokens=70)


def per_request_us(metrics: RouterMetrics, requests: int) -> float:
    """Microseconds of CPU per request spent in the metric calls."""
    started = time.process_time()
    for _ in range(requests):
        metrics.attempt(_RECORD)
        metrics.usage(ProviderKind.OPENAI, "gpt-4o", _USAGE)
        metrics.call(ProviderKind.OPENAI, "gpt-4o", "succeeded", 1)
    return (time.process_time() - started) / requests * 1e6


def main() -> None:
    """Run both meters ``--repeat`` times and print the best of each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sdk = RouterMetrics(MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("ab"))
    local = RouterMetrics(LocalMeterProvider().get_meter("ab"))
    best = {"sdk": min(per_request_us(sdk, args.requests) for _ in range(args.repeat))}
    best["local"] = min(per_request_us(local, args.requests) for _ in range(args.repeat))
    for name, us in best.items():
        print(f"{name:<6} {us:7.2f} us/request")
    print(f"ratio  {best['sdk'] / best['local']:.1f}x")


if __name__ == "__main__":
    main()
