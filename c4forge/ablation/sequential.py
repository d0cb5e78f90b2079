"""Seeds added until the question is decided, with the error rate it states: a group-sequential
paired t-test with alpha spending.

An ablation that looks at its verdict after 3 seeds, again after 5 and again after 8, and stops
at the first significant look, has a type I error well above the level of each look (about 11%
for three looks at 5%). Group-sequential designs fix that by spending the error over the planned
looks: look k rejects when the test statistic crosses a boundary ``c_k`` chosen so that the
probability of crossing at some look, when there is no difference, is ``alpha``.

- Boundaries: Lan and DeMets' alpha-spending functions (O'Brien-Fleming-type, the default:
  almost nothing is spent early, so the last look keeps nearly the fixed design's level; or
  Pocock-type: the same nominal level at every look), at information fractions t_k = n_k / N
  (seeds at look k over the most seeds allowed). Each c_k solves
  P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = a(t_k) - a(t_{k-1})
  for the canonical joint normal of the looks' statistics (corr(Z_i, Z_j) = sqrt(t_i / t_j)),
  by recursive numerical integration (Armitage, McPherson and Rowe 1969; Simpson's rule on a
  grid per look, scipy's normal distribution), as gsDesign and ldbounds compute them.
- The statistic is a paired t over seeds with few degrees of freedom, not a z: each look
  compares the paired t-test's p-value with its boundary's nominal two-sided level
  p_k = 2 (1 - Phi(c_k)) times one factor, found by simulating 200,000 ablations with no
  difference, that brings the procedure's total error back to alpha (at the nominal levels
  alone the looks' jointly heavy-tailed t statistics gave 5.7% for 5% over 8 looks;
  :func:`calibrated_levels`). Checked by independent simulation in tests/test_sequential.py and
  benchmarks/bench_sequential.py.
- Several headline comparisons: each gets ``alpha / m`` (Bonferroni over the m headline tests
  of the report), so the family-wise error over every comparison and every look stays at alpha.

Efficacy boundaries only: a comparison with no real difference is never "decided"; it runs to
the most seeds allowed and the report says so, with the seeds a fixed design would need.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Optional, Union

import numpy as np
from scipy import optimize, stats

from c4forge.train.stats import seeds_for_power, seeds_text

SPENDING = ("obrien-fleming", "pocock")
Spending = Union[str, Callable[[float], float]]


def spent(t: float, alpha: float, kind: Spending = "obrien-fleming") -> float:
    """Lan-DeMets alpha-spending: the two-sided error spent by information fraction ``t``
    (0 < t <= 1). O'Brien-Fleming-type: 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (Lan and DeMets 1983);
    Pocock-type: alpha ln(1 + (e - 1) t)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if callable(kind):  # a spending function of one's own, t -> error spent (tests: gsDesign's)
        return float(kind(t))
    if kind == "obrien-fleming":
        return float(2 * (1 - stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t))))
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"spending {kind!r}: choose {', '.join(SPENDING)}")


GRID = 401  # Simpson points per look: boundary crossing probabilities to about 1e-7


