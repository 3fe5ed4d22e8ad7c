"""A model of the hedge bucket: how often a run of calls leaves too many slow calls unhedged.

TRAFFIC-HEDGE (falsification/test_traffic_hedge.py) chose its burst with this model. Calls arrive
in order; each earns ``ratio`` tokens when it starts (the bucket holds at most ``burst``); a slow
call's hedge is due ``lag`` calls later and goes if a whole token is there (core/hedge.py judges the
bucket when the hedge is due); a hedge is itself slow with the same probability. A run fails the
p99 claim when at least ``calls // 100 + 1`` calls stay slow (the nearest-rank p99 is then slow).

    python benchmarks/traffic/hedge_bucket_model.py --bursts 2 3 5 10 --lags 10 30 60
"""

from __future__ import annotations

import argparse
import random


def slow_left(seed: int, *, burst: float, lag: int, ratio: float, slow_share: float, calls: int) -> int:
    """Calls of one seeded run that stay slow: unhedged slow calls, and hedged ones whose hedge is slow."""
    rng = random.Random(seed)
    slow = [rng.random() < slow_share for _ in range(calls)]
    hedge_slow = [rng.random() < slow_share for _ in range(calls)]
    tokens, left = 0.0, 0
    for i in range(calls + lag):
        if i < calls:
            tokens = min(burst, tokens + ratio)
        due = i - lag
        if 0 <= due < calls and slow[due]:
            if tokens >= 1:
                tokens -= 1
                left += hedge_slow[due]
            else:
                left += 1
    return left


def main() -> None:
    """Print the share of seeds whose p99 stays slow, per burst and lag."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=float, nargs="+", default=[2, 3, 5, 10])
    parser.add_argument("--lags", type=int, nargs="+", default=[10, 30, 60], help="calls started before a hedge is due")
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--ratio", type=float, default=0.1)
    parser.add_argument("--slow-share", type=float, default=0.05)
    args = parser.parse_args()
    allowed = args.calls // 100  # slow calls the nearest-rank p99 tolerates
    print("burst  lag  seeds whose p99 stays slow")
    for burst in args.bursts:
        for lag in args.lags:
            failing = sum(
                slow_left(seed, burst=burst, lag=lag, ratio=args.ratio, slow_share=args.slow_share, calls=args.calls)
                > allowed
                for seed in range(args.seeds)
            )
            print(f"{burst:5g}  {lag:3d}  {failing / args.seeds:.2%}")


if __name__ == "__main__":
    main()
