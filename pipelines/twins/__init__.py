"""The corpus-wide steps on Beam, each the twin of its one-process half in corpus/dedup/ (same
name) under the contract its step module in corpus/steps/ states: URL, exact-text, line and MinHash
near-dedup. A twin sees the page handle and its own segment, never another twin."""
