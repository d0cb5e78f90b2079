"""The error hierarchy: every failure a user can cause or fix is a :class:`C4forgeError`.

Stages raise a subclass that names their stage or format (``OutputError``, ``ConfigError``,
``CorpusFormatError``, ``TokenizerError``, ``CheckpointError``, ...) with a one-line message
saying what, which path and what to do. The command lines catch the base class in exactly one
place (``c4forge.cli.common.guarded_main``), which prints ``Error: <message>`` and exits with
:attr:`C4forgeError.exit_code`; stages never import click.
"""
from __future__ import annotations


class C4forgeError(Exception):
    """A failure with a message meant for the user (no traceback)."""

    #: Exit status of a command that fails with this error: 1 for a failed job, 2 for a usage
    #: mistake (a bad option or setting, as click's own usage errors).
    exit_code: int = 1


class UsageError(C4forgeError):
    """A setting or option the user must change before anything runs (exit 2)."""

    exit_code = 2
