"""What a step of the chain is, as one record (:class:`Step`), and what binds it to a config in
a process (:func:`loaded`).

A step is one module (corpus/steps/<name>.py for the built-in ones, any module of a user's for
theirs): its **settings** type (a frozen dataclass whose fields carry their rules, checked by
c4forge.core.settings; the corpus config holds one per step, keyed by the step's name), what it
**loads** once per process (the LID model, the bad-word automata, the block lists: ``load(settings,
config)``; nothing for most steps), and its **function**:

- a *page step* decides on one page: ``apply(loaded, page) -> Verdict`` (corpus/chain/verdict.py),
  where ``loaded`` is what ``load`` returned, or the step's settings when it loads nothing.
  It counts nothing itself: the step loop (corpus/chain/loop.py) does, in both runners;
- a *corpus-wide step* needs every page at once: ``local(pages, job)`` is its one-process
  algorithm (corpus/chain/wide.py), and pipelines/c4.py's CORPUS_WIDE names its Beam twin (its
  transforms there, its DoFns in pipelines/twins/).

Nothing loaded is ever pickled: a Beam DoFn carries the config and its steps, and each worker
loads what its steps need on first use, once per process (:func:`loaded`), so no step writes
``__getstate__`` or ``setup`` of its own.

A user's own page step is named in the config as ``package.module:function`` (datatrove's
model: their code, our counters): a function ``filter(page)`` returning ``True``/``False``,
``(False, "reason")``, a changed Document or a Verdict, or a :class:`Step` of their own
(settings and a model included) built with :func:`page_step` (docs/corpus.md, "Your own step").
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Optional

from c4forge.core.settings import ConfigError
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document
from c4forge.corpus.output.samples import Explain


class Scope(enum.Enum):
    """What a step needs to decide: the files, one page, or every page."""

    READ = "the crawl files"
    PAGE = "one page"
    URL_GROUPS = "every crawl of a URL (keyed grouping)"
    LINE_OWNERS = "every page holding a line (a join back to the pages)"
    TEXT_GROUPS = "every page of the same text (keyed grouping)"
    CLUSTERS = "every near-duplicate of a page (clustering)"


@dataclasses.dataclass(frozen=True)
class Switch:
    """The settings of a step that has none but its switch (a user's filter function)."""

    on: bool = True


def switched_on(settings: Any) -> bool:
    """A step runs when its settings' ``on`` is true (a step without one always runs)."""
    return bool(getattr(settings, "on", True))


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a chain (module doc). ``clock``: the stage its CPU seconds go to (the per-stage
    cost table); ``flow``: its row in a report's page flow, read from its ``passed`` counters;
    ``enabled``: whether its settings switch it on (a plan leaves a step that is off out), and
    ``runs_when`` the same rule as the docs state it, in its settings' names (``on and fraction
    > 0``; a step whose ``enabled`` is not ``switched_on`` says its own);
    ``check(settings, config)``: what its settings' field rules cannot say alone (a file that
    must exist, a label the model gives), raising ConfigError; ``origin``: a user's step as the
    config names it (``module:function``), empty for a built-in one; ``preflight()``: a check
    that needs no settings, run once in the submitting process before any work (the word
    splitter's rules and self-check), so that its failure is one line there, not in a worker."""

    name: str
    namespace: str
    scope: Scope
    summary: str
    settings: type = Switch
    load: Optional[Callable[[Any, Any], Any]] = None
    apply: Optional[Callable[[Any, Document], Verdict]] = None
    explain: Optional[Explain] = None
    check: Optional[Callable[[Any, Any], None]] = None
    enabled: Callable[[Any], bool] = switched_on
    runs_when: str = "on"
    flow: Optional[str] = None
    passed: tuple[str, ...] = ("passed",)
    clock: Optional[str] = None
    local: Optional[Callable] = None  # corpus-wide steps: run(pages, job), corpus/chain/wide.py
    contract: str = ""  # corpus-wide steps: what both twins do
    drops_pages: bool = True  # False: a step that only rewrites (PII), allowed after near-dedup
    origin: str = ""
    preflight: Optional[Callable[[], Any]] = None  # what the submitting process checks first

    @property
    def clock_name(self) -> str:
        return self.clock or self.name

    def is_page_step(self) -> bool:
        return self.scope is Scope.PAGE

    def is_wide(self) -> bool:
        return self.scope not in (Scope.PAGE, Scope.READ)


def page_step(name: str, apply: Callable[[Any, Document], Verdict], summary: str = "",
              namespace: str = "", **fields) -> Step:
    """A page step: ``apply(loaded, page)`` returns a Verdict (corpus/chain/verdict.py). The counter
    namespace, the summary (help texts, docs) and its row in a report's page flow are the name
    unless given (``flow=None``: no row, for a step that rarely drops a page)."""
    fields.setdefault("flow", name)
    return Step(name, namespace or name, Scope.PAGE, summary or name, apply=apply, **fields)


def wide_step(name: str, namespace: str, scope: Scope, summary: str, local: Callable, contract: str,
              **fields) -> Step:
    """A corpus-wide step: ``local`` its one-process twin; pipelines/c4.py's CORPUS_WIDE names its
    Beam one (DoFns: pipelines/twins/). Its page-flow row is its name unless given."""
    fields.setdefault("flow", name)
    return Step(name, namespace, scope, summary, local=local, contract=contract, **fields)


# ------------------------------------------------------------------ loading, once per process

_LOADED: OrderedDict[tuple[str, Any], Any] = OrderedDict()
_LOCK = threading.Lock()
KEPT_CONFIGS = 16  # what one process keeps loaded: tests build many configs in one process


def loaded(step: Step, config: Any) -> Any:
    """What ``step``'s function is given under ``config`` (whose ``settings_of(step)`` is the
    step's settings): its ``load``'s result, built on first use and kept for the process (the
    models and lists of every DoFn of a worker are loaded once), or its settings."""
    settings = config.settings_of(step)
    if step.load is None:
        return settings
    key = (step.name, config)
    with _LOCK:
        if key in _LOADED:
            _LOADED.move_to_end(key)
            return _LOADED[key]
    value = step.load(settings, config)
    with _LOCK:
        _LOADED[key] = value
        while len(_LOADED) > KEPT_CONFIGS * 4:
            _LOADED.popitem(last=False)
    return value


# ------------------------------------------------------------------ a user's own steps


@dataclasses.dataclass(frozen=True)
class FilterFunction:
    """A user's ``filter(page)`` as a step's function: what it returns made a Verdict (True keeps
    the page, False drops it, ``(False, reason)`` drops it with a reason, a Document is the
    changed page kept, a Verdict is taken as it is). Pickled by reference to the function, so a
    worker imports the user's module (the build puts its folder on the workers' path)."""

    function: Callable[[Document], Any]
    name: str

    def __call__(self, settings: Any, page: Document) -> Verdict:
        return as_verdict(self.function(page), page, self.name)


class StepResultError(ConfigError):
    """A user's step returned something that is not a decision."""

    exit_code = 1


def as_verdict(result: Any, page: Document, name: str) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool):
        return keep(page) if result else drop()
    if isinstance(result, Document):
        return keep(result)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return keep(page) if result[0] else drop(str(result[1] or ""))
    raise StepResultError(f"step {name} returned {type(result).__name__} {result!r:.60}; a filter "
                          "returns True/False, (False, 'reason'), a Document or a Verdict")


