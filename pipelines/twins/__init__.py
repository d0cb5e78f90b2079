"""The corpus-wide steps on Beam, each the twin of its one-process half in corpus/dedup/ (same
name) under the contract its step module in corpus/steps/ states: URL, exact-text, line and MinHash
near-dedup. Each module holds its step's DoFns and element functions; the transforms that
apply them, in the graph's order, are pipelines/c4.py's. A twin sees the page handle and its
own segment, never another twin."""
