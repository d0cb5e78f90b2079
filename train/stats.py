"""The statistics an ablation's verdict rests on: a paired t-test over seeds (the same seeds
give both variants the same initialisation and data order, and every run is scored on the same
evaluation items), Welch's t-test when the seeds do not pair, with exact Student-t p-values and
confidence intervals (regularised incomplete beta, no scipy needed)."""
from __future__ import annotations

import math
import statistics
from typing import Optional


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Numerical Recipes, betacf)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (p > 0.5) of Student's t, by bisection on the exact CDF."""
    lo, hi = 0.0, 1e6
    target = 2 * (1 - p)
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def compare(a: dict[int, float], b: dict[int, float], alpha: float = 0.05) -> Optional[dict]:
    """b - a over seeds: paired when both have the same seeds (>= 2), else Welch (>= 2 each).
    Returns the mean difference, its (1 - alpha) confidence interval, t, df, p and the test."""
    common = sorted(set(a) & set(b))
    if len(common) >= 2 and len(common) == len(a) == len(b):
        diffs = [b[s] - a[s] for s in common]
        n = len(diffs)
        mean = statistics.fmean(diffs)
        sd = statistics.stdev(diffs)
        se, df, test = sd / math.sqrt(n), n - 1, f"paired t-test over {n} seeds"
    elif len(a) >= 2 and len(b) >= 2:
        va, vb = statistics.variance(a.values()), statistics.variance(b.values())
        na, nb = len(a), len(b)
        mean = statistics.fmean(b.values()) - statistics.fmean(a.values())
        se = math.sqrt(va / na + vb / nb)
        df = (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)) if se else 1
        test = f"Welch t-test ({na} and {nb} seeds)"
        sd = None
    else:
        return None
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
        t = 0.0 if mean == 0 else math.copysign(math.inf, mean)
    else:
        t = mean / se
        p = t_two_sided_p(t, df)
    half = t_quantile(1 - alpha / 2, df) * se
    out = {"difference": mean, "low": mean - half, "high": mean + half, "t": t, "df": df, "p": p,
           "test": test, "significant": p < alpha}
    if sd is not None and mean != 0 and sd > 0:
        # seeds at which this spread of paired differences would give p < alpha
        n = 2
        while n < 10_000 and t_quantile(1 - alpha / 2, n - 1) * sd / math.sqrt(n) >= abs(mean):
            n += 1
        out["seeds_needed"] = n
    return out
