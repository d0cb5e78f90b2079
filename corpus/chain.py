"""The C4 chain as data: every step declared once, in order, with its counter namespace and
what kind of step it is. Both runners read this list: ``corpus/local.py`` runs it in one
process, ``pipelines/c4.py`` compiles it into a Beam graph. The order stated in help texts and
docs is rendered from it (``describe``, ``markdown_table``).

Two kinds of step:

- a **page step** sees one page and returns a verdict (corpus/verdict.py): keep it (perhaps
  changed) or drop it with a reason. It counts nothing itself: the step loop
  (corpus/steploop.py) counts ``passed``/``filtered[:reason]`` and the bytes, records the rule
  samples and times it, in both runners. Adding one is a ``page_step`` in a chain
  (``with_step``) plus its test; the engine fuses neighbouring page steps into one DoFn.
- a **corpus-wide step** needs every page at once (newest page per URL, line dedup, exact-text
  dedup, MinHash near-dedup). It is a pair of twin modules named by its ``twin``: the
  one-process algorithm ``corpus/<twin>.py`` and the Beam transform ``pipelines/<twin>.py``,
  behind the protocols of corpus/wide.py and pipelines/wide.py, both meeting the step's one
  written ``contract`` (tests run the two against each other). Adding one is its two modules
  and its line here; it may go anywhere after the reading, with two rules (``check_chain``).

tfds' counter namespaces are kept (``corpus/steps.py``): reports, manifests and ``corpus stats``
read the same names whichever runner wrote them.
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import NamedTuple, Optional

from c4forge.corpus import clean as clean_rules
from c4forge.corpus import decontaminate as decontamination
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.samples import Explain
from c4forge.corpus.steps import (
    NS_BADWORDS,
    NS_C4_QUALITY,
    NS_CLASSIFIER,
    NS_CLEAN,
    NS_DECONTAMINATE,
    NS_EXACT,
    NS_FINEWEB_QUALITY,
    NS_GOPHER_QUALITY,
    NS_GOPHER_REPETITION,
    NS_LANG,
    NS_LENGTH,
    NS_LINES,
    NS_NEAR,
    NS_PARAGRAPH,
    NS_PII,
    NS_READ,
    NS_URL,
    NS_URL_FILTER,
    ChainRules,
)
from c4forge.corpus.verdict import Verdict

PageFn = Callable[[ChainRules, Document], Verdict]


class Scope(enum.Enum):
    """What a step needs to decide: the files, one page, or every page."""

    READ = "the crawl files"
    PAGE = "one page"
    URL_GROUPS = "every crawl of a URL (keyed grouping)"
    LINE_OWNERS = "every page holding a line (a join back to the pages)"
    TEXT_GROUPS = "every page of the same text (keyed grouping)"
    CLUSTERS = "every near-duplicate of a page (clustering)"


def always(config: CorpusConfig) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the chain. ``clock``: the stage name its CPU seconds go to (the per-stage
    cost table); ``flow``: its row in a report's page flow, read from ``passed`` counters;
    ``enabled``: the one place a step is switched off (a plan leaves it out)."""

    name: str
    namespace: str
    scope: Scope
    summary: str
    flow: Optional[str] = None
    passed: tuple[str, ...] = ("passed",)
    clock: Optional[str] = None
    enabled: Callable[[CorpusConfig], bool] = always
    apply: Optional[PageFn] = None  # page steps only: (rules, page) -> Verdict
    explain: Optional[Explain] = None  # page steps that remove lines: each line's fate (samples)
    twin: str = ""  # corpus-wide steps only: corpus/<twin>.py and pipelines/<twin>.py
    contract: str = ""  # corpus-wide steps only: what both twins do
    drops_pages: bool = True  # False: a step that only rewrites (PII), allowed after near-dedup

    @property
    def clock_name(self) -> str:
        return self.clock or self.name

    def is_page_step(self) -> bool:
        return self.scope is Scope.PAGE

    def is_wide(self) -> bool:
        return self.scope not in (Scope.PAGE, Scope.READ)


def page_step(name: str, namespace: str, apply: PageFn, summary: str, **fields) -> Step:
    """A page step: ``apply(rules, page)`` returns a Verdict (corpus/verdict.py); ``rules`` is
    the config-bound ChainRules (its ``config``, the LID model, the bad-word lists)."""
    return Step(name, namespace, Scope.PAGE, summary, apply=apply, **fields)


def wide_step(name: str, namespace: str, scope: Scope, summary: str, twin: str, contract: str,
              **fields) -> Step:
    """A corpus-wide step: its twins are corpus/<twin>.py and pipelines/<twin>.py."""
    return Step(name, namespace, scope, summary, twin=twin, contract=contract, **fields)


