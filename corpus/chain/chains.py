"""The chains as data: each an order of step names (corpus/steps/ registers the steps; a user's
own steps are ``package.module:function``), and the plan of which steps run for a config. Both
runners read the plan: ``corpus/chain/local.py`` runs it in one process, ``pipelines/c4.py`` compiles
it into a Beam graph. The order stated in help texts and docs is rendered from the chains
(``describe``, ``markdown_table``).

A chain is a list, as datatrove's pipelines are: the config's ``chain`` setting names one
(``c4``, ``gopher``, ``fineweb``) or lists its steps; every chain starts by reading (``read``
is implied). Each step runs where its settings switch it on. Two rules (``check_chain``) keep
the engine's plan possible: URL dedup, where present, is the first corpus-wide step, and
near-dedup is last but for steps that never drop a page.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Optional

from c4forge.core.settings import ConfigError
from c4forge.corpus.chain.step import Scope, Step, loaded, user_step
from c4forge.corpus.steps import REGISTRY

READ = REGISTRY["read"]

C4_CHAIN: tuple[str, ...] = (
    "length", "url-filter", "url-dedup", "paragraph-filter", "clean-page", "exact-dedup",
    "line-dedup", "language-id", "bad-words", "gopher-repetition", "gopher-quality",
    "fineweb-quality", "quality-classifier", "decontaminate", "near-dedup", "pii")
# MassiveWeb's order (Rae et al. 2021, section A.1.1): quality, then repetition, then dedup.
GOPHER_CHAIN: tuple[str, ...] = (
    "length", "url-filter", "url-dedup", "language-id", "gopher-quality", "gopher-repetition",
    "exact-dedup", "quality-classifier", "decontaminate", "near-dedup", "pii")
# FineWeb's order (datatrove's examples/fineweb.py): URL filter, (extraction), language ID,
# Gopher repetition, Gopher quality, C4's rules, FineWeb quality, MinHash dedup, PII.
FINEWEB_CHAIN: tuple[str, ...] = (
    "length", "url-filter", "url-dedup", "language-id", "gopher-repetition", "gopher-quality",
    "c4-quality", "fineweb-quality", "exact-dedup", "quality-classifier", "decontaminate",
    "near-dedup", "pii")
CHAINS: dict[str, tuple[str, ...]] = {"c4": C4_CHAIN, "gopher": GOPHER_CHAIN, "fineweb": FINEWEB_CHAIN}


class ChainError(ConfigError):
    """A chain that breaks the rules of ``check_chain`` or names no step."""


EDITS = ("base", "before", "after", "append")


def chain_names(value: Any, current: Any = C4_CHAIN) -> tuple[str, ...]:
    """The ``chain`` setting as step references, ``read`` first implied:

    - a chain's name (``c4``) is its list;
    - a list (YAML, or ``a,b,c`` on the command line) is taken as it is, a chain's name in it
      standing for that chain's steps (``c4,my_filters:digits``: the c4 chain, then a step);
    - a mapping extends a chain: ``base`` (a chain's name or list; by default the chain the
      layers below set, ``current``), then ``before``/``after`` (a step of it -> the steps to put
      there) and ``append`` (steps to add at the end), as in ``--set
      chain.after.language-id=my_filters:digits``.
    """
    if isinstance(value, dict):
        return _extended(value, current)
    if isinstance(value, str):
        value = value.strip()
        if value in CHAINS:
            return CHAINS[value]
        value = [part.strip() for part in value.strip("[]").split(",")]
    if not isinstance(value, (list, tuple)) or not value:
        raise ChainError(f"chain={value!r}: name a chain ({', '.join(CHAINS)}) or list its steps")
    names: list[str] = []
    for part in value:
        ref = _spelled(str(part).strip())
        if ref:
            names.extend(CHAINS[ref] if ref in CHAINS else (ref,))
    return tuple(names[1:] if names and names[0] == READ.name else names)


def _extended(edits: dict, current: Any) -> tuple[str, ...]:
    """A chain with steps put before or after its named steps, or appended (``chain_names``)."""
    unknown = sorted(set(edits) - set(EDITS))
    if unknown:
        raise ChainError(f"chain.{unknown[0]}: a chain is extended with {', '.join(EDITS)} "
                         f"(e.g. --set chain.after.language-id=my_module:my_step)")
    names = list(chain_names(edits.get("base", current)))
    for where in ("before", "after"):
        anchors = edits.get(where) or {}
        if not isinstance(anchors, dict):
            raise ChainError(f"chain.{where}: give a step of the chain and the steps to put {where} it "
                             f"(chain.{where}.language-id=my_module:my_step)")
        for anchor, refs in anchors.items():
            spelled = _spelled(str(anchor))
            if spelled not in names:
                raise ChainError(f"chain.{where}.{anchor}: the chain has no step {anchor!r} "
                                 f"(it holds {', '.join(names)})")
            at = names.index(spelled) + (where == "after")
            names[at:at] = _refs(refs)
    names.extend(_refs(edits.get("append") or ()))
    return tuple(names)


def _refs(value: Any) -> list[str]:
    """Step references given as one (``a``), a comma list (``a,b``) or a YAML list."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    return [_spelled(str(part).strip()) for part in parts if str(part).strip()]


