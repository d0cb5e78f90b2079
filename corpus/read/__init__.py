"""The crawl reader, layer by layer: opening a file's bytes (local or remote), its gzip members, the
WARC/WET records in them, the pages they hold (wet.py, the top layer), and which files an input names."""
