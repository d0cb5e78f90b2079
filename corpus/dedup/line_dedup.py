"""Corpus-wide line dedup of tfds c4 (``remove_duplicate_text``), as pure pieces.

A line's key is md5(line.strip().lower()). Every page claims each of its lines; the owner of a
line is the claiming page with the smallest md5(url). A page keeps only lines it owns, each the
first time it appears in the page; pages left empty, or with fewer than ``min_sentences`` Punkt
sentences in the joined text, are dropped (namespace ``dedupe-lines``).

Keys and ranks are raw 16-byte md5 digests: they order exactly as tfds' hex strings do, in half
the memory. The Beam pipeline groups claims by key; :class:`LineOwners` does the same in memory
for single-process runs.

On Beam a claim also names the line: md5(url) and the index of the line in the page
(corpus/dedup/line_claims.py), so the owner tells its page *which lines* it keeps and the page is not
hashed a second time where it meets them (:func:`keep_lines_at`).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Optional

from c4forge.core.counters import IncFn
from c4forge.corpus.chain.verdict import Verdict, count_verdict, drop, keep, line_counts
from c4forge.corpus.chain.wide import WideJob
from c4forge.corpus.dedup.line_claims import line_key, pack_keys, text_line_keys, unpack_keys
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Reservoir, step_samples
from c4forge.corpus.text import sentences
from c4forge.corpus.text.urls import url_rank

NS_LINES = "dedupe-lines"  # tfds' counter namespace


def line_keys(page: Document) -> Iterator[bytes]:
    """The key of every line of the page, in order."""
    return text_line_keys(page.text)


def add_claims(owners: dict[bytes, bytes], page: Document) -> None:
    """Claim every line of ``page`` in ``owners`` (line key -> smallest md5(url) so far), as
    tfds ``_emit_url_to_lines`` + ``Top.PerKey(1, key=_hash_text, reverse=True)`` combined."""
    claim_keys(owners, url_rank(page.url), line_keys(page))


def claim_keys(owners: dict[bytes, bytes], rank: bytes, keys: Iterable[bytes]) -> None:
    """:func:`add_claims` for a page given by its md5(url) and its line keys."""
    for key in keys:
        current = owners.get(key)
        if current is None or rank < current:
            owners[key] = rank


def owner_of(urls: Iterable[str]) -> str:
    """The claimant with the smallest md5(url) (tfds ``Top.PerKey(1, key=_hash_text, reverse=True)``)."""
    return min(urls, key=url_rank)


def page_owning_nothing(n_lines: int) -> Verdict:
    """What :func:`keep_owned_lines` decides for a page of ``n_lines`` lines that owns none of
    them (every line a global duplicate, the page left empty), without the page's text: such a
    page need not be unpacked (tests/test_dedup_urls_badwords.py checks both agree)."""
    return drop("empty", line_counts(0, (("global_duplicate", n_lines),)))


def keep_owned_lines(page: Document, owned: set[bytes], min_sentences: int = 3,
                     keys: Optional[list[bytes]] = None) -> Verdict:
    """tfds ``_remove_lines_from_text``: the page with only its owned, first-seen lines
    (``keys``: the page's line keys where the caller has them, else hashed here)."""
    new_lines = []
    seen: set[bytes] = set()
    n_global = n_local = 0
    lines = page.text.split("\n")
    for line, key in zip(lines, keys if keys is not None else text_line_keys(page.text)):
        if key not in owned:
            n_global += 1
        elif key in seen:
            n_local += 1
        else:
            new_lines.append(line)
            seen.add(key)
    return _verdict(page, new_lines, n_global, n_local, min_sentences)


def keep_lines_at(page: Document, kept: set[int], min_sentences: int = 3) -> Verdict:
    """:func:`keep_owned_lines` given the lines the page keeps (``kept``: the index of the first
    line of every key it owns, from its owners' claims, corpus/dedup/line_claims.py) instead of the
    keys it owns: the same page and counts without hashing the page's lines. A line not kept
    is a local duplicate when its key is that of a kept line, that is when its lower-cased,
    stripped text is a kept line's (the key is the md5 of that text: see
    :func:`text_line_keys`; an md5 collision inside one page, which tfds would take for one
    line, would count here as a global duplicate, the kept text the same); otherwise another
    page owns it (tests/test_dedup_urls_badwords.py checks both functions agree on the shared
    crawl)."""
    lines = page.text.split("\n")
    if len(kept) == len(lines):  # every line owned, each once: the text stays as it is
        new_lines, n_global, n_local = lines, 0, 0
    else:
        order = sorted(kept)
        new_lines = [lines[i] for i in order]
        lowered = page.text.lower().split("\n")
        kept_texts = {lowered[i].strip() for i in order}
        n_local = sum(1 for i, text in enumerate(lowered) if i not in kept and text.strip() in kept_texts)
        n_global = len(lines) - len(order) - n_local
    return _verdict(page, new_lines, n_global, n_local, min_sentences)


def _verdict(page: Document, new_lines: list[str], n_global: int, n_local: int, min_sentences: int) -> Verdict:
    counts = line_counts(len(new_lines), (("global_duplicate", n_global), ("local_duplicate", n_local)))
    new_text = "\n".join(new_lines)
    if not new_text:
        return drop("empty", counts)
    if min_sentences and not sentences.has_at_least(new_text, min_sentences):
        return drop("too_few_sentences", counts)
    return keep(page.replace(text=new_text), counts=counts)


def line_fates(page: Document, owned: set[bytes]) -> tuple[list[str], list[Optional[str]], Optional[int]]:
    """What :func:`keep_owned_lines` does to each line (for the rule samples, corpus/output/samples.py):
    the lines, each one's fate (None: kept; ``line-filtered:global_duplicate``: another page owns
    it; ``line-filtered:local_duplicate``: repeated in this page) and no deciding line."""
    lines = page.text.split("\n")
    fates: list[Optional[str]] = []
    seen: set[bytes] = set()
    for line in lines:
        key = line_key(line)
        if key not in owned:
            fates.append("line-filtered:global_duplicate")
        elif key in seen:
            fates.append("line-filtered:local_duplicate")
        else:
            fates.append(None)
            seen.add(key)
    return lines, fates, None


class LineOwners:
    """In-memory owner table for single-process runs: line key -> smallest md5(url)."""

    def __init__(self) -> None:
        self._best: dict[bytes, bytes] = {}

    def add(self, page: Document) -> None:
        add_claims(self._best, page)

    def add_keys(self, page: Document, keys: Iterable[bytes]) -> None:
        """:meth:`add` for a page whose line keys the caller has hashed already."""
        claim_keys(self._best, url_rank(page.url), keys)

    def owned_by(self, page: Document, keys: Optional[list[bytes]] = None) -> set[bytes]:
        best = self._best
        rank = url_rank(page.url)
        return {key for key in (line_keys(page) if keys is None else keys) if best[key] == rank}

    def __len__(self) -> int:
        return len(self._best)


def dedupe_page(page: Document, owned: set[bytes], min_sentences: int, inc: IncFn,
                key: Optional[int] = None, samples: Optional[Reservoir] = None,
                page_keys: Optional[list[bytes]] = None) -> Optional[Document]:
    """One page's line dedup with its counters (and, for a traced page, its samples): what
    both runners do per page once its owned lines are known (``page_keys``: its line keys,
    where the caller has hashed them already)."""
    verdict = keep_owned_lines(page, owned, min_sentences, page_keys)
    count_verdict(inc, None, page.text_size(), verdict)
    if key is not None:
        samples.extend(step_samples(NS_LINES, verdict.outcome, key, page, verdict.page,
                                    lambda _, p: line_fates(p, owned), wants=samples.wants))
    return verdict.page


def dedupe_page_at(page: Document, kept: set[int], min_sentences: int, inc: IncFn,
                   key: Optional[int] = None, samples: Optional[Reservoir] = None) -> Optional[Document]:
    """:func:`dedupe_page` given the lines the page keeps (:func:`keep_lines_at`). A traced page
    is hashed after all: its samples explain each line by its key (``line_fates``)."""
    if key is not None:
        keys = list(line_keys(page))
        return dedupe_page(page, {keys[i] for i in kept}, min_sentences, inc, key, samples, keys)
    verdict = keep_lines_at(page, kept, min_sentences)
    count_verdict(inc, None, page.text_size(), verdict)
    return verdict.page


def sentence_check(config) -> int:
    """The sentences a page must keep after line dedup (tfds): clean_page's ``min_sentences``
    where clean_page runs in the chain, none otherwise."""
    return config.settings_of("clean-page").min_sentences if config.runs("clean-page") else 0


def run(pages: Iterable[Document], job: WideJob) -> list[Document]:
    """Line dedup in one process (the twin of pipelines/twins/line_dedup.py; contract: the
    ``contract`` of corpus/steps/line_dedup.py): every page's lines claimed in memory (``LineOwners``), then each page keeps
    the lines it owns. A page's lines are hashed once, in the first pass, and its keys kept
    packed (16 bytes a line, ``pack_keys``) for the second: hashing them again there was about
    2% of `corpus clean`'s CPU."""
    pages = list(pages)
    with job.clock.stage("line-dedup", len(pages)):
        owners = LineOwners()
        packed_keys = []
        for page in pages:
            keys = list(line_keys(page))
            owners.add_keys(page, keys)
            packed_keys.append(pack_keys(keys))
        inc = job.counters.inc_fn(NS_LINES)
        min_sentences = sentence_check(job.config)
        kept = []
        for page, packed in zip(pages, packed_keys):
            keys = unpack_keys(packed)  # for both: what the page owns, what it keeps
            result = dedupe_page(page, owners.owned_by(page, keys), min_sentences, inc,
                                 job.traced(page.normalized_url), job.samples, keys)
            if result is not None:
                kept.append(result)
    return kept
