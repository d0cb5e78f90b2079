"""What every c4forge console script shares: one convention for options (``-i/--input``,
``-o/--output``, ``--config``, ``--set KEY=VALUE``, ``-q/--quiet``, ``-v/--verbose``), quiet
start-up, and no Python traceback for anything a user can cause.

Errors are turned into messages and exit codes in exactly one place, :func:`report_error`
(called by every command group, :class:`Group`, and by :func:`guarded_main`):

- a :class:`~c4forge.core.errors.C4forgeError` raised by a stage (what, which path, what to do)
  prints ``Error: <message>`` and exits with its ``exit_code`` (1; 2 for usage errors such as an
  unknown setting);
- click's own usage errors (unknown option, missing argument) exit 2 as click prints them;
- an ``OSError`` (disk full, permission denied) prints the path and the system's reason, exit 1;
- anything nobody anticipated prints one line naming its type and message, exit 1, unless
  ``C4FORGE_DEBUG=1`` asks for the traceback.

Commands never catch a stage's exception to re-raise it for click.
"""
from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import NamedTuple, Optional

import click

from c4forge.core import progress
from c4forge.core.errors import C4forgeError
from c4forge.core.locks import lock_directory, release_all

# Start-up chatter of Apache Beam and its workers that says nothing about the user's job.
BEAM_NOISE = re.compile(
    r"apitools not found|Logging handler created|Discarding unparseable args|"
    r"No iterator is returned by the process method|Missing pipeline option|"
    r"Using default_sdk_harness_log_level|Created Worker handler|Setting up|Status HTTP server|"
    # apache-beam 2.62 without the [gcp] extra, when some google.cloud package is installed:
    # gs:// paths then fail with Beam's own "no filesystem" error when used
    r"Failed to import GCSFileSystem")


class Console:
    """How much a command says: ``quiet`` (errors and requested output only) or ``verbose``
    (libraries' own INFO logging too). Set once per command by :func:`output_options`."""

    quiet: bool = False
    verbose: bool = False
    data_on_stdout: bool = False  # --json: standard output carries the JSON alone


def say(message: str = "") -> None:
    """A line for people (progress notes, summaries); nothing under ``-q``; on standard error
    when standard output carries data (``--json``), so that ``| jq`` reads JSON alone."""
    if not Console.quiet:
        click.echo(message, err=Console.data_on_stdout)


class _NoiseFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if Console.verbose:
            return True
        message = record.getMessage()
        if BEAM_NOISE.search(message):
            return False
        # A runner logging a step's failure with the worker's traceback: the build reports it
        # as one line (corpus/chain/loop.py StepFailure); C4FORGE_DEBUG=1 shows the traceback.
        return not (record.levelno >= logging.ERROR and not os.environ.get("C4FORGE_DEBUG")
                    and "StepFailure" in message + _exception_text(record))


def _exception_text(record: logging.LogRecord) -> str:
    if record.exc_info and record.exc_info[1] is not None:
        return f"{type(record.exc_info[1]).__name__} {record.exc_info[1]}"
    return record.exc_text or ""


def configure_logging(verbose: bool) -> None:
    """Warnings and errors of every library on stderr as ``LEVEL: message``; Beam's start-up
    chatter dropped unless ``verbose``, which also shows INFO. Installed before Beam is
    imported, so Beam's import-time warning does not set up a handler of its own."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_c4forge", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler.addFilter(_NoiseFilter())
    handler._c4forge = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def lock_outputs(*paths: Optional[str]) -> None:
    """Lock the command's output directories (and files) for the life of the command."""
    for path in paths:
        if path:
            lock_directory(path)


