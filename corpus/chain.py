"""The C4 chain as data: every step declared once, in order, with its counter namespace and
what kind of step it is. Both runners read this list: ``corpus/local.py`` runs it in one
process, ``pipelines/c4.py`` compiles it into a Beam graph. The order stated in help texts and
docs is rendered from it (``describe``).

Two kinds of step:

- a **page step** sees one page and returns it (perhaps changed) or None; it counts into its
  namespace. Adding one is a ``PageStep`` in ``C4_CHAIN`` (or a chain built with
  ``with_page_step``) plus its test: both runners run every page step of the list, fused with
  their neighbours (one Beam DoFn per run of page steps, no hop between them);
- a **corpus-wide step** needs every page at once: newest page per URL (a keyed grouping), line
  dedup (every line's owner, joined back to the pages) and MinHash near-dedup (clustering). Each
  has one written contract (its ``contract``) that the single-process algorithm in ``corpus/``
  and the engine's in ``pipelines/c4.py`` both meet (tests/test_pipeline.py and
  tests/test_near_dedup_cc.py check them against each other); their order is the skeleton of
  the chain and fixed (``check_chain``).

tfds' counter namespaces are kept (``corpus/steps.py``): reports, manifests and ``corpus stats``
read the same names whichever runner wrote them.
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Optional

from c4forge.core.counters import IncFn
from c4forge.corpus import clean as clean_rules
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.samples import Explain, Recorder, Sample, step_samples, wanted_by_all
from c4forge.corpus.steps import (
    NS_BADWORDS,
    NS_CLEAN,
    NS_LANG,
    NS_LENGTH,
    NS_LINES,
    NS_NEAR,
    NS_PARAGRAPH,
    NS_READ,
    NS_URL,
    PageSteps,
)

IncFor = Callable[[str], IncFn]  # a namespace -> its inc (bad words count per language too)
PageFn = Callable[[PageSteps, Document, IncFn, IncFor], Optional[Document]]


class Scope(enum.Enum):
    """What a step needs to decide: the files, one page, or every page."""

    READ = "the crawl files"
    PAGE = "one page"
    URL_GROUPS = "every crawl of a URL (keyed grouping)"
    LINE_OWNERS = "every page holding a line (a join back to the pages)"
    CLUSTERS = "every near-duplicate of a page (clustering)"


def always(config: CorpusConfig) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the chain. ``clock``: the stage name its CPU seconds go to (the per-stage
    cost table); ``flow``: its row in a report's page flow, read from ``passed`` counters."""

    name: str
    namespace: str
    scope: Scope
    summary: str
    flow: Optional[str] = None
    passed: tuple[str, ...] = ("passed",)
    clock: Optional[str] = None
    enabled: Callable[[CorpusConfig], bool] = always
    apply: Optional[PageFn] = None  # page steps only
    explain: Optional[Explain] = None  # page steps that remove lines: each line's fate (samples)
    contract: str = ""  # corpus-wide steps only

    @property
    def clock_name(self) -> str:
        return self.clock or self.name

    def is_page_step(self) -> bool:
        return self.scope is Scope.PAGE


def page_step(name: str, namespace: str, apply: PageFn, summary: str, **fields) -> Step:
    """A page step: ``apply(steps, page, inc, inc_for)`` returns the page (or a changed copy) to
    keep it, None to drop it; ``inc`` counts into ``namespace``."""
    return Step(name, namespace, Scope.PAGE, summary, apply=apply, **fields)


# The page steps' functions: one call into the configured rules each (corpus/steps.py binds the
# config and the heavy state, LID model and bad-word lists, once per worker).

def _length(steps: PageSteps, page: Document, inc: IncFn, inc_for: IncFor) -> Optional[Document]:
    return page if steps.length_ok(page, inc) else None


def _paragraphs(steps: PageSteps, page: Document, inc: IncFn, inc_for: IncFor) -> Optional[Document]:
    return page if steps.paragraphs_ok(page, inc) else None


def _clean(steps: PageSteps, page: Document, inc: IncFn, inc_for: IncFor) -> Optional[Document]:
    return steps.clean(page, inc)


def _clean_fates(steps: PageSteps, page: Document):
    return clean_rules.line_fates(page.text, steps.config.rules)


