"""URL dedup in one process (the twin of pipelines/twins/url_dedup.py; contract: the
``contract`` of corpus/steps/url_dedup.py): of the crawls of one normalised URL the newest is kept, in first-seen order of the
URLs (tfds ``select_newest_page``; equal times: the smallest record id, ``urls.newer_page``).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from c4forge.corpus.chain.wide import WideJob
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import url_duplicates
from c4forge.corpus.text.urls import count_url_group, newer_page, page_record_id

NS_URL = "duplicate-url-filter"  # tfds' counter namespace


def run(pages: Iterable[Document], job: WideJob) -> list[Document]:
    """One page per normalised URL. The traced URLs crawled more than once are sampled, each
    with the crawl kept and the others."""
    arrived = [0]
    with job.clock.stage("url-dedup"):
        kept = dedupe_urls(_counted(pages, arrived), job)
    job.clock.count("url-dedup", arrived[0])  # its pages in, known once they have all come
    return kept


def dedupe_urls(pages: Iterable[Document], job: WideJob) -> list[Document]:
    inc = job.counters.inc_fn(NS_URL)
    best: dict[str, Document] = {}
    seen: dict[str, tuple[int, int]] = {}  # normalised url -> (pages, text bytes)
    crawls: dict[str, list[tuple[str, bytes]]] = {}  # traced url -> (crawl time, record id)...
    for page in pages:
        url = page.normalized_url
        current = best.get(url)
        best[url] = page if current is None else newer_page(current, page)
        count, size = seen.get(url, (0, 0))
        seen[url] = (count + 1, size + page.text_size())
        if job.traced(url) is not None:
            crawls.setdefault(url, []).append((page.timestamp, page_record_id(page)))
    for url, page in best.items():
        count_url_group(inc, seen[url][0], seen[url][1], page.text_size())
    for url, all_crawls in crawls.items():
        if len(all_crawls) > 1:
            kept = (best[url].timestamp, page_record_id(best[url]))
            dropped = list(all_crawls)
            dropped.remove(kept)
            job.samples.add(url_duplicates(f"{NS_URL}/filtered", job.traced(url), url, kept, dropped))
    return list(best.values())


def _counted(pages: Iterable[Document], tally: list[int]) -> Iterator[Document]:
    for page in pages:
        tally[0] += 1
        yield page
