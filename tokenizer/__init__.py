"""SentencePiece vocabularies trained from corpus shards, and token shards for the trainer."""
