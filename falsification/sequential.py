"""A sequential test by betting (an e-process) for randomised rows: a verdict that is not one seed's draw.

A randomised row runs its experiment once per pre-registered seed and gets one number per seed
(e.g. H0-LATENCY's p99 improvement). The claim is about the *typical* run: "the median over runs is
at least ``threshold``". With ``Y_k = 1[x_k >= threshold]`` and ``p = P(Y = 1)`` that claim is
``p > 1/2``; its negation is ``p <= 1/2``. Two nonnegative wealth processes bet on the seeds in turn
(testing by betting; Shafer 2021, Waudby-Smith & Ramdas 2024, and the sequential falsification of
arXiv:2502.09858 that seed 003 cites):

* ``e_for``  = prod (1 + l_k (Y_k - 1/2)) is a supermartingale when ``p <= 1/2`` (the claim is false);
* ``e_against`` = prod (1 + m_k (1/2 - Y_k)) is a supermartingale when ``p >= 1/2``.

The bets ``l_k, m_k`` in [0, 1.5] are predictable (the Kelly fraction at the Krichevsky-Trofimov
estimate of ``p`` from the seeds *before* k). By Ville's inequality, whatever the stopping rule,
P(e_for ever reaches 1/alpha) <= alpha when the claim is false: that is the Type-I error of
"survived", controlled at ``alpha`` with optional stopping. The run stops at the first seed where
either wealth reaches ``1/alpha``, or after the last pre-registered seed. The verdict is "survived"
only when ``e_for`` reached ``1/alpha``; if ``e_against`` did instead, the claim is refuted; if
neither did, the claim was not established and the row is falsified too (the burden is on the claim).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["MAX_BET", "SignTest", "distribution"]

MAX_BET = 1.5  # never stake more than 75 % of the wealth on one seed


@dataclass(slots=True, kw_only=True)
class SignTest:
    """The two e-processes over the seeds seen so far."""

    threshold: float
    alpha: float = 0.05
    values: list[float] = field(default_factory=list)
    e_for: float = 1.0
    e_against: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")

    @property
    def successes(self) -> int:
        """Seeds whose value met the threshold."""
        return sum(v >= self.threshold for v in self.values)

    def _bets(self) -> tuple[float, float]:
        p_hat = (self.successes + 0.5) / (len(self.values) + 1)  # Krichevsky-Trofimov, before this seed
        kelly = 2 * (2 * p_hat - 1)
        return min(MAX_BET, max(0.0, kelly)), min(MAX_BET, max(0.0, -kelly))

    def update(self, value: float) -> None:
        """Bet on one more seed's value."""
        bet_for, bet_against = self._bets()
        y = 1.0 if value >= self.threshold else 0.0
        self.e_for *= 1 + bet_for * (y - 0.5)
        self.e_against *= 1 + bet_against * (0.5 - y)
        self.values.append(value)

    @property
    def decided(self) -> bool:
        """Whether either wealth has reached 1/alpha."""
        return max(self.e_for, self.e_against) >= 1 / self.alpha

    @property
    def survived(self) -> bool:
        """The claim (median >= threshold) is established at level alpha."""
        return self.e_for >= 1 / self.alpha

    @property
    def outcome(self) -> str:
        """In words: established, refuted, or not established within the seeds run."""
        if self.survived:
            return f"claim established (e_for {self.e_for:.1f} >= {1 / self.alpha:.0f})"
        if self.e_against >= 1 / self.alpha:
            return f"claim refuted (e_against {self.e_against:.1f} >= {1 / self.alpha:.0f})"
        return (
            f"claim not established within {len(self.values)} seeds "
            f"(e_for {self.e_for:.2f}, e_against {self.e_against:.2f} < {1 / self.alpha:.0f})"
        )


def distribution(values: list[float]) -> str:
    """min / quartiles / max / mean of per-seed values, as percentages."""
    if len(values) < 2:
        return ", ".join(f"{v:.1%}" for v in values)
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (
        f"min {min(values):.1%}, q1 {q1:.1%}, median {median:.1%}, q3 {q3:.1%}, max {max(values):.1%}, "
        f"mean {statistics.fmean(values):.1%}"
    )
