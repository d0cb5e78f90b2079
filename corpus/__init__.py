"""Pure per-document logic of the C4 pipeline: reading crawl files, the C4 rules, language ID,
bad words, dedup signatures and the on-disk formats. No Beam import anywhere in this package, so
every rule runs and is tested as a plain function and other engines can reuse it."""
