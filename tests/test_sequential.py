"""Sequential seeds (c4forge/ablation/sequential.py): the boundaries equal published ones, the
procedure keeps its error rate despite repeated looks (simulated), and it saves seeds where a
difference is real."""
import math

import numpy as np
import pytest
from scipy import stats

from c4forge.ablation import sequential
from c4forge.ablation.sequential import Plan, boundaries, constant_boundaries, looks_so_far, simulate

# Jennison and Turnbull, "Group Sequential Methods with Applications to Clinical Trials" (2000),
# two-sided tests at alpha = 0.05 with K equally spaced looks: Pocock's constant C_P(K, 0.05)
# (table 2.1) and O'Brien-Fleming's C_B(K, 0.05) (table 2.3), boundary C_B sqrt(K / k).
POCOCK = {2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413}
OBRIEN_FLEMING = {2: 1.977, 3: 2.004, 4: 2.024, 5: 2.040}


@pytest.mark.parametrize("looks", [2, 3, 4, 5])
def test_classical_boundaries_equal_the_published_tables(looks):
    pocock = constant_boundaries(looks, 0.05, "pocock")
    assert all(c == pytest.approx(POCOCK[looks], abs=0.002) for c in pocock)
    obf = constant_boundaries(looks, 0.05, "obrien-fleming")
    assert obf[-1] == pytest.approx(OBRIEN_FLEMING[looks], abs=0.002)
    assert obf[0] == pytest.approx(OBRIEN_FLEMING[looks] * math.sqrt(looks), abs=0.005)


def test_spending_boundaries_equal_gsdesign():
    """gsDesign's two-sided symmetric design with Lan-DeMets O'Brien-Fleming spending of the
    one-sided 0.025 on each side, 5 equally spaced looks (gsDesign(k=5, test.type=2,
    sfu=sfLDOF)): upper boundaries 4.88, 3.36, 2.68, 2.29, 2.03. Both sides together spend
    4 - 4 Phi(z_0.9875 / sqrt(t))."""
    z = stats.norm.ppf(1 - 0.025 / 2)

    def both_sides(t: float) -> float:
        return 4 - 4 * stats.norm.cdf(z / math.sqrt(t))

    got = boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, both_sides)
    assert got == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=0.01)


def test_our_spending_first_boundary_and_total_error():
    """Lan-DeMets (1983) two-sided O'Brien-Fleming-type spending: the first look spends
    2 - 2 Phi(1.96 / sqrt(t1)), so its boundary is 1.96 / sqrt(t1); Pocock-type boundaries are
    nearly flat; all of alpha is spent by the last look."""
    fractions = [0.3, 0.5, 0.8, 1.0]
    obf = boundaries(fractions, 0.05, "obrien-fleming")
    assert obf[0] == pytest.approx(stats.norm.ppf(0.975) / math.sqrt(0.3), abs=1e-4)
    assert obf == sorted(obf, reverse=True) and 1.96 < obf[-1] < 2.1
    pocock = boundaries(fractions, 0.05, "pocock")
    assert max(pocock) - min(pocock) < 0.25 and min(pocock) > 1.96
    crossed = 1 - sequential._continue_probability(obf, fractions)
    assert crossed == pytest.approx(0.05, abs=2e-4)


def test_looks_stop_at_the_first_decision():
    plan = Plan((3, 5, 8))
    strong = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98]
    looks = looks_so_far(strong, plan)
    assert looks[-1].decided and looks[-1].seeds in (3, 5)
    assert all(not look.decided for look in looks[:-1])
    noise = [0.3, -0.2, 0.1, -0.4, 0.2]
    looks = looks_so_far(noise, plan)
    assert [look.seeds for look in looks] == [3, 5] and not any(look.decided for look in looks)
    assert plan.levels == sorted(plan.levels) and plan.levels[-1] < 0.05


def test_the_sequential_design_keeps_its_error_rate_at_zero_effect():
    """>= 2,000 simulated ablations with no difference: the share declared different is at most
    alpha + 2 simulation standard errors. Looking three times at 5% each, as a user re-running
    with more seeds would, is not (the test of the procedure, not just of the code)."""
    plan = Plan.rounds(3, 10, 1)
    result = simulate(0.0, plan, trials=4000, seed=1)
    assert result["decided"] <= 0.05 + 2 * result["decided_se"]
    rng = np.random.default_rng(2)
    d = rng.normal(0.0, 1.0, size=(4000, 8))
    rejected = np.zeros(4000, dtype=bool)
    for n in (3, 5, 8):  # each look at 5%
        x = d[:, :n]
        p = 2 * stats.t.sf(np.abs(x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))), n - 1)
        rejected |= p <= 0.05
    assert rejected.mean() > 0.08  # about 0.1


def test_it_saves_seeds_where_the_difference_is_real():
    """At a standardised effect of 1.5 (a paired difference 1.5 seed standard deviations wide;
    the byte-matched shared-crawl example measured about 1.2, the token-matched one about 7),
    the sequential design uses fewer seeds on average than the fixed design at its maximum and
    loses little power."""
    plan = Plan.rounds(3, 10, 1)
    result = simulate(1.5, plan, trials=3000, seed=3)
    assert result["mean_seeds"] < 0.75 * result["fixed_seeds"]
    assert result["decided"] > result["fixed_decided"] - 0.05
