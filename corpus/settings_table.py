"""The table of every corpus setting that docs/corpus.md shows (``make docs`` renders it there,
the docs test keeps the two the same): each step's settings, the reader's and the rule samples',
with the ``c4`` preset's default and what the settings type's own docstring says of the field,
so a setting added to a step is in the docs the moment its field exists."""
from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

from c4forge.corpus.config import CorpusConfig
from c4forge.corpus.output.samples import SampleOptions
from c4forge.corpus.read.options import ReadOptions
from c4forge.corpus.steps import REGISTRY

LEAD = re.compile(r"^``[\w-]+`` in the corpus config[.:,]?\s*")


def shown(value: Any) -> str:
    """A default as a user would type it."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None or value == "" or value == ():
        return "none"
    if isinstance(value, (tuple, list)):
        return ", ".join(shown(v) for v in value) if all(not isinstance(v, (tuple, list)) for v in value) \
            else str([list(v) if isinstance(v, tuple) else v for v in value])
    return str(value)


def field_docs(settings_type: type) -> tuple[str, dict[str, str]]:
    """(what the type's docstring says before its fields, each field's sentence): a field is
    described where the docstring writes ``name:`` or ````name````: (an ``a / b:`` pair counts for
    both)."""
    docs = [klass.__doc__ for klass in settings_type.__mro__ if klass is not object and klass.__doc__]
    doc = " ".join(" ".join(inspect.cleandoc(d) for d in docs).split())
    names = [f.name for f in dataclasses.fields(settings_type)]
    marks = []
    for name in names:
        found = re.search(rf"(?<![\w.-])(``)?{name}(``)?(?: / [\w`]+)?: ", doc)
        if found:
            marks.append((found.start(), found.end(), name))
    for name in names:  # the second of an "a / b:" pair
        pair = re.search(rf"(?<![\w.-])(``)?[\w]+(``)? / (``)?{name}(``)?: ", doc)
        if pair and name not in {m[2] for m in marks}:
            marks.append((pair.start(), pair.end(), name))
    marks.sort()
    lead = LEAD.sub("", doc[:marks[0][0]] if marks else doc).strip()
    described = {}
    for i, (_, end, name) in enumerate(marks):
        stop = next((m[0] for m in marks[i + 1:] if m[0] >= end), len(doc))
        described[name] = doc[end:stop].strip().rstrip(";,")
    return lead, described


def row_of(prefix: str, settings: Any, summary: str) -> str:
    """One row for a settings type: its fields (``step.on``, ``.max_chars``...), their defaults
    in the same order, and what the step is with what its docstring says of each field."""
    lead, described = field_docs(type(settings))
    fields = [f.name for f in dataclasses.fields(settings)]
    keys = ", ".join(f"`{prefix}.{name}`" if i == 0 else f"`.{name}`" for i, name in enumerate(fields))
    defaults = "; ".join(shown(getattr(settings, name)) for name in fields)
    said: list[tuple[str, str]] = []  # (fields, what the docstring says), a shared sentence once
    for name in fields:
        text = described.get(name, "").rstrip(".")
        if text and said and said[-1][1] == text:
            said[-1] = (f"{said[-1][0]}` / `{name}", text)
        elif text:
            said.append((name, text))
    parts = [summary, lead.rstrip(".")] + [f"`{names}`: {text}" for names, text in said]
    about = "; ".join(part for part in parts if part).replace("|", "\\|")
    return f"| {keys} | {defaults.replace('|', '/')} | {about} |"


def settings_table() -> str:
    """Every setting of the corpus stage, step by step in the registry's order, then the
    reader's and the rule samples'."""
    config = CorpusConfig()
    rows = ["| setting | c4 default | what it does |", "|---|---|---|",
            "| `chain` | c4 | the steps in order: a chain's name (c4, gopher, fineweb), a list (yours "
            "included), or the preset's chain extended (`chain.after.STEP=...`: \"Your own step\") |",
            f"| `validation_per_mille` | {config.validation_per_mille} | documents whose md5(normalised url) "
            "% 1000 is below this go to the validation split (tfds: 1) |"]
    for name, step in REGISTRY.items():
        if name != "read":
            rows.append(row_of(name, config.settings_of(name), step.summary.strip("[]")))
    rows.append(row_of("read", ReadOptions(), "the crawl reader"))
    rows.append(row_of("rule_samples", SampleOptions(), "what each rule did, for `corpus inspect`"))
    return "\n".join(rows)
