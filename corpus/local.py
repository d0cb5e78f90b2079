"""The whole C4 chain in one process (``corpus clean``): the reference for the Beam pipeline
and the fastest way to see what the rules do to a few files.

Pages are held in memory between the URL-dedup and line-dedup steps (both need every page), so
this is for inputs of up to a few GB; ``corpus build`` runs the same steps on Beam at any size.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from c4forge.core import progress
from c4forge.core.counters import Counters
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.line_dedup import LineOwners, dedupe_page_lines
from c4forge.corpus.minhash import MinHasher, batched
from c4forge.corpus.near_dedup import (
    bucket_edges,
    cluster_sizes,
    clusters_in_memory,
    count_near_dedup,
    doc_id,
)
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
    text_bytes,
)
from c4forge.corpus.urls import count_url_group, newer_page
from c4forge.corpus.wet import iter_file_documents


def read_pages(paths: Iterable[str], config: CorpusConfig, counters: Counters) -> Iterator[Document]:
    """Every page of every file, with a progress bar (files, pages, MB/s) when bars are on."""
    inc = counters.inc_fn(NS_READ)
    paths = list(paths)
    with progress.bar(total=len(paths), desc="reading crawl files", unit=" files") as bar:
        rate = progress.Throughput(bar, "pages")
        for path in paths:
            for page in iter_file_documents(path, inc, config.read):
                rate.add(text_bytes(page))
                yield page
            bar.update(1)


def dedupe_urls(pages: Iterable[Document], counters: Counters) -> list[Document]:
    """One page per normalised URL, the newest (ties: the smallest record id, ``newer_page``), in
    first-seen order of the URLs (tfds ``select_newest_page``)."""
    inc = counters.inc_fn(NS_URL)
    best: dict[str, Document] = {}
    seen: dict[str, tuple[int, int]] = {}  # normalised url -> (pages, text bytes)
    for page in pages:
        current = best.get(page.normalized_url)
        best[page.normalized_url] = page if current is None else newer_page(current, page)
        count, size = seen.get(page.normalized_url, (0, 0))
        seen[page.normalized_url] = (count + 1, size + page.text_size())
    for url, page in best.items():
        count_url_group(inc, seen[url][0], seen[url][1], page.text_size())
    return list(best.values())


def run_chain(paths: Iterable[str], config: CorpusConfig, counters: Counters,
              steps: PageSteps = None, clock: StageClock | NoClock = NO_CLOCK) -> list[Document]:
    """Read, filter and dedup; returns the surviving documents in input order. ``clock`` (a
    StageClock) collects the CPU seconds of each stage (benchmarks/bench_stages.py)."""
    steps = steps or PageSteps(config).setup()
    inc_len = counters.inc_fn(NS_LENGTH)
    pages = clock.timed("length", (p for p in clock.timed("read", read_pages(paths, config, counters))
                                   if steps.length_ok(p, inc_len)))
    if config.dedupe_urls:
        with clock.stage("url-dedup"):
            pages = dedupe_urls(pages, counters)
    inc_par = counters.inc_fn(NS_PARAGRAPH)
    inc_clean = counters.inc_fn(NS_CLEAN)
    kept = []
    for page in pages:
        with clock.stage("clean-page"):
            if not steps.paragraphs_ok(page, inc_par):
                continue
            cleaned = steps.clean(page, inc_clean)
        if cleaned is not None:
            kept.append(cleaned)
    if config.dedupe_lines:
        with clock.stage("line-dedup", len(kept)):
            owners = LineOwners()
            for page in kept:
                owners.add(page)
            inc_lines = counters.inc_fn(NS_LINES)
            deduped = []
            for page in kept:
                result = dedupe_page_lines(page, owners.owned_by(page), config.dedupe_min_sentences,
                                           inc_lines)
                if result is not None:
                    deduped.append(result)
        kept = deduped
    inc_lang = counters.inc_fn(NS_LANG)
    inc_bad = counters.inc_fn(NS_BADWORDS)
    out = []
    for page in progress.bar(kept, desc="language ID and bad words", unit=" pages"):
        with clock.stage("language-id", 1):
            page = steps.identify_language(page, inc_lang)
        if page is None:
            continue
        with clock.stage("bad-words", 1):
            if steps.badwords_ok(page, inc_bad, counters.inc_fn):
                out.append(page)
    if config.near_dedup:
        out = near_dedup(out, config, counters, clock=clock)
    return out


def near_dedup(pages: list[Document], config: CorpusConfig, counters: Counters,
               batch_size: int = 512, clock: StageClock | NoClock = NO_CLOCK) -> list[Document]:
    """Keep one page per MinHash cluster (the smallest id) and record each cluster's size."""
    inc = counters.inc_fn(NS_NEAR)
    hasher = MinHasher(config.minhash)
    ids = [doc_id(p.normalized_url) for p in pages]
    buckets: dict[bytes, list] = {}
    with clock.stage("minhash-signatures", len(pages)):
        for start, batch in zip(range(0, len(pages), batch_size), batched(pages, batch_size)):
            signatures = hasher.signatures([p.text for p in batch])
            for offset, signature in enumerate(signatures):
                member = (ids[start + offset], signature)
                for key in hasher.band_keys(signature):
                    buckets.setdefault(key, []).append(member)
    with clock.stage("near-dup-clusters", len(pages)):
        threshold = config.minhash.threshold
        labels = clusters_in_memory(
            edge for members in buckets.values() for edge in bucket_edges(members, threshold))
        sizes = cluster_sizes(labels)
        kept = []
        for page, node in zip(pages, ids):
            survives = labels.get(node, node) == node
            count_near_dedup(inc, page.text_size(), survives, sizes.get(node, 1))
            if survives:
                kept.append(page.replace(near_dup_cluster_size=sizes.get(node, 1)))
    return kept