def _spelled(ref: str) -> str:
    """A registered step's name as registered (``bad_words`` -> ``bad-words``)."""
    return ref.replace("_", "-") if ":" not in ref and ref.replace("_", "-") in REGISTRY else ref


_USER_STEPS: dict[str, Step] = {}


def step_of(ref: str) -> Step:
    """The step a chain names: a registered name, or a user's ``package.module:function``."""
    if ref in REGISTRY:
        return REGISTRY[ref]
    if ":" not in ref:
        close = difflib.get_close_matches(ref.replace("_", "-"), list(REGISTRY), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ChainError(f"chain: no step named {ref!r}{hint}; steps: {', '.join(REGISTRY)}, "
                         "or package.module:function for a step of your own")
    if ref not in _USER_STEPS:
        step = user_step(ref)
        if step.name in REGISTRY:
            raise ChainError(f"chain: {ref} is named {step.name!r}, as a built-in step; rename the "
                             "function")
        _USER_STEPS[ref] = step
    return _USER_STEPS[ref]


def resolved(ref: str) -> Optional[Step]:
    """The step ``ref`` names if it is built in or already imported, else None (reports never
    import anyone's code)."""
    return REGISTRY.get(ref) or _USER_STEPS.get(ref)


def steps_of(names: Iterable[str]) -> tuple[Step, ...]:
    """``read`` and the steps ``names`` name, checked (``check_chain``)."""
    return check_chain((READ, *(step_of(name) for name in names)))


def check_chain(chain: Sequence[Step]) -> tuple[Step, ...]:
    """The chain, if it keeps the rules: READ first and only there; names unique; URL dedup,
    where present, the first corpus-wide step (its engine form picks each URL's winner from
    candidates made where the pages are read, pipelines/twins/url_dedup.py); near-dedup, where
    present, last but for page steps that never drop a page (PII formatting: a filter after it
    could drop the page a cluster kept)."""
    if not chain or chain[0].scope is not Scope.READ or any(s.scope is Scope.READ for s in chain[1:]):
        raise ChainError("a chain starts by reading, and reads once")
    names = [step.name for step in chain]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ChainError(f"chain: {', '.join(repeated)} named twice")
    wide = [step for step in chain if step.is_wide()]
    if any(s.scope is Scope.URL_GROUPS for s in wide) and wide[0].scope is not Scope.URL_GROUPS:
        raise ChainError("chain: url-dedup must be the first corpus-wide step of a chain that has it")
    clusters = [i for i, s in enumerate(chain) if s.scope is Scope.CLUSTERS]
    if clusters and any(s.drops_pages or s.is_wide() for s in chain[clusters[0] + 1:]):
        after = next(s.name for s in chain[clusters[0] + 1:] if s.drops_pages or s.is_wide())
        raise ChainError(f"chain: {after} after near-dedup: near-dedup ends a chain but for steps "
                         "that only rewrite pages (a filter after it could drop the one page its "
                         "cluster kept)")
    return tuple(chain)


def with_step(step: Step, after: str, chain: Sequence[Step]) -> tuple[Step, ...]:
    """``chain`` (Steps) with ``step`` inserted after the step named ``after``."""
    if step.scope is Scope.READ:
        raise ChainError(f"{step.name} reads: a chain reads once")
    names = [s.name for s in chain]
    if after not in names:
        raise ChainError(f"no step named {after!r} in {names}")
    at = names.index(after) + 1
    return check_chain((*chain[:at], step, *chain[at:]))


def chains_with(name: str) -> list[str]:
    """The named chains that hold step ``name`` (for the message when a config sets a step
    its chain does not hold)."""
    return [chain for chain, names in CHAINS.items() if name in names]


class Segment(NamedTuple):
    """A corpus-wide step that runs, and the enabled page steps after it (up to the next
    corpus-wide step that runs)."""

    step: Step
    after: tuple[Step, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    """A chain cut at its corpus-wide steps, for one config: the page steps between reading and
    the first corpus-wide step (``first``), then each corpus-wide step that runs with the page
    steps after it. Steps that are off are left out, so a runner only walks what runs."""

    first: tuple[Step, ...]
    wide: tuple[Segment, ...]

    def runs(self, name: str) -> bool:
        return any(segment.step.name == name for segment in self.wide)

    def steps(self) -> tuple[Step, ...]:
        """Every step that runs, in order (reading left out)."""
        return (*self.first, *(s for segment in self.wide for s in (segment.step, *segment.after)))


def plan(config: Any, chain: Sequence[Step] | None = None) -> Plan:
    """Where each step of ``chain`` (default: the config's own ``chain``) that ``config``
    switches on runs."""
    chain = steps_of(config.chain) if chain is None else check_chain(chain)
    first: list[Step] = []
    wide: list[tuple[Step, list[Step]]] = []
    for step in chain[1:]:
        if not step.enabled(config.settings_of(step)):
            continue
        if step.is_page_step():
            (wide[-1][1] if wide else first).append(step)
        else:
            wide.append((step, []))
    return Plan(tuple(first), tuple(Segment(step, tuple(after)) for step, after in wide))


def load_steps(config: Any) -> None:
    """Load, in this process, what every step that runs loads (models, lists, evaluation sets):
    a build's preflight, so that a file that cannot be read is the same one-line error as in
    ``corpus clean``, before any work, and the workers forked from here start with them."""
    for step in plan(config).steps():
        if step.preflight is not None:
            step.preflight()
        loaded(step, config)


def namespaces(chain: Sequence[Step]) -> tuple[str, ...]:
    """Counter namespaces in chain order (reports sort counters by it)."""
    return tuple(dict.fromkeys(step.namespace for step in chain))


def describe(names: Sequence[str] = C4_CHAIN) -> str:
    """The chain in one line, as help texts and docs state it."""
    return " -> ".join(step.summary for step in steps_of(names))


def markdown_table(names: Sequence[str] = C4_CHAIN) -> str:
    """The chain as docs/corpus.md shows it (scripts/render_docs.py writes it there; the docs
    test keeps the two the same)."""
    rows = ["| # | step | settings | counters | decides on | runs when |", "|---:|---|---|---|---|---|"]
    for i, step in enumerate(steps_of(names), 1):
        when = "always" if step.scope is Scope.READ else f"`{_switch(step)}`"
        key = "`read`" if step.scope is Scope.READ else f"`{step.name}`"
        rows.append(f"| {i} | {step.summary} | {key} | `{step.namespace}` | {step.scope.value} | {when} |")
    return "\n".join(rows)


def _switch(step: Step) -> str:
    return " and ".join(f"{step.name}.{part.strip()}" for part in step.runs_when.split(" and "))
