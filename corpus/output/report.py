"""Human-readable tables of what each rule removed (Markdown, so they paste into a README), in
the order of the chain that ran: a corpus's own chain (its manifest's ``chain``), else C4's."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Optional

from c4forge.corpus.chain.chains import C4_CHAIN, CHAINS, resolved
from c4forge.corpus.chain.step import step_name_of
from c4forge.corpus.read.wet import NS_READ, STRICT_SKIPS


class Shown(NamedTuple):
    """A step as a report shows it: its counters' namespace, its page-flow row (None: none) and
    the counters that say a page passed it."""

    namespace: str
    flow: Optional[str]
    passed: tuple[str, ...] = ("passed",)


Chain = Sequence  # step references (a config's or manifest's ``chain``), or Shown records


def shown_steps(chain: Chain = C4_CHAIN) -> tuple[Shown, ...]:
    """The steps of ``chain`` as reports show them, reading first: Shown records as they are
    (a manifest's ``steps``), step references looked up. A user's ``module:function`` not
    imported in this process is shown by its name (a report never runs anyone's code)."""
    shown = [Shown(NS_READ, "read")]
    for ref in chain:
        if isinstance(ref, Shown):
            shown.append(ref)
            continue
        step = resolved(ref)
        if step is not None:
            shown.append(Shown(step.namespace, step.flow, step.passed))
        elif ":" in ref:
            name = step_name_of(ref.rpartition(":")[2])
            shown.append(Shown(name, name))
    return tuple(shown)


def chain_of(manifest: Mapping) -> tuple:
    """The chain a manifest's corpus was built with: the steps it records (Shown), else its
    config's chain (C4's for corpora built before chains were recorded as lists)."""
    if manifest.get("steps"):
        return tuple(Shown(s["namespace"], s.get("flow"), tuple(s.get("passed") or ("passed",)))
                     for s in manifest["steps"])
    return _chain_refs(manifest)


def _chain_refs(manifest: Mapping) -> tuple[str, ...]:
    chain = (manifest.get("config") or {}).get("chain") or "c4"
    return CHAINS.get(chain, C4_CHAIN) if isinstance(chain, str) else tuple(chain)


def _stage_key(name: str, order: Sequence[str]) -> tuple:
    namespace = name.split("/", 1)[0]
    for i, stage in enumerate(order):
        if namespace == stage or namespace.startswith(stage + "-"):
            return (i, namespace, name)
    return (len(order), namespace.split("-badwords")[0], name)


def namespace_order(chain: Chain = C4_CHAIN) -> tuple[str, ...]:
    return tuple(dict.fromkeys(step.namespace for step in shown_steps(chain)))


def rule_order(name: str, chain: Chain = C4_CHAIN) -> tuple:
    """A ``namespace/counter`` name's place in the chain (reports list rules in it)."""
    return _stage_key(name, namespace_order(chain))


def counter_table(counters: Mapping[str, int], chain: Chain = C4_CHAIN) -> str:
    """``| step | counter | count |`` rows in the chain's order."""
    order = namespace_order(chain)
    rows = ["| step | counter | count |", "|---|---|---:|"]
    for name in sorted(counters, key=lambda n: _stage_key(n, order)):
        namespace, _, counter = name.partition("/")
        if counter.startswith("bytes-"):
            continue
        rows.append(f"| {namespace} | {counter} | {counters[name]:,} |")
    return "\n".join(rows)


def page_flow(counters: Mapping[str, int], chain: Chain = C4_CHAIN) -> dict[str, int]:
    """Pages entering each step of ``chain``, in its order, derived from the counters (for a
    one-line summary)."""
    c = counters.get
    flow = {"read": c(f"{NS_READ}/passed", 0)}
    for step in shown_steps(chain)[1:]:
        names = [f"{step.namespace}/{passed}" for passed in step.passed]
        if step.flow and any(name in counters for name in names):
            flow[step.flow] = sum(c(name, 0) for name in names)
    return flow


_LINE_COUNTERS = ("line-filtered:", "line-passed")


def manifest_stats(manifest: dict) -> dict:
    """What `corpus stats` reports, as data (``corpus stats --json``; the schema is
    docs/schemas/corpus-stats.schema.json): how the corpus was built, its splits, the page flow,
    every rule's removals (pages, lines or records) and the text bytes each step kept."""
    counters = manifest.get("counters", {})
    chain = chain_of(manifest)
    order = namespace_order(chain)
    removed = []
    for name in sorted(counters, key=lambda n: _stage_key(n, order)):
        namespace, _, counter = name.partition("/")
        if counter.startswith("bytes-"):
            continue
        if not (counter.startswith(("filtered", "skipped", "line-filtered")) or counter == "soft-passed"):
            continue
        if "-badwords-filter-" in namespace:
            continue
        unit = "lines" if counter.startswith("line-") else "pages"
        if counter.startswith("skipped:record_type") or counter == "soft-passed":
            unit = "records" if counter.startswith("skipped") else "pages kept despite a hit"
        removed.append({"step": namespace, "rule": counter, "count": counters[name], "unit": unit})
    steps = []
    # every step that counted bytes, in chain order (a chain's own page steps after C4's)
    for ns in sorted({name.split("/", 1)[0] for name in counters if name.endswith("/bytes-in")},
                     key=lambda ns: _stage_key(f"{ns}/", order)):
        if f"{ns}/bytes-in" in counters:
            b_in, b_out = counters[f"{ns}/bytes-in"], counters.get(f"{ns}/bytes-out", 0)
            steps.append({"step": ns, "bytes_in": b_in, "bytes_out": b_out,
                          "removed_share": round((1 - b_out / b_in) if b_in else 0.0, 6)})
    build = manifest.get("build", {})
    return {
        "created": manifest.get("created"), "preset": manifest["config"].get("preset"),
        "chain": list(_chain_refs(manifest)),
        "inputs": len(manifest.get("inputs", [])), "input_bytes": build.get("input_bytes", 0),
        "seconds": build.get("seconds"), "shard_format": manifest.get("shard_format"),
        "splits": {split: {"documents": info["documents"], "bytes": info["bytes"],
                           "shards": len(info["files"])}
                   for split, info in manifest.get("splits", {}).items()},
        "page_flow": page_flow(counters, chain), "removed": removed, "bytes_per_step": steps,
        "output": {k.split("/", 1)[1]: v for k, v in sorted(counters.items()) if k.startswith("output/")},
        "reading": {k.split("/", 1)[1]: v for k, v in sorted(counters.items()) if "/read:" in k},
        "extraction": {k.split("/", 1)[1]: v for k, v in sorted(counters.items()) if "/extract:" in k},
    }


def manifest_report(manifest: dict) -> str:
    """`corpus stats`: :func:`manifest_stats` as tables for people."""
    stats = manifest_stats(manifest)
    out = [f"corpus built {stats['created']} with preset {stats['preset']} "
           f"from {stats['inputs']} input file(s) ({stats['input_bytes'] / 1e6:.1f} MB) "
           f"in {stats['seconds']}s", ""]
    out += ["| split | documents | text MB | shards |", "|---|---:|---:|---:|"]
    for split, info in stats["splits"].items():
        out.append(f"| {split} | {info['documents']:,} | {info['bytes'] / 1e6:.2f} | {info['shards']} |")
    out += ["", "pages: " + " -> ".join(f"{k} {v:,}" for k, v in stats["page_flow"].items()), ""]
    out += ["| step | rule | removed | unit |", "|---|---|---:|---|"]
    out += [f"| {r['step']} | {r['rule']} | {r['count']:,} | {r['unit']} |" for r in stats["removed"]]
    if stats["bytes_per_step"]:
        out += ["", "| step | text MB in | text MB out | removed |", "|---|---:|---:|---:|"]
        out += [f"| {s['step']} | {s['bytes_in'] / 1e6:.2f} | {s['bytes_out'] / 1e6:.2f} | "
                f"{s['removed_share']:.1%} |" for s in stats["bytes_per_step"]]
    if stats["reading"]:  # remote files: retries, resumed bytes, restarted files (corpus.remote)
        out += ["", "| reading remote files | count |", "|---|---:|"]
        out += [f"| {k} | {v:,} |" for k, v in stats["reading"].items()]
    if stats["extraction"]:  # WARC input, cascade extractor: which pages took the slow path
        out += ["", "| HTML extraction (cascade) | pages |", "|---|---:|"]
        out += [f"| {k} | {v:,} |" for k, v in stats["extraction"].items()]
    if stats["output"]:
        out += ["", "| output counter | value |", "|---|---:|"]
        out += [f"| {k} | {v:,} |" for k, v in stats["output"].items()]
    return "\n".join(out)


def strict_problem(counters: Mapping[str, int]) -> Optional[str]:
    """What --strict refuses: any input file skipped whole or cut short (``STRICT_SKIPS``)."""

    found = {name: counters.get(f"{NS_READ}/{name}", 0) for name in STRICT_SKIPS}
    found = {k: v for k, v in found.items() if v}
    if not found:
        return None
    return "input file(s) skipped or cut short: " + ", ".join(f"{v} {k}" for k, v in found.items())


def biggest_loss(counters: Mapping[str, int]) -> Optional[tuple[str, int]]:
    """The skip or filter counter that removed the most pages or records (for the warning a run
    that writes no document prints), or None."""
    losses = {name: n for name, n in counters.items()
              if ("/skipped" in name or "/filtered" in name) and n and "line-filtered" not in name}
    return max(losses.items(), key=lambda item: item[1]) if losses else None


def zero_documents_warning(counters: Mapping[str, int]) -> str:
    """What to say when a run read its inputs and wrote no document."""
    loss = biggest_loss(counters)
    why = f"the biggest loss is {loss[0]} ({loss[1]:,})" if loss else "no page was read"
    return f"warning: 0 documents written; {why}. `corpus stats` on the output lists every counter"
