"""The trainer's data path: token shards -> packed, document-masked batches at any scale.

- :mod:`train.data.documents`: a split of a token directory, memory-mapped.
- :mod:`train.data.packing`: one epoch's rows (concat windows, best-fit chunks), made lazily.
- :mod:`train.data.stream`: one directory's rows as an addressable stream over epochs.
- :mod:`train.data.mixture`: several directories with weights.
- :mod:`train.data.loader`: global batches, rank slices, resumable state, prefetch.
- :mod:`train.data.batch`: rows -> inputs, targets, document ids, positions.
"""
from c4forge.train.data.batch import IGNORE, Batch, rows_to_batch
from c4forge.train.data.documents import TokenDocuments, check_same_tokenizer
from c4forge.train.data.loader import LoaderStateError, PackedLoader
from c4forge.train.data.mixture import MixtureError, mixture_entries
from c4forge.train.data.packing import DEFAULT_CHUNK_DOCS, PACKINGS
from c4forge.train.data.stream import NotEnoughData

__all__ = ["IGNORE", "Batch", "rows_to_batch", "TokenDocuments", "check_same_tokenizer",
           "LoaderStateError", "PackedLoader", "MixtureError", "mixture_entries",
           "DEFAULT_CHUNK_DOCS", "PACKINGS", "NotEnoughData"]