# The page steps of the C4 chain: one call into the config-bound rules each (looked up on the
# instance, so a ChainRules given to a runner, e.g. a benchmark's that records what it sees, is
# the one that runs).

def _length(rules: ChainRules, page: Document) -> Verdict:
    return rules.length(page)


def _paragraphs(rules: ChainRules, page: Document) -> Verdict:
    return rules.paragraphs(page)


def _clean(rules: ChainRules, page: Document) -> Verdict:
    return rules.clean(page)


def _language(rules: ChainRules, page: Document) -> Verdict:
    return rules.language(page)


def _badwords(rules: ChainRules, page: Document) -> Verdict:
    return rules.badwords(page)


def _url_filter(rules: ChainRules, page: Document) -> Verdict:
    return rules.url_filter(page)


def _gopher_repetition(rules: ChainRules, page: Document) -> Verdict:
    return rules.gopher_repetition(page)


def _gopher_quality(rules: ChainRules, page: Document) -> Verdict:
    return rules.gopher_quality(page)


def _c4_quality(rules: ChainRules, page: Document) -> Verdict:
    return rules.c4_quality(page)


def _fineweb_quality(rules: ChainRules, page: Document) -> Verdict:
    return rules.fineweb_quality(page)


def _pii(rules: ChainRules, page: Document) -> Verdict:
    return rules.pii(page)


def _quality_classifier(rules: ChainRules, page: Document) -> Verdict:
    return rules.quality_classifier(page)


def _decontaminate(rules: ChainRules, page: Document) -> Verdict:
    return rules.decontaminate(page)


def _contamination_fates(rules: ChainRules, page: Document):
    return decontamination.line_fates(page.text, rules.eval_index, rules.config.decontaminate.action)


def _clean_fates(rules: ChainRules, page: Document):
    return clean_rules.line_fates(page.text, rules.config.rules)


def _badwords_on(config: CorpusConfig) -> bool:
    """badwords_fraction > 0"""
    return config.badwords_fraction > 0


def _length_on(config: CorpusConfig) -> bool:
    """max_page_chars set"""
    return config.max_page_chars is not None


READ = Step("read", NS_READ, Scope.READ, "read WET (or extract WARC HTML)", flow="read")
LENGTH = page_step("length", NS_LENGTH, _length, "length limit", flow="length ok", enabled=_length_on)
URL_DEDUP = wide_step(
    "url-dedup", NS_URL, Scope.URL_GROUPS, "newest page per normalised URL", "url_dedup",
    "Of the crawls of one normalised URL the newest is kept (equal times: the smallest "
    "record id, urls.newer_page / UrlCandidate.replaces); every URL counts "
    "count_url_group once; what the kept crawl's later page steps counted is counted "
    "for it alone.", flow="unique url", enabled=attrgetter("dedupe_urls"))
PARAGRAPHS = page_step("paragraph-filter", NS_PARAGRAPH, _paragraphs, "[paragraph filter]",
                       clock="clean-page", enabled=attrgetter("paragraph_filter"))
CLEAN = page_step("clean-page", NS_CLEAN, _clean, "clean_page", flow="clean",
                  enabled=attrgetter("clean"), explain=_clean_fates)
EXACT_DEDUP = wide_step(
    "exact-dedup", NS_EXACT, Scope.TEXT_GROUPS, "[exact-text dedup]", "exact_dedup",
    "Pages whose normalised text (exact_dedup.text_key: NFKC, case-folded, whitespace runs "
    "as one space) is the same are one group; the group keeps its earliest crawl (equal times: "
    "the smallest md5(url)); every page counts count_exact_group's share once.",
    flow="unique text", enabled=attrgetter("dedupe_exact"))
LINE_DEDUP = wide_step(
    "line-dedup", NS_LINES, Scope.LINE_OWNERS, "corpus-wide line dedup", "line_dedup",
    "Every line (line_dedup.line_key) is owned by the page with the smallest "
    "md5(url) that holds it; each page keeps the lines it owns "
    "(line_dedup.keep_owned_lines), a page owning none is dropped and counted.",
    flow="line dedup", enabled=attrgetter("dedupe_lines"))
LANGUAGE = page_step("language-id", NS_LANG, _language, "language ID", flow="language")
BADWORDS = page_step("bad-words", NS_BADWORDS, _badwords, "bad words", flow="bad words",
                     passed=("passed", "soft-passed"), enabled=_badwords_on)
