"""c4forge: C4-style corpora, tokenizers and small LMs, end to end.

The stages live in their own packages (``corpus``, ``pipelines``, ``tokenizer``, ``train``) and
meet only through on-disk formats; this package holds what composes them: the command lines.
"""