def output_options(func):
    """``-q/--quiet`` and ``-v/--verbose`` on a command; they set :class:`Console`, logging and
    progress bars before the command runs."""
    def apply(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        setattr(Console, param.name, bool(value))
        configure_logging(Console.verbose)
        progress.configure(False if Console.quiet else None)
        return value

    func = click.option("--verbose", "-v", is_flag=True, expose_value=False, is_eager=True,
                        callback=apply, help="Also show libraries' own INFO logging "
                        "(Beam, workers).")(func)
    func = click.option("--quiet", "-q", is_flag=True, expose_value=False, is_eager=True,
                        callback=apply, help="Print only errors and the requested output; no "
                        "progress bars.")(func)
    return func


def json_option(help: str):
    """``--json`` as the ``as_json`` parameter: the command prints its result as JSON, alone on
    standard output; what :func:`say` prints goes to standard error meanwhile."""
    def apply(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        Console.data_on_stdout = bool(value)
        return value

    return click.option("--json", "as_json", is_flag=True, is_eager=True, callback=apply, help=help)


def set_option(func):
    """``--set KEY=VALUE`` (repeatable) as the ``overrides`` parameter."""
    return click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                        help="Override a setting (dotted keys; repeatable).")(func)


def check_overrides(overrides: Sequence[str]) -> list:
    """KEY=VALUE words; a word starting with ``-`` is a mistyped option, not an override."""
    bad = [o for o in overrides if o.startswith("-")]
    if bad:
        raise click.UsageError(f"no such option: {', '.join(bad)}")
    malformed = [o for o in overrides if "=" not in o]
    if malformed:
        raise click.UsageError(f"settings must be KEY=VALUE, got: {', '.join(malformed)}")
    return list(overrides)


def group(func):
    """A top-level command group with -h and --version; it resets :class:`Console` so each
    command starts from the defaults (matters when one process runs several commands)."""
    def reset_then_run(*args, **kwargs):
        Console.quiet = Console.verbose = False
        progress.configure(None)
        return func(*args, **kwargs)

    reset_then_run.__doc__ = func.__doc__
    reset_then_run.__name__ = func.__name__
    command = click.version_option(package_name="c4forge",
                                   message="%(prog)s (c4forge %(version)s)")(reset_then_run)
    return click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})(command)


class ForkSafeThread(threading.Thread):
    """A thread that holds nothing a forked copy of this process uses (it only moves bytes
    between file descriptors): pipelines/engines/workers/worker_fork.py's ``fork_hazard`` does not count it."""

    fork_safe = True


class TracebackBlocks:
    """Lines of a child process's stderr, with each Python traceback held back until it ends and
    dropped whole when it holds ``drop_if`` (a worker printing the traceback of a step's failure,
    which the build reports as one line: corpus/chain/loop.py StepFailure). Every other line, and
    every other traceback, passes through unchanged and in order."""

    _START = b"Traceback (most recent call last):"
    _CHAINED = (b"The above exception was the direct cause", b"During handling of the above exception")

    def __init__(self, drop_if: Optional[str]) -> None:
        self.drop_if = drop_if.encode() if drop_if else None
        self.block: list[bytes] = []
        self.header: list[bytes] = []  # a worker's "ERROR:logger:message" line: a traceback may follow
        self.ended = False  # the block's exception line was seen: a chain or its end comes next

    def feed(self, line: bytes) -> list[bytes]:
        if self.drop_if is None:
            return [line]
        if not self.block:
            if line.startswith(self._START):
                self.block, self.header = self.header + [line], []
                return []
            held, self.header = self.header, []
            if line.startswith(b"ERROR:"):  # logged with its traceback on the next lines
                self.header = [line]
                return held
            return held + [line]
        text = line.rstrip(b"\r\n")
        if not self.ended:
            if text and not text[:1].isspace() and not text.startswith(self._START):
                self.ended = True  # the exception line
            self.block.append(line)
            return []
        if not text or text.startswith(self._CHAINED) or text.startswith(self._START):
            self.ended = self.ended and not (text.startswith(self._CHAINED) or text.startswith(self._START))
            self.block.append(line)
            return []
        return self._flush() + self.feed(line)

    def close(self) -> list[bytes]:
        held, self.header = self.header, []
        return self._flush() + held

    def _flush(self) -> list[bytes]:
        block, self.block, self.ended = self.block, [], False
        if self.drop_if is not None and any(self.drop_if in line for line in block):
            # the blank lines that ended it belong to it
            return []
        return block


@contextlib.contextmanager
def filtered_stderr(noise: re.Pattern = BEAM_NOISE) -> Iterator[None]:
    """Drop lines matching ``noise`` from everything written to file descriptor 2 inside the
    block - this process's and its child processes' (Beam's SDK workers write their start-up
    logging there) - unless ``-v``. Other lines pass through unchanged."""
    if Console.verbose:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (embedded interpreters)
        yield
        return
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)

    def pump() -> None:
        blocks = TracebackBlocks(drop_if=None if os.environ.get("C4FORGE_DEBUG") else "StepFailure")
        with os.fdopen(read_fd, "rb") as source:
            for raw in source:
                for line in blocks.feed(raw):
                    if not noise.search(line.decode("utf-8", "replace")):
                        os.write(saved, line)
            for line in blocks.close():
                os.write(saved, line)

    thread = ForkSafeThread(target=pump, name="stderr-filter", daemon=True)
    thread.start()
    # This process's own Python-level writes (progress bars, which need "\r" and no newline)
    # go straight to the real stderr; only what children write to fd 2 is filtered.
    original = sys.stderr
    sys.stderr = open(saved, "w", buffering=1, closefd=False,  # restored below
                      encoding=getattr(original, "encoding", None) or "utf-8",
                      errors="backslashreplace")
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stderr.flush()
        sys.stderr = original
        os.dup2(saved, 2)  # closes our copy of the pipe's write end
        thread.join(timeout=2)  # child processes that still hold it end soon after
        os.close(saved)