def _language(steps: PageSteps, page: Document, inc: IncFn, inc_for: IncFor) -> Optional[Document]:
    return steps.identify_language(page, inc)


def _badwords_on(config: CorpusConfig) -> bool:
    """badwords_fraction > 0"""
    return config.badwords_fraction > 0


def _badwords(steps: PageSteps, page: Document, inc: IncFn, inc_for: IncFor) -> Optional[Document]:
    return page if steps.badwords_ok(page, inc, inc_for) else None


READ = Step("read", NS_READ, Scope.READ, "read WET (or extract WARC HTML)", flow="read")
LENGTH = page_step("length", NS_LENGTH, _length, "length limit", flow="length ok")
URL_DEDUP = Step(
    "url-dedup", NS_URL, Scope.URL_GROUPS, "newest page per normalised URL", flow="unique url",
    enabled=attrgetter("dedupe_urls"),
    contract="Of the crawls of one normalised URL the newest is kept (equal times: the smallest "
             "record id, urls.newer_page / UrlCandidate.replaces); every URL counts "
             "count_url_group once; what the kept crawl's later page steps counted is counted "
             "for it alone.")
PARAGRAPHS = page_step("paragraph-filter", NS_PARAGRAPH, _paragraphs, "[paragraph filter]",
                       clock="clean-page", enabled=attrgetter("paragraph_filter"))
CLEAN = page_step("clean-page", NS_CLEAN, _clean, "clean_page", flow="clean",
                  enabled=attrgetter("clean"), explain=_clean_fates)
LINE_DEDUP = Step(
    "line-dedup", NS_LINES, Scope.LINE_OWNERS, "corpus-wide line dedup", flow="line dedup",
    enabled=attrgetter("dedupe_lines"),
    contract="Every line (line_dedup.line_key) is owned by the page with the smallest "
             "md5(url) that holds it; each page keeps the lines it owns "
             "(line_dedup.dedupe_page_lines), a page owning none is dropped and counted.")
LANGUAGE = page_step("language-id", NS_LANG, _language, "language ID", flow="language")
BADWORDS = page_step("bad-words", NS_BADWORDS, _badwords, "bad words", flow="bad words",
                     passed=("passed", "soft-passed"),
                     enabled=_badwords_on)
NEAR_DEDUP = Step(
    "near-dedup", NS_NEAR, Scope.CLUSTERS, "MinHash near-dedup", flow="near dedup",
    enabled=attrgetter("near_dedup"),
    contract="Pages whose MinHash signatures share a band and pass the threshold "
             "(near_dedup.bucket_edges) are joined; a connected component keeps its smallest "
             "doc_id and records its size (near_dup_cluster_size); every page counts "
             "count_near_dedup once. Union-find in one process, Hash-to-Min on the engine: the "
             "same labels (tests/test_near_dedup_cc.py).")

C4_CHAIN: tuple[Step, ...] = (READ, LENGTH, URL_DEDUP, PARAGRAPHS, CLEAN, LINE_DEDUP, LANGUAGE,
                              BADWORDS, NEAR_DEDUP)

# The corpus-wide skeleton every chain keeps, in this order; page steps go anywhere between.
SKELETON = (Scope.READ, Scope.URL_GROUPS, Scope.LINE_OWNERS, Scope.CLUSTERS)


class ChainError(ValueError):
    """A chain that breaks the skeleton (a wiring mistake in code, not a user's input)."""


def check_chain(chain: Sequence[Step]) -> tuple[Step, ...]:
    """The chain, if it keeps the skeleton: READ first, near-dedup last, the corpus-wide steps
    once each in their order, page steps anywhere between, names unique."""
    wide = tuple(step.scope for step in chain if not step.is_page_step())
    if wide != SKELETON:
        raise ChainError(f"a chain's corpus-wide steps must be {[s.name for s in SKELETON]}, "
                         f"not {[s.name for s in wide]}")
    if chain[0].scope is not Scope.READ:
        raise ChainError("a chain starts by reading")
    if chain[-1].scope is not Scope.CLUSTERS:
        raise ChainError("near-dedup ends a chain (a page step after it would change the pages "
                         "after their clusters were chosen)")
    names = [step.name for step in chain]
    if len(set(names)) != len(names):
        raise ChainError(f"step names repeat in {names}")
    return tuple(chain)


