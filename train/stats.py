"""The statistics an ablation's verdict rests on, from scipy.stats and statsmodels (tested
against known values in tests/test_ablation.py):

- a paired t-test over seeds (``scipy.stats.ttest_rel``) when both variants ran the same seeds.
  What the pairing shares: the same seed gives both variants the same initial weights (and,
  with ``data_seed``, the same document-order seed); every run is scored on the same
  evaluation items. The training text itself differs - that is the treatment;
- Welch's t-test (``ttest_ind(equal_var=False)``) when the seeds do not pair;
- the confidence interval of the difference from the same test;
- seeds needed at 80% power (``statsmodels`` TTestPower: a paired design is a one-sample test of
  the differences) for the observed mean difference and spread - the number of seeds at which a
  real difference of this size would be detected 4 times in 5. (Solving for the n at which the
  observed mean would just reach p < alpha instead gives ~50% power, about half as many.);
- Holm's step-down adjustment across a report's headline tests (``multipletests``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np

POWER = 0.8


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t."""
    from scipy import stats  # lazy: scipy.stats (0.6 s to import), only when a statistic is computed

    return float(stats.t.ppf(p, df))


SEEDS_SEARCHED = 10_000  # seeds_for_power returns this when even this many would not do


def seeds_for_power(mean: float, sd: float, alpha: float = 0.05, power: float = POWER,
                    limit: int = SEEDS_SEARCHED) -> Optional[int]:
    """Seeds per variant for a paired t-test to detect ``mean`` with probability ``power``
    when paired differences spread by ``sd`` (None when there is nothing to detect)."""
    if mean == 0 or not sd or not math.isfinite(mean / sd):
        return None
    from statsmodels.stats.power import TTestPower  # lazy: statsmodels (1 s to import)

    # the smallest whole n reaching the power (solve_power's root finder fails below n = 2)
    ns = np.arange(2, limit + 1)
    reached = np.flatnonzero(TTestPower().power(effect_size=abs(mean) / sd, nobs=ns, alpha=alpha,
                                                alternative="two-sided") >= power)
    return int(ns[reached[0]]) if len(reached) else limit


def seeds_text(needed: int, about: str = "") -> str:
    """A :func:`seeds_for_power` count for a report: its search limit reads as what it means."""
    return f"more than {SEEDS_SEARCHED:,}" if needed >= SEEDS_SEARCHED else f"{about}{needed:,}"


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[float]:
    """Holm-adjusted p-values (family-wise error at ``alpha`` across the given tests)."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import (
        multipletests,  # lazy: statsmodels (1 s to import), only for Holm's correction
    )

    return [float(p) for p in multipletests(list(pvalues), alpha=alpha, method="holm")[1]]


def compare(a: dict[int, float], b: dict[int, float], alpha: float = 0.05) -> Optional[dict]:
    """b - a over seeds: paired when both have the same seeds (>= 2), else Welch (>= 2 each).
    Returns the mean difference, its (1 - alpha) confidence interval, t, df, p, the test and,
    for paired tests, the seeds needed at 80% power."""
    from scipy import stats  # lazy: scipy.stats (0.6 s to import), only when a statistic is computed

    common = sorted(set(a) & set(b))
    sd = None
    if len(common) >= 2 and len(common) == len(a) == len(b):
        xs, ys = [b[s] for s in common], [a[s] for s in common]
        diffs = [x - y for x, y in zip(xs, ys)]
        mean = sum(diffs) / len(diffs)
        sd = float(stats.tstd(diffs)) if len(set(diffs)) > 1 else 0.0
        test = f"paired t-test over {len(common)} seeds"
        if sd == 0:
            return _degenerate(mean, len(common) - 1, test, alpha)
        result = stats.ttest_rel(xs, ys)
    elif len(a) >= 2 and len(b) >= 2:
        xs, ys = list(b.values()), list(a.values())
        mean = sum(xs) / len(xs) - sum(ys) / len(ys)
        test = f"Welch t-test ({len(a)} and {len(b)} seeds)"
        if len(set(xs)) == 1 and len(set(ys)) == 1:
            return _degenerate(mean, len(xs) + len(ys) - 2, test, alpha)
        result = stats.ttest_ind(xs, ys, equal_var=False)
    else:
        return None
    interval = result.confidence_interval(1 - alpha)
    p = float(result.pvalue)
    out = {"difference": mean, "low": float(interval.low), "high": float(interval.high),
           "t": float(result.statistic), "df": float(result.df), "p": p, "test": test,
           "significant": p < alpha}
    if sd:
        needed = seeds_for_power(mean, sd, alpha)
        if needed:
            out["seeds_needed"] = needed
            out["power"] = POWER
    return out


def _degenerate(mean: float, df: float, test: str, alpha: float) -> dict:
    """No spread at all: p is 1 for no difference, 0 for a constant one (no interval width)."""
    return {"difference": mean, "low": mean, "high": mean, "t": 0.0 if mean == 0 else math.copysign(math.inf, mean),
            "df": df, "p": 1.0 if mean == 0 else 0.0, "test": test, "significant": mean != 0 and alpha > 0}
