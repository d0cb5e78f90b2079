"""Reading the crawl files (namespace ``split-wet-file``, tfds' name): WET text records, or the
main text extracted from WARC HTML (corpus/read/wet.py, corpus/extract/html.py). Every chain starts here;
its settings are the config's ``read`` (corpus/read/options.py), not a step's."""
from __future__ import annotations

from c4forge.corpus.chain.step import Scope, Step
from c4forge.corpus.read.wet import NS_READ

STEP = Step("read", NS_READ, Scope.READ, "read WET (or extract WARC HTML)", flow="read")
