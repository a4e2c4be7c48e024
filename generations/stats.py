"""The tests the regression alarm runs (generations.regression), as normal
approximations: plain Python, no Django, no scipy (not a runtime dependency).
Each p-value is one-sided: the chance of a difference at least this large in
the direction that hurts if the two versions were in truth the same."""

from __future__ import annotations

import math


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def quantile(values: list[float], p: float) -> float | None:
    """The p-quantile, interpolated linearly between order statistics (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    at = (len(ordered) - 1) * p
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def two_proportion_z(x_new: int, n_new: int, x_old: int, n_old: int) -> tuple[float, float]:
    """(z, p) of the pooled two-proportion z-test that the new rate x_new/n_new
    is above the old x_old/n_old. Equal rates of 0 or 1 (no spread): (0, 1)."""
    if n_new == 0 or n_old == 0:
        raise ValueError("both samples must be non-empty")
    pooled = (x_new + x_old) / (n_new + n_old)
    spread = pooled * (1 - pooled) * (1 / n_new + 1 / n_old)
    if spread == 0:
        return 0.0, 1.0
    z = (x_new / n_new - x_old / n_old) / math.sqrt(spread)
    return z, normal_sf(z)


def _ranks(values: list[float]) -> tuple[list[float], float]:
    """Mid-ranks (1-based, ties share their mean rank) and the tie term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    return ranks, ties


def mann_whitney_u(new: list[float], old: list[float]) -> tuple[float, float]:
    """(U, p) of the Mann-Whitney U test that values of `new` tend to be larger
    than those of `old`: U counts the pairs where new > old (ties half), p is the
    normal approximation with the tie correction and a continuity correction of
    1/2 (scipy's mannwhitneyu, method="asymptotic", alternative="greater")."""
    n1, n2 = len(new), len(old)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    ranks, ties = _ranks(list(new) + list(old))
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:  # every value the same
        return u, 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return u, normal_sf(z)
