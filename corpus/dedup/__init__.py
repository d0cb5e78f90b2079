"""The corpus-wide dedups as pure pieces (URL, exact text, lines, MinHash near-dups): their
one-process twins, the signatures and the fixed-size records the engine path shuffles."""
