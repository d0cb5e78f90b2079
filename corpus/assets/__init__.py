"""Files the rules read from outside: downloaded once and cached (bad-word lists) or taken from a
pinned wheel on the package index (FineWeb's URL lists)."""