# The extra that brings each optional module (pyproject.toml): a command that needs one of them
# in an install without it says what to install instead of a bare ModuleNotFoundError (exit 2:
# the command cannot run as installed, as with a usage error, before any work).
EXTRA_OF_MODULE = {"apache_beam": "beam", "sentencepiece": "tokenizer", "tokenizers": "tokenizer", "torch": "train",
                   "triton": "train", "tensorboard": "train", "safetensors": "train",
                   "matplotlib": "train", "transformers": "hf", "lm_eval": "hf",
                   "google": "gcp", "boto3": "aws"}


class BeamStage(NamedTuple):
    build: ModuleType
    encode: ModuleType


def beam_stage() -> BeamStage:
    """pipelines/ (``corpus build``'s build.py, ``tokenizer encode --runner``'s encode.py), loaded
    where a command runs on Beam."""
    from c4forge.pipelines import build, encode  # lazy: apache_beam (the [beam] extra), only on Beam
    return BeamStage(build, encode)


def require_extra(module: str) -> None:
    """Fail before any work, as :func:`report_error` words it, when ``module`` (one of
    EXTRA_OF_MODULE's) is not installed: for commands that would otherwise start working and only
    need it later (`corpus estimate` runs `corpus build` in child processes)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules as None: blocked
        found = False
    if not found:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)


EXIT_AFTER_INTERRUPT_S = 10.0


def exit_within(seconds: float, code: int = 130) -> None:
    """After a Ctrl-C, once the command's own clean-up has run: end the process within
    ``seconds`` even where the interpreter's shutdown would wait on a thread that does not end
    (a library's non-daemon thread blocked in a call to an engine that is going away: Python
    joins every such thread at exit, without a timeout). Exits normally if it can."""

    def end() -> None:
        time.sleep(seconds)
        with contextlib.suppress(Exception):
            sys.stderr.flush()
            sys.stdout.flush()
        os._exit(code)

    threading.Thread(target=end, name="exit-after-interrupt", daemon=True).start()


def report_error(exc: BaseException) -> Optional[int]:
    """The one translation of a failure into what the user sees: prints the line and returns the
    exit code, or None for exceptions that are not ours to explain (they propagate)."""
    if os.environ.get("C4FORGE_DEBUG"):
        return None
    missing = (exc.name or "").split(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
    if missing in EXTRA_OF_MODULE:
        extra = EXTRA_OF_MODULE[missing]
        package = "apache-beam" if missing == "apache_beam" else missing
        click.echo(f"Error: this command needs the {package} package, which the [{extra}] extra "
                   f"installs: pip install 'c4forge[{extra}]'", err=True)
        return 2
    if isinstance(exc, C4forgeError):
        click.echo(f"Error: {exc}", err=True)
        return exc.exit_code
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"Error: {where}{exc.strerror or exc}", err=True)
        return 1
    return None


class _ReportsErrors:
    """Commands and groups whose failures go through :func:`report_error` (so the CLIs, and
    click's test runner calling a group directly, show the same one line)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except (C4forgeError, OSError, ModuleNotFoundError) as exc:
            code = report_error(exc)
            if code is None:
                raise
            ctx.exit(code)
        except KeyboardInterrupt:  # Ctrl-C, after the command's own clean-up ran (its finally blocks)
            click.echo("interrupted", err=True)
            ctx.exit(130)
        finally:
            release_all()  # the output directories' locks live as long as the command


class Group(_ReportsErrors, click.Group):
    """A command group whose subcommands' failures are reported by :func:`report_error`."""


class Command(_ReportsErrors, click.Command):
    """A lone command (``python -m c4forge.cli.langid``) reported the same way."""


def guarded_main(cli: click.Command, argv: Optional[Sequence[str]], prog_name: str) -> None:
    """Run a console script. Expected failures were reported by the command itself
    (:class:`Group`); this is the net for the unexpected: one line, exit 1."""
    configure_logging(verbose=False)
    try:
        cli.main(args=argv, prog_name=prog_name, standalone_mode=True)
    except SystemExit as exc:
        if exc.code == 130:  # interrupted, reported by the command: its clean-up has run
            exit_within(EXIT_AFTER_INTERRUPT_S)
        raise
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        exit_within(EXIT_AFTER_INTERRUPT_S)
        sys.exit(130)
    except Exception as exc:  # the last line of defence, see the module docstring
        if os.environ.get("C4FORGE_DEBUG"):
            raise
        message = str(exc).strip().splitlines()
        detail = message[-1] if message else ""
        click.echo(f"Error: {type(exc).__name__}: {detail} "
                   "(set C4FORGE_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)
