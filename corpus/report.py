"""Human-readable tables of what each rule removed (Markdown, so they paste into a README)."""
from __future__ import annotations

from typing import Dict, Mapping

from corpus.steps import STAGE_ORDER


def _stage_key(name: str) -> tuple:
    namespace = name.split("/", 1)[0]
    base = namespace.split("-badwords")[0]
    for i, stage in enumerate(STAGE_ORDER):
        if namespace == stage or namespace.startswith(stage + "-"):
            return (i, namespace, name)
    return (len(STAGE_ORDER), base, name)


def counter_table(counters: Mapping[str, int]) -> str:
    """``| step | counter | count |`` rows in pipeline order."""
    rows = ["| step | counter | count |", "|---|---|---:|"]
    for name in sorted(counters, key=_stage_key):
        namespace, _, counter = name.partition("/")
        rows.append(f"| {namespace} | {counter} | {counters[name]:,} |")
    return "\n".join(rows)


def page_flow(counters: Mapping[str, int]) -> Dict[str, int]:
    """Pages entering each step, derived from the counters (for a one-line summary)."""
    c = counters.get
    flow = {"read": c("split-wet-file/passed", 0)}
    if "too-long-filter/passed" in counters:
        flow["length ok"] = c("too-long-filter/passed", 0)
    if "duplicate-url-filter/passed" in counters:
        flow["unique url"] = c("duplicate-url-filter/passed", 0)
    if "clean-page/passed" in counters:
        flow["clean"] = c("clean-page/passed", 0)
    if "dedupe-lines/passed" in counters:
        flow["line dedup"] = c("dedupe-lines/passed", 0)
    if "language-filter/passed" in counters:
        flow["language"] = c("language-filter/passed", 0)
    if "badwords-filter/passed" in counters or "badwords-filter/soft-passed" in counters:
        flow["bad words"] = c("badwords-filter/passed", 0) + c("badwords-filter/soft-passed", 0)
    if "near-dedup/passed" in counters:
        flow["near dedup"] = c("near-dedup/passed", 0)
    return flow
