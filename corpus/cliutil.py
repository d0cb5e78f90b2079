"""What every c4forge console script shares: no Python traceback for anything a user can cause.

Expected failures are ``click.ClickException`` raised by the commands with a specific message.
This guard is the net under them: an exception nobody anticipated (disk full, a permission
error, a broken file deep inside a library) becomes one line naming its type and message, exit
status 1, unless ``C4FORGE_DEBUG=1`` asks for the traceback.
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import click


def guarded_main(cli: click.Group, argv: Optional[Sequence[str]], prog_name: str) -> None:
    try:
        cli.main(args=argv, prog_name=prog_name, standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence, see the module docstring
        if os.environ.get("C4FORGE_DEBUG"):
            raise
        message = str(exc).strip().splitlines()
        detail = message[-1] if message else ""
        if isinstance(exc, OSError) and exc.strerror:
            detail = f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
        click.echo(f"Error: {type(exc).__name__}: {detail} "
                   "(set C4FORGE_DEBUG=1 for the traceback)", err=True)
        sys.exit(1)
