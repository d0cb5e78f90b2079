"""Beam wiring of the corpus stage: maps, groups and counts; every rule lives in corpus/."""
