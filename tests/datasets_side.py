"""HF datasets on c4forge corpora, in the side venv that has it (tests/sidevenv.py): opens the
first Arrow shard with ``Dataset.from_file`` and both corpus directories with ``load_dataset``;
prints one JSON line with what it read.

    python tests/datasets_side.py ARROW_DIR PARQUET_DIR FIRST_SHARD CACHE_DIR
"""
import json
import sys

import datasets


def main(arrow_dir: str, parquet_dir: str, first: str, cache: str) -> None:
    shard = datasets.Dataset.from_file(first)
    out = {"shard": {"rows": shard.num_rows, "columns": shard.column_names, "text": list(shard["text"])}}
    for builder, directory in (("arrow", arrow_dir), ("parquet", parquet_dir)):
        loaded = datasets.load_dataset(builder, data_dir=directory, cache_dir=f"{cache}-{builder}")
        out[builder] = {split: sorted(list(loaded[split]["url"])) for split in loaded}
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
