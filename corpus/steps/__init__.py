"""Every built-in step of the chains, registered by name in one place (``REGISTRY``); each is one
module of this package (its settings type, what it loads, its function: corpus/chain/step.py says
what a step is). corpus/chain/chains.py orders them into chains; the corpus config holds one settings
object per step, keyed by its name (corpus/config.py).

Adding a built-in page filter: a module here with ``STEP = page_step(...)``, its one line in
``NAMES`` below, and its name in the chain lists of corpus/chain/chains.py where it runs. A user's own step needs neither:
the config names it as ``package.module:function`` (corpus/chain/step.py ``user_step``).
"""
from __future__ import annotations

import importlib
from types import ModuleType

from c4forge.corpus.chain.step import Step

# Every built-in step: its module's name in this package, one line each, in the order help texts
# and reports list them (a chain's own order is in corpus/chain/chains.py).
NAMES: tuple[str, ...] = (
    "read",
    "length",
    "url_filter",
    "url_dedup",
    "paragraph_filter",
    "clean_page",
    "exact_dedup",
    "line_dedup",
    "language_id",
    "bad_words",
    "gopher_repetition",
    "gopher_quality",
    "c4_quality",
    "fineweb_quality",
    "quality_classifier",
    "decontaminate",
    "near_dedup",
    "pii",
)
MODULES: tuple[ModuleType, ...] = tuple(importlib.import_module(f"{__name__}.{name}") for name in NAMES)
REGISTRY: dict[str, Step] = {module.STEP.name: module.STEP for module in MODULES}
MODULE_OF: dict[str, str] = {module.STEP.name: module.__name__ for module in MODULES}
