"""The regression alarm's statistics (generations/stats.py) against known values:
worked by hand, and scipy's (a dev dependency only) on random samples."""

import math
import random

import pytest
from scipy import stats as scipy_stats

from generations.stats import mann_whitney_u, normal_sf, quantile, two_proportion_z


def test_normal_tail_matches_the_table():
    assert normal_sf(0) == 0.5
    assert normal_sf(1.959964) == pytest.approx(0.025, abs=1e-7)
    assert normal_sf(-1.644854) == pytest.approx(0.95, abs=1e-7)
    assert normal_sf(3) == pytest.approx(0.0013498980, rel=1e-7)


def test_quantile_interpolates_like_numpy():
    assert quantile([], 0.5) is None
    assert quantile([7], 0.95) == 7
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile([10, 20, 30, 40, 50], 0.95) == pytest.approx(48)


def test_two_proportion_z_by_hand():
    # 30/200 against 15/200: pooled 45/400, z = 0.075 / sqrt(0.1125 * 0.8875 * 0.01).
    z, p = two_proportion_z(30, 200, 15, 200)
    assert z == pytest.approx(0.075 / math.sqrt(0.1125 * 0.8875 * 0.01))
    assert z == pytest.approx(2.37356, abs=1e-5) and p == pytest.approx(0.008809, abs=1e-6)
    # A drop is no rise: p near 1.
    assert two_proportion_z(15, 200, 30, 200)[1] == pytest.approx(1 - 0.008809, abs=1e-6)
    assert two_proportion_z(0, 50, 0, 80) == (0.0, 1.0)
    with pytest.raises(ValueError):
        two_proportion_z(0, 0, 1, 10)


def test_mann_whitney_by_hand():
    # new [3, 4, 5] vs old [1, 2]: every pair favours new, U = 6; ranks have no ties.
    u, p = mann_whitney_u([3, 4, 5], [1, 2])
    assert u == 6
    z = (6 - 3 - 0.5) / math.sqrt(3 * 2 * 6 / 12)
    assert p == pytest.approx(normal_sf(z))
    # All equal: no evidence either way.
    assert mann_whitney_u([5, 5], [5, 5, 5]) == (3.0, 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_mann_whitney_matches_scipy_with_ties(seed):
    rng = random.Random(seed)
    old = [rng.choice(range(80, 140, 5)) for _ in range(rng.randint(20, 60))]
    new = [rng.choice(range(85, 170, 5)) for _ in range(rng.randint(20, 60))]
    u, p = mann_whitney_u(new, old)
    expected = scipy_stats.mannwhitneyu(new, old, alternative="greater", method="asymptotic",
                                        use_continuity=True)
    assert u == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-9)


@pytest.mark.parametrize(("x1", "n1", "x2", "n2"), [(12, 100, 4, 100), (3, 40, 9, 300), (50, 60, 40, 70)])
def test_two_proportion_z_matches_the_chi_square_test(x1, n1, x2, n2):
    # The pooled z-test squared is Pearson's chi-square on the 2x2 table (no Yates correction).
    z, _ = two_proportion_z(x1, n1, x2, n2)
    chi2 = scipy_stats.chi2_contingency([[x1, n1 - x1], [x2, n2 - x2]], correction=False).statistic
    assert z * z == pytest.approx(chi2)