def with_page_step(step: Step, after: str, chain: Sequence[Step] = C4_CHAIN) -> tuple[Step, ...]:
    """``chain`` with the page step ``step`` inserted after the step named ``after``."""
    if not step.is_page_step():
        raise ChainError(f"{step.name} is not a page step")
    names = [s.name for s in chain]
    if after not in names:
        raise ChainError(f"no step named {after!r} in {names}")
    at = names.index(after) + 1
    return check_chain((*chain[:at], step, *chain[at:]))


@dataclasses.dataclass(frozen=True)
class Plan:
    """A chain cut at its corpus-wide steps: the page steps before URL dedup, between URL dedup
    and line dedup, and after line dedup, and whether each corpus-wide step runs. Disabled
    steps are left out, so a runner only walks what runs."""

    before_urls: tuple[Step, ...]
    before_lines: tuple[Step, ...]
    after_lines: tuple[Step, ...]
    url_dedup: bool
    line_dedup: bool
    near_dedup: bool


def plan(config: CorpusConfig, chain: Sequence[Step] = C4_CHAIN) -> Plan:
    """Where each enabled step of ``chain`` runs for ``config``."""
    segments: list[list[Step]] = [[]]
    runs: dict[Scope, bool] = {}
    for step in check_chain(chain)[1:]:
        if step.is_page_step():
            if step.enabled(config):
                segments[-1].append(step)
        elif step.scope is not Scope.CLUSTERS:
            runs[step.scope] = step.enabled(config)
            segments.append([])
        else:
            runs[step.scope] = step.enabled(config)
    return Plan(tuple(segments[0]), tuple(segments[1]), tuple(segments[2]),
                runs[Scope.URL_GROUPS], runs[Scope.LINE_OWNERS], runs[Scope.CLUSTERS])


def run_page_steps(steps: Iterable[Step], machinery: PageSteps, page: Document,
                   inc_for: IncFor) -> Optional[Document]:
    """``page`` through each page step in turn: the page that survives them all, or None."""
    for step in steps:
        page = step.apply(machinery, page, inc_for(step.namespace), inc_for)
        if page is None:
            return None
    return page


def run_traced_page_steps(steps: Iterable[Step], machinery: PageSteps, page: Document,
                          inc_for: IncFor, key: int, out: list[Sample],
                          wants: Callable[[str, int], bool] = wanted_by_all) -> Optional[Document]:
    """:func:`run_page_steps` for a page the rule samples trace (corpus/samples.py): the same
    result and counts, and what each step did to it appended to ``out`` (those ``wants``
    accepts: see :func:`step_samples`)."""
    for step in steps:
        recorder = Recorder(inc_for(step.namespace))
        after = step.apply(machinery, page, recorder, inc_for)
        out.extend(step_samples(step.namespace, recorder.fired, key, page, after, step.explain,
                                machinery, wants))
        if after is None:
            return None
        page = after
    return page


def namespaces(chain: Sequence[Step] = C4_CHAIN) -> tuple[str, ...]:
    """Counter namespaces in chain order (reports sort counters by it)."""
    return tuple(dict.fromkeys(step.namespace for step in chain))


def describe(chain: Sequence[Step] = C4_CHAIN) -> str:
    """The chain in one line, as help texts and docs state it."""
    return " -> ".join(step.summary for step in chain)


def markdown_table(chain: Sequence[Step] = C4_CHAIN) -> str:
    """The chain as docs/corpus.md shows it (a test keeps the two the same)."""
    rows = ["| # | step | counters | decides on | runs when |", "|---:|---|---|---|---|"]
    for i, step in enumerate(chain, 1):
        when = "always" if step.enabled is always else f"`{_setting(step)}`"
        rows.append(f"| {i} | {step.summary} | `{step.namespace}` | {step.scope.value} | {when} |")
    return "\n".join(rows)


def _setting(step: Step) -> str:
    if isinstance(step.enabled, attrgetter):
        return repr(step.enabled).split("'")[1]
    return (step.enabled.__doc__ or step.enabled.__name__).strip()
