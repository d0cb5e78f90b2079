"""numba's compilation of the project's loops (language ID, the word table, n-gram counts), with
or without reference counting.

Why without: numba counts references to every array a compiled function holds, and a compiled
function calling another passes each array argument with an atomic increment and decrement (the
``NRT_incref``/``NRT_decref`` of numba's runtime, about 20 cycles each). A helper called once per
token or per chunk with five arrays is ten atomic operations a call: in perf, 25% of language
ID's CPU went to them. A loop that allocates nothing needs no counts; numba's ``_nrt=False``
option compiles it without any (its own tests use it; such a function cannot allocate an array,
which numba refuses to compile, so a helper that forgets is an error, never a leak). Callers that
allocate keep the counts and hand their buffers down.

numba is imported here only when a kernel is first compiled: its import costs 0.35-0.6 CPU s,
which a process that never runs a kernel should not pay.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

NRT_CALLS = ("NRT_incref", "NRT_decref")


def njit(function: Callable, *, counted: bool = True, nogil: bool = False) -> Any:
    """``function`` compiled by numba (cached on disk); ``counted=False``: without reference
    counting (module doc), for a loop that allocates nothing."""
    import numba  # lazy: see the module doc

    options: dict[str, Any] = {"cache": True, "nogil": nogil}
    if not counted:
        options["_nrt"] = False
    return numba.njit(**options)(function)


def numba_available() -> bool:
    """Whether numba imports here (it is a dependency; a platform without its wheels runs each
    kernel's plain Python or numpy path, or fastText itself for language ID)."""
    try:
        import numba  # lazy: see the module doc  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    return True


def counts_references(dispatcher: Any) -> bool:
    """Whether any compiled signature of ``dispatcher`` calls numba's reference counting (the
    tests' check that a refcount-free kernel stays so)."""
    return any(call in dispatcher.inspect_llvm(signature) for signature in dispatcher.signatures
               for call in NRT_CALLS)
