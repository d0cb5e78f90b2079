"""PII formatting as FineWeb did it (datatrove 0.10's ``PIIFormatter``; namespace ``pii``):
e-mail and public IP addresses replaced by stand-ins. It never drops a page, so
it may follow near-dedup.

PII formatting as FineWeb did it (datatrove 0.10's ``PIIFormatter``): e-mail addresses and
public IP addresses in the text replaced by harmless stand-ins, with datatrove's patterns, its
public-address test (``ipaddress``'s ``is_global``) and its stand-ins.

One difference, on purpose: datatrove hands out its stand-ins in turn, from a counter that runs
across every document a worker formats, so which stand-in a page gets depends on the pages the
worker saw before it. Here the stand-in is chosen by md5 of the address replaced: the same page
gives the same text on every runner, engine and bundle split (and one address is always replaced
by the same stand-in). Counted per page step: ``emails``, ``ips`` (addresses replaced)."""
from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import re

from c4forge.corpus.chain.step import page_step
from c4forge.corpus.chain.verdict import Count, Verdict, keep
from c4forge.corpus.document import Document

EMAIL = re.compile(
    r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:(?:[A-Za-z0-9](?:["
    r"A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?|\[(?:(?:25[0-5]|2[0-4][0-9]|["
    r"01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?|[A-Za-z0-9-]*[A-Za-z0-9]:)])")
# a cheap first look: the full patterns cannot match where these find nothing
_MAYBE_IPV4 = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")
IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)")
EMAIL_STAND_INS = ("email@example.com", "firstname.lastname@example.org")
# datatrove's: randomly generated addresses that did not answer pings when the list was made
IP_STAND_INS = ("22.214.171.124", "126.96.36.199", "188.8.131.52", "184.108.40.206",
                "220.127.116.11", "18.104.22.168")


def _stand_in(found: str, stand_ins: tuple[str, ...]) -> str:
    digest = hashlib.md5(found.encode("utf-8")).digest()
    return stand_ins[int.from_bytes(digest[:8], "little") % len(stand_ins)]


def is_public_ip(text: str, only_public: bool = True) -> bool:
    """datatrove's validator: an IP address, and (``only_public``) a globally routed one."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not only_public or address.is_global


def format_pii(page: Document, emails: bool = True, ips: bool = True, only_public_ips: bool = True) -> Verdict:
    """The page with its addresses replaced (e-mails first, then IPs, as datatrove); never
    dropped."""
    text, counts = page.text, []
    if emails and "@" in text:
        text, n = EMAIL.subn(lambda m: _stand_in(m.group(0), EMAIL_STAND_INS), text)
        if n:
            counts.append(Count("", "emails", n))
    if ips and _MAYBE_IPV4.search(text):
        replaced = [0]

        def ip(match: re.Match) -> str:
            if not is_public_ip(match.group(0), only_public_ips):
                return match.group(0)
            replaced[0] += 1
            return _stand_in(match.group(0), IP_STAND_INS)

        text = IPV4.sub(ip, text)
        if replaced[0]:
            counts.append(Count("", "ips", replaced[0]))
    return keep(page if text == page.text else page.replace(text=text), counts=counts)


@dataclasses.dataclass(frozen=True)
class Pii:
    """``pii`` in the corpus config: which addresses to replace (datatrove's defaults)."""

    on: bool = False
    emails: bool = True
    ips: bool = True
    only_public_ips: bool = True


def pii(settings: Pii, page: Document) -> Verdict:
    return format_pii(page, settings.emails, settings.ips, settings.only_public_ips)


STEP = page_step("pii", pii, "[PII replaced]", settings=Pii, drops_pages=False, flow=None)
