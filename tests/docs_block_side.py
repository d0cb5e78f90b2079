"""Run a block of Python one-liners (from docs/formats.md) statement by statement in the side
venv that has HF datasets (tests/sidevenv.py); print one JSON line: for every assignment, the
length of the value it made.

    python tests/docs_block_side.py BLOCK_FILE
"""
import json
import sys


def main(block_file: str) -> None:
    namespace: dict = {}
    lengths = []
    for statement in open(block_file, encoding="utf-8").read().splitlines():
        exec(statement, namespace)  # the docs' own line
        if not statement.startswith("import"):
            name = statement.split("=")[0].strip()
            lengths.append([statement, len(namespace[name])])
    print(json.dumps({"lengths": lengths}))


if __name__ == "__main__":
    main(sys.argv[1])