def step_name_of(attribute: str) -> str:
    """``mostly_digits`` -> ``mostly-digits``: a function's step name and counter namespace."""
    return attribute.strip("_").replace("_", "-").lower()


def user_step(ref: str) -> Step:
    """The step a config names as ``package.module:attribute``: a Step as it is, a function made
    a page step named after it. The module is imported as ``python -m`` would, the working
    directory first, and its folder put on the path of the worker processes this one starts
    (``PYTHONPATH``), so every runner's workers import the same file. A ConfigError (one line)
    when it cannot be imported or is not a step."""
    module_name, sep, attribute = ref.partition(":")
    if not sep or not module_name or not attribute.isidentifier():
        raise ConfigError(f"chain: {ref!r} is neither a step's name nor package.module:function")
    module = import_user_module(module_name, ref)
    found = getattr(module, attribute, None)
    if found is None:
        raise ConfigError(f"chain: {ref}: module {module_name} ({_shown(module)}) has no {attribute!r}")
    if isinstance(found, Step):
        if not found.is_page_step():
            raise ConfigError(f"chain: {ref}: a step of your own is a page step (corpus-wide steps "
                              "need a Beam twin: docs/architecture.md)")
        return dataclasses.replace(found, origin=ref)
    if not callable(found):
        raise ConfigError(f"chain: {ref} is a {type(found).__name__}, not a function or a Step")
    name = step_name_of(attribute)
    summary = ((found.__doc__ or "").strip().splitlines() or [name])[0].rstrip(".")
    return page_step(name, FilterFunction(found, name), f"[{summary}]", origin=ref)


def import_user_module(module_name: str, ref: str):
    """``module_name`` imported with the working directory first on the path (as ``python -m``
    and uvicorn do); its import root exported to the workers' ``PYTHONPATH``."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure of their code is their one-line error
        raise ConfigError(f"chain: cannot import {module_name} for {ref} ({type(exc).__name__}: "
                          f"{exc}); run from the folder that holds it or put it on PYTHONPATH") from None
    export_import_root(module, module_name)
    return module


def export_import_root(module, module_name: str) -> None:
    """Put the folder ``module`` was imported from on ``PYTHONPATH`` for the processes started
    after this (SDK workers of every local runner, an engine's job server and its workers)."""
    path = getattr(module, "__file__", None)
    if not path:
        return
    root = os.path.dirname(os.path.abspath(path))
    depth = module_name.count(".") + (os.path.basename(path) == "__init__.py")
    for _ in range(depth):
        root = os.path.dirname(root)
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in current:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *current])


def _shown(module) -> str:
    path = getattr(module, "__file__", None) or module.__name__
    return os.path.relpath(path) if os.path.isabs(path) and not os.path.relpath(path).startswith("..") else path
