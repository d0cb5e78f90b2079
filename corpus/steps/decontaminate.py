"""Decontamination against evaluation sets (GPT-3's 13-gram overlap; namespace ``decontaminate``;
corpus/rules/decontaminate.py): a page sharing an n-gram with a set is dropped, or with
``action=drop-lines`` loses the lines the matched n-grams touch."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from c4forge.core.settings import NAMED_PATHS, POSITIVE_INT, ConfigError, setting
from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Verdict
from c4forge.corpus.document import Document
from c4forge.corpus.rules.decontaminate import (
    ACTIONS,
    EvalIndex,
    EvalSetError,
    decontaminate,
    line_fates,
    parse_sets,
)


@dataclasses.dataclass(frozen=True)
class Decontamination:
    """``decontaminate`` in the corpus config: ``sets`` (``NAME=PATH`` each), ``n`` (words per
    n-gram), ``action`` (drop-page or drop-lines)."""

    on: bool = False
    sets: tuple[str, ...] = setting((), path=NAMED_PATHS)
    n: int = setting(13, POSITIVE_INT)
    action: str = "drop-page"


def check(settings: Decontamination, config: Any) -> None:
    if settings.action not in ACTIONS:
        raise ConfigError(f"decontaminate.action={settings.action!r}: choose {', '.join(ACTIONS)}")
    try:
        parse_sets(settings.sets)
    except EvalSetError as exc:
        raise ConfigError(str(exc)) from None
    if settings.on and not settings.sets:
        raise ConfigError("decontaminate.on needs decontaminate.sets (NAME=PATH, ...)")


class Index(NamedTuple):
    """What the step loads: every n-gram of the sets, and what to do with a match."""

    index: EvalIndex
    action: str


def load(settings: Decontamination, config: Any) -> Index:
    return Index(EvalIndex.build(settings.sets, settings.n), settings.action)


def contamination(loaded: Index, page: Document) -> Verdict:
    return decontaminate(page, loaded.index, loaded.action)


def contamination_fates(loaded: Index, page: Document):
    return line_fates(page.text, loaded.index, loaded.action)


STEP = page_step("decontaminate", contamination, "[decontamination against evaluation sets]",
                 settings=Decontamination, load=load, check=check, flow="decontaminated",
                 explain=contamination_fates)