NEAR_DEDUP = wide_step(
    "near-dedup", NS_NEAR, Scope.CLUSTERS, "MinHash near-dedup", "near_dedup",
    "Pages whose MinHash signatures share a band and pass the threshold "
    "(near_dedup.bucket_edges) are joined; a connected component keeps its smallest "
    "doc_id and records its size (near_dup_cluster_size); every page counts "
    "count_near_dedup once. Union-find in one process, Hash-to-Min on the engine: the "
    "same labels (tests/test_near_dedup_cc.py).", flow="near dedup", enabled=attrgetter("near_dedup"))

URL_FILTER = page_step("url-filter", NS_URL_FILTER, _url_filter, "[URL block lists]", flow="url ok",
                       enabled=attrgetter("url_filter.on"))
GOPHER_REPETITION = page_step("gopher-repetition", NS_GOPHER_REPETITION, _gopher_repetition,
                              "[Gopher repetition]", flow="gopher repetition",
                              enabled=attrgetter("gopher_repetition.on"))
GOPHER_QUALITY = page_step("gopher-quality", NS_GOPHER_QUALITY, _gopher_quality, "[Gopher quality]",
                           flow="gopher quality", enabled=attrgetter("gopher_quality.on"))
C4_QUALITY = page_step("c4-quality", NS_C4_QUALITY, _c4_quality, "[C4 quality, datatrove's]",
                       flow="c4 quality", enabled=attrgetter("c4_quality.on"))
FINEWEB_QUALITY = page_step("fineweb-quality", NS_FINEWEB_QUALITY, _fineweb_quality,
                            "[FineWeb quality]", flow="fineweb quality",
                            enabled=attrgetter("fineweb_quality.on"))
# DCLM's place for its classifier: after the rules and before dedup's last step
QUALITY_CLASSIFIER = page_step("quality-classifier", NS_CLASSIFIER, _quality_classifier,
                               "[quality classifier]", flow="classifier ok",
                               enabled=attrgetter("quality_classifier.on"))
DECONTAMINATE = page_step("decontaminate", NS_DECONTAMINATE, _decontaminate,
                          "[decontamination against evaluation sets]", flow="decontaminated",
                          enabled=attrgetter("decontaminate.on"), explain=_contamination_fates)
PII = page_step("pii", NS_PII, _pii, "[PII replaced]", enabled=attrgetter("pii.on"),
                drops_pages=False)

C4_CHAIN: tuple[Step, ...] = (READ, LENGTH, URL_FILTER, URL_DEDUP, PARAGRAPHS, CLEAN, EXACT_DEDUP,
                              LINE_DEDUP, LANGUAGE, BADWORDS, GOPHER_REPETITION, GOPHER_QUALITY,
                              FINEWEB_QUALITY, QUALITY_CLASSIFIER, DECONTAMINATE, NEAR_DEDUP, PII)
# MassiveWeb's order (Rae et al. 2021, section A.1.1): quality, then repetition, then dedup.
GOPHER_CHAIN: tuple[Step, ...] = (READ, LENGTH, URL_FILTER, URL_DEDUP, LANGUAGE, GOPHER_QUALITY,
                                  GOPHER_REPETITION, EXACT_DEDUP, QUALITY_CLASSIFIER, DECONTAMINATE,
                                  NEAR_DEDUP, PII)
# FineWeb's order (datatrove's examples/fineweb.py): URL filter, (extraction), language ID,
# Gopher repetition, Gopher quality, C4's rules, FineWeb quality, MinHash dedup, PII.
FINEWEB_CHAIN: tuple[Step, ...] = (READ, LENGTH, URL_FILTER, URL_DEDUP, LANGUAGE, GOPHER_REPETITION,
                                   GOPHER_QUALITY, C4_QUALITY, FINEWEB_QUALITY, EXACT_DEDUP,
                                   QUALITY_CLASSIFIER, DECONTAMINATE, NEAR_DEDUP, PII)
CHAINS: dict[str, tuple[Step, ...]] = {"c4": C4_CHAIN, "gopher": GOPHER_CHAIN, "fineweb": FINEWEB_CHAIN}


def chain_of(config: CorpusConfig) -> tuple[Step, ...]:
    """The order of steps ``config`` names (its ``chain`` setting; each preset sets one)."""
    return CHAINS[config.chain]


class ChainError(ValueError):
    """A chain that breaks the rules below (a wiring mistake in code, not a user's input)."""


