"""datatrove 0.10's own verdicts, for tests/test_quality.py: run in .venv-peers (datatrove needs a
dill that Beam forbids), never imported by the project.

    .venv-peers/bin/python tests/datatrove_oracle.py PAGES.jsonl LISTS_DIR OUT.json CLASSIFIER

PAGES.jsonl: one {"url", "text"} per line. LISTS_DIR: block lists in datatrove's file names (the
URL filter's test lists). Writes {filter: [reason or null per page]} for each filter run alone
with its defaults, the URL filter once with the lists given and once with datatrove's integrated
lists (whose files it also unpacks into OUT.json's folder, ``integrated/``, for our side to read).
Every tldextract here uses the public suffix list tldextract ships, as ours does (datatrove would
fetch the live list where it can: the comparison is of the filters, under one list).
CLASSIFIER: a fastText model with labels hq and cc, run as datatrove's FastTextClassifierFilter
keeping hq >= CLASSIFIER_THRESHOLD with newlines as spaces (our quality classifier's setting):
each page's verdict and P(hq).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile

from datatrove.data import Document
from datatrove.pipeline.filters import (
    C4QualityFilter,
    FastTextClassifierFilter,
    FineWebQualityFilter,
    GopherQualityFilter,
    GopherRepetitionFilter,
    URLFilter,
)
from datatrove.pipeline.formatters import PIIFormatter
from datatrove.utils._import_utils import ASSETS_PATH
from tldextract import TLDExtract


def reasons(step, pages: list[dict]) -> list:
    out = []
    for i, page in enumerate(pages):
        doc = Document(text=page["text"], id=str(i), metadata={"url": page["url"]})
        verdict = step.filter(doc)
        if verdict is True:
            out.append(None)
        elif isinstance(verdict, tuple):
            out.append(verdict[1])
        else:
            out.append("filtered")
    return out


def c4_outputs(pages: list[dict]) -> list:
    """FineWeb's C4 setting: the reason, or the text it keeps."""
    step = C4QualityFilter(filter_no_terminal_punct=False)
    out = []
    for i, page in enumerate(pages):
        doc = Document(text=page["text"], id=str(i), metadata={"url": page["url"]})
        verdict = step.filter(doc)
        out.append({"text": doc.text} if verdict is True else {"reason": verdict[1]})
    return out


CLASSIFIER_THRESHOLD = 0.5


def classifier_outputs(model: str, pages: list[dict]) -> list:
    step = FastTextClassifierFilter(model, keep_labels=("hq", CLASSIFIER_THRESHOLD), newline_replacement=" ")
    out = []
    for i, page in enumerate(pages):
        doc = Document(text=page["text"], id=str(i), metadata={"url": page["url"]})
        kept = step.filter(doc)
        out.append({"kept": bool(kept), "score": doc.metadata["__label__hq"]})
    return out


def read_lines(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return handle.readlines()


def url_filter(lists: str) -> URLFilter:
    step = URLFilter(extra_domains=read_lines(os.path.join(lists, "domains")),
                     extra_urls=read_lines(os.path.join(lists, "urls")),
                     banned_words=read_lines(os.path.join(lists, "banned_words.txt")),
                     banned_subwords=read_lines(os.path.join(lists, "banned_subwords.txt")),
                     soft_banned_words=read_lines(os.path.join(lists, "soft_banned_words.txt")),
                     use_integrated_lists=False)
    step.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)
    return step


def integrated(folder: str) -> URLFilter:
    """datatrove's integrated lists, unpacked into ``folder`` in the layout ours reads."""
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(os.path.join(ASSETS_PATH, "url_filterblacklistsv0_3_0.tar.gz"), "r:gz") as tar:
        tar.extractall(folder, filter="data")
    for name in ("banned_words.txt", "banned_subwords.txt", "soft_banned_words.txt"):
        shutil.copy(os.path.join(ASSETS_PATH, name), os.path.join(folder, name))
    step = URLFilter()
    step.tldextractor = TLDExtract(suffix_list_urls=(), cache_dir=None)
    return step


def main(pages_path: str, lists: str, out_path: str, classifier: str) -> int:
    with open(pages_path, encoding="utf-8") as handle:
        pages = [json.loads(line) for line in handle]
    pii = PIIFormatter()
    found = {
        "gopher_quality": reasons(GopherQualityFilter(), pages),
        "gopher_repetition": reasons(GopherRepetitionFilter(), pages),
        "fineweb_quality": reasons(FineWebQualityFilter(), pages),
        "c4_quality": c4_outputs(pages),
        "url_filter": reasons(url_filter(lists), pages),
        "url_filter_integrated": reasons(
            integrated(os.path.join(os.path.dirname(out_path), "integrated")), pages),
        # which spans PII formatting replaces (the stand-ins themselves differ on purpose)
        "pii_changed": [pii.format(page["text"]) != page["text"] for page in pages],
        "classifier": classifier_outputs(classifier, pages),
    }
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(found, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
