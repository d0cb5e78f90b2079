"""The console scripts ``corpus``, ``tokenizer`` and ``train``: the layer that composes the
stages (it imports corpus, pipelines, tokenizer and train; none of them imports it)."""
