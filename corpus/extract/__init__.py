"""Main text from WARC HTML: the extractors (resiliparse, trafilatura, the cascade) and the
cascade's router."""
