"""PII formatting as FineWeb did it (datatrove 0.10's ``PIIFormatter``; namespace ``pii``):
e-mail and public IP addresses replaced by stand-ins (corpus/pii.py). It never drops a page, so
it may follow near-dedup."""
from __future__ import annotations

import dataclasses

from c4forge.corpus.document import Document
from c4forge.corpus.pii import format_pii
from c4forge.corpus.step import page_step
from c4forge.corpus.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class Pii:
    """``pii`` in the corpus config: which addresses to replace (datatrove's defaults)."""

    on: bool = False
    emails: bool = True
    ips: bool = True
    only_public_ips: bool = True


def pii(settings: Pii, page: Document) -> Verdict:
    return format_pii(page, settings.emails, settings.ips, settings.only_public_ips)


STEP = page_step("pii", pii, "[PII replaced]", settings=Pii, drops_pages=False)