def check_chain(chain: Sequence[Step]) -> tuple[Step, ...]:
    """The chain, if it keeps the rules: READ first and only there; names unique; every
    corpus-wide step with a twin; URL dedup, where present, the first corpus-wide step (its
    engine form picks each URL's winner from candidates made where the pages are read,
    pipelines/url_dedup.py); near-dedup, where present, last but for page steps that never drop
    a page (PII formatting: a filter after it could drop the page a cluster kept)."""
    if not chain or chain[0].scope is not Scope.READ or any(s.scope is Scope.READ for s in chain[1:]):
        raise ChainError("a chain starts by reading, and reads once")
    names = [step.name for step in chain]
    if len(set(names)) != len(names):
        raise ChainError(f"step names repeat in {names}")
    wide = [step for step in chain if step.is_wide()]
    if any(not step.twin for step in wide):
        raise ChainError(f"corpus-wide step {next(s.name for s in wide if not s.twin)} names no twin")
    if any(s.scope is Scope.URL_GROUPS for s in wide) and wide[0].scope is not Scope.URL_GROUPS:
        raise ChainError("url-dedup must be the first corpus-wide step of a chain that has it")
    clusters = [i for i, s in enumerate(chain) if s.scope is Scope.CLUSTERS]
    if clusters and any(s.drops_pages or s.is_wide() for s in chain[clusters[0] + 1:]):
        raise ChainError("near-dedup ends a chain but for steps that only rewrite pages (a filter "
                         "after it could drop the one page its cluster kept)")
    return tuple(chain)


def with_step(step: Step, after: str, chain: Sequence[Step] = C4_CHAIN) -> tuple[Step, ...]:
    """``chain`` with ``step`` (a page step or a corpus-wide one) inserted after the step named
    ``after``."""
    if step.scope is Scope.READ:
        raise ChainError(f"{step.name} reads: a chain reads once")
    names = [s.name for s in chain]
    if after not in names:
        raise ChainError(f"no step named {after!r} in {names}")
    at = names.index(after) + 1
    return check_chain((*chain[:at], step, *chain[at:]))


class Segment(NamedTuple):
    """A corpus-wide step that runs, the enabled page steps after it (up to the next corpus-wide
    step that runs) and that step (None: the last)."""

    step: Step
    after: tuple[Step, ...]
    next_wide: Optional[Step] = None


@dataclasses.dataclass(frozen=True)
class Plan:
    """A chain cut at its corpus-wide steps, for one config: the page steps between reading and
    the first corpus-wide step (``first``), then each corpus-wide step that runs with the page
    steps after it. Disabled steps are left out, so a runner only walks what runs."""

    first: tuple[Step, ...]
    wide: tuple[Segment, ...]

    def runs(self, name: str) -> bool:
        return any(segment.step.name == name for segment in self.wide)



def plan(config: CorpusConfig, chain: Optional[Sequence[Step]] = None) -> Plan:
    """Where each enabled step of ``chain`` (default: the one ``config`` names) runs for
    ``config``."""
    chain = chain_of(config) if chain is None else chain
    first: list[Step] = []
    wide: list[tuple[Step, list[Step]]] = []
    for step in check_chain(chain)[1:]:
        if not step.enabled(config):
            continue
        if step.is_page_step():
            (wide[-1][1] if wide else first).append(step)
        else:
            wide.append((step, []))
    nexts = [step for step, _ in wide[1:]] + [None]
    return Plan(tuple(first), tuple(Segment(step, tuple(after), following)
                                    for (step, after), following in zip(wide, nexts)))


def namespaces(chain: Sequence[Step] = C4_CHAIN) -> tuple[str, ...]:
    """Counter namespaces in chain order (reports sort counters by it)."""
    return tuple(dict.fromkeys(step.namespace for step in chain))


def describe(chain: Sequence[Step] = C4_CHAIN) -> str:
    """The chain in one line, as help texts and docs state it."""
    return " -> ".join(step.summary for step in chain)


def markdown_table(chain: Sequence[Step] = C4_CHAIN) -> str:
    """The chain as docs/corpus.md shows it (scripts/render_docs.py writes it there; the docs
    test keeps the two the same)."""
    rows = ["| # | step | counters | decides on | runs when |", "|---:|---|---|---|---|"]
    for i, step in enumerate(chain, 1):
        when = "always" if step.enabled is always else f"`{_setting(step)}`"
        rows.append(f"| {i} | {step.summary} | `{step.namespace}` | {step.scope.value} | {when} |")
    return "\n".join(rows)


def _setting(step: Step) -> str:
    if isinstance(step.enabled, attrgetter):
        return repr(step.enabled).split("'")[1]
    return (step.enabled.__doc__ or step.enabled.__name__).strip()