def _simpson(b: float, n: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights on [-b, b] (n odd)."""
    x = np.linspace(-b, b, n)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return x, w * (x[1] - x[0]) / 3


def _look(state: Optional[tuple[np.ndarray, np.ndarray, float]], t: float, c: float,
          keep: bool = True) -> tuple[float, Optional[tuple[np.ndarray, np.ndarray, float]]]:
    """(P(crossing at this look and not before), the state to go on from). The looks'
    statistics are Z_k = S_k / sqrt(t_k) for a Brownian motion S (independent increments of
    variance t_k - t_(k-1)); ``state`` holds the sub-density of S at the last look on its
    continuation region as (points, masses, t): the recursive numerical integration of
    Armitage, McPherson and Rowe (1969), with the crossing probability in closed form per point."""
    b = c * math.sqrt(t)
    if state is None:
        crossing = float(2 * stats.norm.sf(c))
        density = None
        if keep:
            x, w = _simpson(b)
            density = (x, w * stats.norm.pdf(x, scale=math.sqrt(t)), t)
        return crossing, density
    x0, m0, t0 = state
    sigma = math.sqrt(t - t0)
    crossing = float(np.sum(m0 * (stats.norm.cdf((-b - x0) / sigma) + stats.norm.sf((b - x0) / sigma))))
    if not keep:
        return crossing, None
    x, w = _simpson(b)
    f = stats.norm.pdf((x[:, None] - x0[None, :]) / sigma) @ m0 / sigma
    return crossing, (x, w * f, t)


def _continue_probability(bounds: Sequence[float], fractions: Sequence[float]) -> float:
    """P(|Z_i| < bounds[i] for every look i) under no difference."""
    state, crossed = None, 0.0
    for c, t in zip(bounds, fractions):
        p, state = _look(state, t, min(c, 40.0))
        crossed += p
    return 1.0 - crossed


@lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float, kind: Spending) -> tuple[float, ...]:
    bounds: list[float] = []
    state = None
    for k, t in enumerate(fractions):
        target = spent(t, alpha, kind) - (spent(fractions[k - 1], alpha, kind) if k else 0.0)
        if target <= 1e-12:
            c = math.inf
        else:
            c = optimize.brentq(lambda c, state=state, t=t, target=target: _look(state, t, c, keep=False)[0] - target,
                                0.1, 40.0, xtol=1e-7)
        _, state = _look(state, t, min(c, 40.0))
        bounds.append(float(c))
    return tuple(bounds)


def boundaries(fractions: Sequence[float], alpha: float = 0.05, kind: Spending = "obrien-fleming") -> list[float]:
    """Two-sided z boundaries at the given information fractions (increasing, last <= 1)."""
    fractions = tuple(float(f) for f in fractions)
    if any(b <= a for a, b in zip(fractions, fractions[1:])) or not 0 < fractions[0] or fractions[-1] > 1:
        raise ValueError(f"information fractions must increase within (0, 1]: {fractions}")
    return list(_boundaries(fractions, float(alpha), kind))


def constant_boundaries(looks: int, alpha: float = 0.05, kind: str = "pocock") -> list[float]:
    """The classical designs at equally spaced looks (Pocock 1977: one constant boundary;
    O'Brien and Fleming 1979: c * sqrt(K / k)), solved for the constant: what the published
    tables (Jennison and Turnbull 2000, tables 2.1 and 2.3) list, used to check the integration."""
    fractions = [(k + 1) / looks for k in range(looks)]
    shape = [1.0] * looks if kind == "pocock" else [math.sqrt(looks / (k + 1)) for k in range(looks)]

    def error(c: float) -> float:
        return 1 - _continue_probability([c * s for s in shape], fractions) - alpha

    c = optimize.brentq(error, 1.0, 6.0, xtol=1e-7)
    return [c * s for s in shape]


def nominal_levels(bounds: Sequence[float]) -> list[float]:
    """Each look's boundary as a two-sided p-value threshold."""
    return [0.0 if not math.isfinite(c) else float(2 * (1 - stats.norm.cdf(c))) for c in bounds]


@dataclasses.dataclass(frozen=True)
class Plan:
    """Looks at these seed counts (increasing; the last is the most seeds allowed)."""

    looks: tuple[int, ...]
    alpha: float = 0.05
    kind: str = "obrien-fleming"
    comparisons: int = 1  # headline comparisons sharing alpha (Bonferroni)

    @classmethod
    def rounds(cls, first: int, most: int, step: int, **kwargs) -> Plan:
        looks = list(range(first, most + 1, step))
        if looks[-1] != most:
            looks.append(most)
        return cls(tuple(looks), **kwargs)

    @property
    def levels(self) -> list[float]:
        """The p-value each look's paired t-test must reach: the spending boundaries' nominal
        levels, scaled by the one factor that gives the t-based procedure its stated error
        (:func:`calibrated_levels`)."""
        fractions = [n / self.looks[-1] for n in self.looks]
        nominal = nominal_levels(boundaries(fractions, self.alpha / self.comparisons, self.kind))
        return calibrated_levels(self.looks, tuple(nominal), self.alpha / self.comparisons)


CALIBRATION_TRIALS = 200_000


@lru_cache(maxsize=64)
def calibrated_levels(looks: tuple[int, ...], nominal: tuple[float, ...], alpha: float) -> list[float]:
    """``nominal`` levels times the factor at which the paired t-tests at ``looks``, on
    simulated ablations with no difference, reject at some look with probability ``alpha``.

    Why: the boundaries come from the joint normal of z statistics; the looks' t statistics at
    3-10 seeds are jointly heavier-tailed, and at their nominal levels the procedure's error was
    5.7% for alpha 5% over 8 looks (20,000 simulated ablations, benchmarks/bench_sequential.py).
    One factor keeps the spending function's shape (how the error is spread over the looks) and
    restores the total. The simulation is seeded (the same levels every run) and 200,000
    ablations put the factor's own error near 0.1% of alpha."""
    rng = np.random.default_rng(20261125)
    d = rng.standard_normal((CALIBRATION_TRIALS, looks[-1]))
    p = np.empty((CALIBRATION_TRIALS, len(looks)))
    for k, n in enumerate(looks):
        x = d[:, :n]
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
        p[:, k] = 2 * stats.t.sf(np.abs(t), n - 1)
    ratio = (p / np.maximum(np.asarray(nominal), 1e-300)).min(axis=1)  # rejects iff ratio <= factor
    factor = float(np.quantile(ratio, alpha))
    return [min(1.0, level * factor) for level in nominal]


@dataclasses.dataclass(frozen=True)
class Look:
    seeds: int
    p: Optional[float]
    level: float
    decided: bool


def paired_p(differences: Sequence[float]) -> Optional[float]:
    """Two-sided p of the paired t-test on per-seed differences (None below 2 seeds or with no
    spread, where a t-test says nothing)."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 2 or np.std(d, ddof=1) == 0:
        return None
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    return float(2 * stats.t.sf(abs(t), len(d) - 1))


def looks_so_far(differences: Sequence[float], plan: Plan) -> list[Look]:
    """Every planned look the seeds so far reach, in order, up to the first that decides."""
    out = []
    for n, level in zip(plan.looks, plan.levels):
        if n > len(differences):
            break
        p = paired_p(differences[:n])
        decided = p is not None and p <= level
        out.append(Look(n, p, level, decided))
        if decided:
            break
    return out


def simulate(effect: float, plan: Plan, trials: int = 2000, seed: int = 0) -> dict:
    """``trials`` simulated ablations with paired differences ~ Normal(effect, 1) per seed, run
    through the plan: the share decided (type I error at ``effect`` 0, power otherwise) and the
    mean seeds used, beside the fixed design at the plan's most seeds."""
    rng = np.random.default_rng(seed)
    most = plan.looks[-1]
    d = rng.normal(effect, 1.0, size=(trials, most))
    levels = plan.levels
    decided_at = np.full(trials, -1)
    for k, (n, level) in enumerate(zip(plan.looks, levels)):
        x = d[:, :n]
        sd = x.std(axis=1, ddof=1)
        t = x.mean(axis=1) / (sd / math.sqrt(n))
        p = 2 * stats.t.sf(np.abs(t), n - 1)
        newly = (decided_at < 0) & (p <= level)
        decided_at[newly] = k
    seeds = np.where(decided_at >= 0, np.asarray(plan.looks)[np.maximum(decided_at, 0)], most)
    fixed_p = 2 * stats.t.sf(np.abs(d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(most))), most - 1)
    rate = float((decided_at >= 0).mean())
    return {"effect": effect, "trials": trials, "decided": rate,
            "decided_se": math.sqrt(rate * (1 - rate) / trials), "mean_seeds": float(seeds.mean()),
            "fixed_seeds": most, "fixed_decided": float((fixed_p <= plan.alpha / plan.comparisons).mean())}


# ------------------------------------------------------------------ in the ablation


def seed_differences(summary: dict, metric: str, a: str, b: str) -> list[float]:
    """b - a on ``metric`` for every seed both variants ran, in seed order (the paired design)."""
    ma, mb = (summary["variants"][v]["metrics"].get(metric) or {} for v in (a, b))
    va = dict(zip(ma.get("seeds") or [], ma.get("values") or []))
    vb = dict(zip(mb.get("seeds") or [], mb.get("values") or []))
    return [vb[s] - va[s] for s in sorted(set(va) & set(vb), key=lambda s: int(s))]


def plan_for(first: int, most: int, step: int, spending: str, alpha: float, comparisons: int) -> Plan:
    return Plan.rounds(first, most, step, alpha=alpha, kind=spending, comparisons=max(1, comparisons))


def decide(summary: dict, tests: Sequence[tuple[str, str, str]], plan: Plan) -> dict:
    """Every headline test through the plan's looks: {"stop": bool, "seeds": n, "next": seeds
    for the next round or None, "plan": ..., "tests": [...]}, JSON-ready for results.json."""
    out = []
    seeds = 0
    for metric, a, b in tests:
        diffs = seed_differences(summary, metric, a, b)
        seeds = max(seeds, len(diffs))
        looks = looks_so_far(diffs, plan)
        decided = bool(looks) and looks[-1].decided
        mean = float(np.mean(diffs)) if diffs else None
        sd = float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None
        out.append({"metric": metric, "a": a, "b": b, "decided": decided,
                    "looks": [dataclasses.asdict(look) for look in looks],
                    "difference": mean, "sd": sd,
                    "effect": (abs(mean) / sd) if mean is not None and sd else None})
    reached = [n for n in plan.looks if n <= seeds]
    at_most = bool(reached) and reached[-1] == plan.looks[-1]
    stop = not out or all(t["decided"] for t in out) or at_most
    later = [n for n in plan.looks if n > seeds]
    return {"stop": stop, "seeds": seeds, "next": None if stop or not later else later[0],
            "plan": {"looks": list(plan.looks), "alpha": plan.alpha, "spending": plan.kind,
                     "comparisons": plan.comparisons, "levels": plan.levels},
            "tests": out}


def sequential_section(outcome: dict, trials: int = 2000) -> list[str]:
    """Markdown: the plan, which look decided each headline test (and at what boundary), or
    that it stayed undecided at the most seeds with what a fixed design would need; and what
    the early stops cost in power at the observed effect (simulated beside the fixed design)."""

    plan_info = outcome["plan"]
    plan = Plan(tuple(plan_info["looks"]), plan_info["alpha"], plan_info["spending"], plan_info["comparisons"])
    levels = ", ".join(f"{n} seeds: p <= {level:.3g}" for n, level in zip(plan.looks, plan_info["levels"]))
    lines = ["", "## Sequential seeds", "",
             f"Seeds were added in rounds until every headline test was decided or {plan.looks[-1]} seeds "
             f"were reached (a group-sequential paired t-test, Lan-DeMets {plan.kind}-type alpha spending, "
             f"alpha {plan.alpha:g} shared by {plan.comparisons} headline test(s): c4forge/ablation/"
             f"sequential.py). A test is decided at the first look whose paired-t p-value reaches that "
             f"look's boundary ({levels}); this keeps the chance of a false verdict at {plan.alpha:g} "
             "over every look, where testing each look at 5% would not. Ran "
             f"{outcome['seeds']} seeds.", ""]
    for test in outcome["tests"]:
        name = f"{test['b']} - {test['a']} on {test['metric']}"
        last = test["looks"][-1] if test["looks"] else None
        p = "-" if not last or last["p"] is None else f"{last['p']:.3g}"
        if test["decided"]:
            line = (f"- **{name}**: decided at the look with {last['seeds']} seeds "
                    f"(p = {p} <= boundary {last['level']:.3g}); difference {test['difference']:+.4f}.")
        else:
            need = seeds_for_power(test["difference"] or 0.0, test["sd"] or 0.0,
                                   alpha=plan.alpha / plan.comparisons) if test["sd"] else None
            line = (f"- **{name}**: undecided at {outcome['seeds']} seeds (p = {p}, boundary "
                    f"{last['level']:.3g})" if last else f"- **{name}**: no look reached")
            if last:
                line += (f"; a fixed design would need {seeds_text(need, 'about ')} seeds for 80% power at "
                         "this difference and spread (its level: alpha shared by the headline tests)."
                         if need else ".")
        if test.get("effect"):
            sim = simulate(test["effect"], plan, trials=trials)
            line += (f" At the observed standardised effect ({test['effect']:.2f}), this plan decides "
                     f"{100 * sim['decided']:.0f}% of the time using {sim['mean_seeds']:.1f} seeds on "
                     f"average, against {100 * sim['fixed_decided']:.0f}% for a fixed design of "
                     f"{sim['fixed_seeds']} seeds ({trials:,} simulated ablations): what stopping early "
                     "costs in power.")
        lines.append(line)
    return lines
