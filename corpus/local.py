"""The whole C4 chain in one process (``corpus clean``): the reference for the Beam pipeline
and the fastest way to see what the rules do to a few files.

Pages are held in memory between the URL-dedup and line-dedup steps (both need every page), so
this is for inputs of up to a few GB; ``corpus build`` runs the same steps on Beam at any size.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Optional

from c4forge.core import progress
from c4forge.core.counters import Counters
from c4forge.core.stageclock import NO_CLOCK, NoClock, StageClock
from c4forge.corpus.chain import C4_CHAIN, Plan, Step, plan, run_page_steps, run_traced_page_steps
from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.document import Document
from c4forge.corpus.line_dedup import LineOwners, dedupe_page_lines, line_fates
from c4forge.corpus.minhash import MinHasher, batched
from c4forge.corpus.near_dedup import (
    bucket_edges,
    cluster_sizes,
    clusters_in_memory,
    count_near_dedup,
    doc_id,
)
from c4forge.corpus.samples import (
    Recorder,
    Reservoir,
    near_duplicate,
    step_samples,
    traced_key,
    url_duplicates,
)
from c4forge.corpus.steps import NS_LINES, NS_NEAR, NS_READ, NS_URL, PageSteps, text_bytes
from c4forge.corpus.urls import count_url_group, newer_page, page_record_id
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


def dedupe_urls(pages: Iterable[Document], counters: Counters,
                samples: Optional[Reservoir] = None, config: Optional[CorpusConfig] = None) -> list[Document]:
    """One page per normalised URL, the newest (ties: the smallest record id, ``newer_page``), in
    first-seen order of the URLs (tfds ``select_newest_page``). ``samples``: the traced URLs
    crawled more than once, each with the crawl kept and the others."""
    inc = counters.inc_fn(NS_URL)
    best: dict[str, Document] = {}
    seen: dict[str, tuple[int, int]] = {}  # normalised url -> (pages, text bytes)
    crawls: dict[str, list[tuple[str, bytes]]] = {}  # traced url -> (crawl time, record id)...
    keys: dict[str, int] = {}  # traced url -> its sampling key
    for page in pages:
        current = best.get(page.normalized_url)
        best[page.normalized_url] = page if current is None else newer_page(current, page)
        count, size = seen.get(page.normalized_url, (0, 0))
        seen[page.normalized_url] = (count + 1, size + page.text_size())
        key = traced_key(page.normalized_url, config.rule_samples) if samples is not None else None
        if key is not None:
            keys[page.normalized_url] = key
            crawls.setdefault(page.normalized_url, []).append((page.timestamp, page_record_id(page)))
    for url, page in best.items():
        count_url_group(inc, seen[url][0], seen[url][1], page.text_size())
    for url, all_crawls in crawls.items():
        if len(all_crawls) > 1:
            kept = (best[url].timestamp, page_record_id(best[url]))
            dropped = list(all_crawls)
            dropped.remove(kept)
            samples.add(url_duplicates(f"{NS_URL}/filtered", keys[url], url, kept, dropped))
    return list(best.values())


def run_chain(paths: Iterable[str], config: CorpusConfig, counters: Counters,
              steps: PageSteps = None, clock: StageClock | NoClock = NO_CLOCK,
              chain: Sequence[Step] = C4_CHAIN, samples: Optional[Reservoir] = None) -> list[Document]:
    """Read, filter and dedup: the steps of ``chain`` (corpus/chain.py) in order; returns the
    surviving documents in input order. ``clock`` (a StageClock) collects the CPU seconds of
    each stage (benchmarks/bench_stages.py); ``samples`` collects what every rule did to the
    traced pages (corpus/samples.py)."""
    steps = steps or PageSteps(config).setup()
    layout: Plan = plan(config, chain)
    pages: Iterable[Document] = clock.timed("read", read_pages(paths, config, counters))
    pages = page_steps(layout.before_urls, pages, steps, counters, clock, samples)
    if layout.url_dedup:
        arrived = [0]
        with clock.stage("url-dedup"):
            pages = dedupe_urls(counted(pages, arrived), counters, samples, config)
        clock.count("url-dedup", arrived[0])  # its pages in, known once they have all come
    pages = list(page_steps(layout.before_lines, pages, steps, counters, clock, samples))
    if layout.line_dedup:
        with clock.stage("line-dedup", len(pages)):
            pages = dedupe_lines(pages, config, counters, samples)
    if layout.after_lines:
        desc = " and ".join(step.summary for step in layout.after_lines)
        pages = list(page_steps(layout.after_lines, progress.bar(pages, desc=desc, unit=" pages"),
                                steps, counters, clock, samples))
    if layout.near_dedup:
        pages = near_dedup(pages, config, counters, clock=clock, samples=samples)
    return list(pages)


def counted(pages: Iterable[Document], tally: list[int]) -> Iterator[Document]:
    """``pages``, counting them into ``tally[0]`` as they pass."""
    for page in pages:
        tally[0] += 1
        yield page


def page_steps(chain_steps: tuple[Step, ...], pages: Iterable[Document], steps: PageSteps,
               counters: Counters, clock: StageClock | NoClock = NO_CLOCK,
               samples: Optional[Reservoir] = None) -> Iterator[Document]:
    """The pages that pass a run of page steps, lazily, in order. With a clock, each step's CPU
    seconds go to its stage, and a page counts once as that stage's input (pages are not traced
    for samples then)."""
    if not chain_steps:
        yield from pages
        return
    incs: dict[str, object] = {}

    def inc_for(namespace: str):
        inc = incs.get(namespace)
        if inc is None:
            incs[namespace] = inc = counters.inc_fn(namespace)
        return inc

    if isinstance(clock, NoClock):
        options = steps.config.rule_samples
        for page in pages:
            key = traced_key(page.normalized_url, options) if samples is not None else None
            if key is None:
                kept = run_page_steps(chain_steps, steps, page, inc_for)
            else:
                found: list = []
                kept = run_traced_page_steps(chain_steps, steps, page, inc_for, key, found, samples.wants)
                samples.extend(found)
            if kept is not None:
                yield kept
        return
    # a clock stage shared by consecutive steps (paragraph filter and clean_page) counts a page once
    counted = [i == 0 or chain_steps[i - 1].clock_name != step.clock_name
               for i, step in enumerate(chain_steps)]
    for page in pages:
        for step, first in zip(chain_steps, counted):
            with clock.stage(step.clock_name, 1 if first else 0):
                page = step.apply(steps, page, inc_for(step.namespace), inc_for)
            if page is None:
                break
        else:
            yield page


def dedupe_lines(pages: list[Document], config: CorpusConfig, counters: Counters,
                 samples: Optional[Reservoir] = None) -> list[Document]:
    """Each page keeps the lines it owns (every line's owner: the page with the smallest
    md5(url) that holds it, ``LineOwners``); a page left with too little is dropped."""
    owners = LineOwners()
    for page in pages:
        owners.add(page)
    inc = counters.inc_fn(NS_LINES)
    kept = []
    for page in pages:
        owned = owners.owned_by(page)
        key = traced_key(page.normalized_url, config.rule_samples) if samples is not None else None
        if key is None:
            result = dedupe_page_lines(page, owned, config.dedupe_min_sentences, inc)
        else:
            result = traced_line_dedup(page, owned, config.dedupe_min_sentences, inc, key, samples)
        if result is not None:
            kept.append(result)
    return kept


def traced_line_dedup(page: Document, owned: set[bytes], min_sentences: int, inc, key: int,
                      samples: Reservoir) -> Optional[Document]:
    """:func:`dedupe_page_lines` for a traced page, its samples added to ``samples`` (both
    chains call this)."""
    recorder = Recorder(inc)
    result = dedupe_page_lines(page, owned, min_sentences, recorder)
    samples.extend(step_samples(NS_LINES, recorder.fired, key, page, result,
                                lambda _, p: line_fates(p, owned), wants=samples.wants))
    return result


def near_dedup(pages: list[Document], config: CorpusConfig, counters: Counters,
               batch_size: int = 512, clock: StageClock | NoClock = NO_CLOCK,
               samples: Optional[Reservoir] = None) -> list[Document]:
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
            label = labels.get(node, node)
            survives = label == node
            count_near_dedup(inc, page.text_size(), survives, sizes.get(node, 1))
            if not survives and samples is not None:
                near_sample(page, label, config, samples)
            if survives:
                kept.append(page.replace(near_dup_cluster_size=sizes.get(node, 1)))
    return kept


def near_sample(page: Document, kept_id: int, config: CorpusConfig, samples: Reservoir) -> None:
    """A traced page near-dedup dropped, with the id of the page kept instead (both chains)."""
    key = traced_key(page.normalized_url, config.rule_samples)
    if key is not None and samples.wants(f"{NS_NEAR}/filtered", key):
        samples.add(near_duplicate(f"{NS_NEAR}/filtered", key, page, kept_id))
