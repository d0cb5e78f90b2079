"""JSON Schemas of c4forge's manifests and machine-readable outputs (the files beside this one,
linked from docs/formats.md), and the one validator every reader uses (jsonschema)."""
from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

SCHEMAS = ("corpus-manifest", "token-manifest", "corpus-stats", "eval-results")


@functools.cache
def schema(name: str) -> dict:
    """The schema ``name`` (one of :data:`SCHEMAS`)."""
    return json.loads(resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8"))


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # lazy: jsonschema, only when a manifest is checked

    return jsonschema.Draft202012Validator(schema(name))


def problems(name: str, document: object) -> list[str]:
    """Where ``document`` breaks schema ``name``, one line each (empty: valid)."""
    validator = _validator(name)
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))]
