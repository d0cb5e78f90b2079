"""Packed-sequence pretraining and evaluation of small decoder LMs on token shards."""
