"""What a step is and how steps run: the step record, the chains as data and their plan, the
verdict a page step returns, the one loop of page steps, corpus-wide steps in one process, and
the whole chain in one process (`corpus clean`).

This package is also the one import a step's author needs (docs/corpus.md, "Your own step")::

    from c4forge.corpus.chain import UNIT_INTERVAL, drop, keep, page_step, setting, step_settings

``step_settings`` makes a settings type (a frozen dataclass, what every built-in step's is),
``setting(default, RULE)`` declares a field with the rule its values are checked by,
``page_step`` the step, ``keep``/``drop`` its verdicts.
"""
from __future__ import annotations

import dataclasses

from c4forge.core.settings import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    PATH,
    POSITIVE,
    POSITIVE_INT,
    UNIT_INTERVAL,
    setting,
)
from c4forge.corpus.chain.step import Step, page_step
from c4forge.corpus.chain.verdict import Verdict, drop, keep
from c4forge.corpus.document import Document

# A step's settings type: a frozen dataclass (values are checked field by field, and a step's
# settings are hashed and compared: they must not change once built).
step_settings = dataclasses.dataclass(frozen=True)

__all__ = ["NON_NEGATIVE", "NON_NEGATIVE_INT", "PATH", "POSITIVE", "POSITIVE_INT", "UNIT_INTERVAL", "Document",
           "Step", "Verdict", "drop", "keep", "page_step", "setting", "step_settings"]
