"""How the command line parses and fails: the durations its options take, and every bad input as the one
`error: ...` line on stderr: a command's InputError (exit 2) or OSError (exit 1), and typer's parsing errors (a
value of the wrong type, out of range, not among the choices, a missing value, an unknown option: exit 2),
caught here rather than drawn as click's boxed usage panel."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer import Abort, BadParameter
from typer.core import TyperGroup

from ..errors import InputError, os_words
from . import console_tables as tables

EXIT_FAILED = 1
EXIT_INVALID = 2


def _click_base(name: str) -> type[Exception]:
    """click's exception class `name` among typer's public BadParameter's bases: typer depends on click before
    0.26 and vendors it since, so no one import path names these classes in every version the bounds allow."""
    return next(cls for cls in BadParameter.__mro__ if cls.__name__ == name)


ClickException: Any = _click_base("ClickException")  # Any: mypy takes neither as a type
UsageError: Any = _click_base("UsageError")


def _is_a(exc: BaseException, name: str) -> bool:
    """Whether `exc` is of click's class `name` (MissingParameter, NoArgsIsHelpError: subclasses of the
    bases above, so not reachable from them; NoArgsIsHelpError is new in click 8.2)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


NOT_ONE_OF = re.compile(r"is not one of (.*?)\.?$")


class Commands(TyperGroup):
    """Every command's InputError, and every bad option or argument typer finds, becomes one `error: ...` line
    on stderr and exit 2."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        given = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(given, prog_name, complete_var, standalone_mode=False, **extra)
        except ClickException as exc:
            if usage_exit(exc):
                tables.error(usage_line(exc, given))
            else:
                exc.show()
            code = exc.exit_code
        except Abort:
            print("Aborted!", file=sys.stderr)
            code = EXIT_FAILED
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: Any) -> Any:  # typer's vendored click.Context
        try:
            return super().invoke(ctx)
        except InputError as exc:
            tables.error(str(exc))
            raise typer.Exit(EXIT_INVALID) from None
        except OSError as exc:  # a filesystem error no earlier check turned into its own line: one line still
            where = f"{exc.filename}: " if exc.filename is not None else ""
            tables.error(f"{where}{os_words(exc)}")
            raise typer.Exit(EXIT_FAILED) from None


def usage_line(exc: Any, args: Sequence[str]) -> str:
    """The line after `error: ` for a parsing error; `args` is the command line it came from, where the value
    a BadParameter refused is found (the error itself does not always carry it)."""
    if isinstance(exc, BadParameter) and not _is_a(exc, "MissingParameter") and exc.param is not None:
        hint = exc.param_hint if isinstance(exc.param_hint, str) else _hint(exc.param.opts)
        value = given(args, exc.param.opts, exc.param.envvar)
        shown = f" {value!r}" if value is not None else ""
        return f"{hint}{shown}: {_reason(exc.message)}"
    text = " ".join(exc.format_message().split())  # click's own words, on one line
    return text[:1].lower() + text[1:]


def usage_exit(exc: Exception) -> bool:
    """Whether `exc` is a usage error said in one line (no arguments at all shows the help instead)."""
    return isinstance(exc, UsageError) and not _is_a(exc, "NoArgsIsHelpError")


def given(args: Sequence[str], opts: Sequence[str], envvar: str | Sequence[str] | None = None) -> str | None:
    """The last value the command line gives one of `opts` (`--opt VALUE`, `--opt=VALUE`), else the option's
    environment variable's, else None."""
    value = None
    for i, arg in enumerate(args):
        name, eq, attached = arg.partition("=")
        if name in opts:
            value = attached if eq else (args[i + 1] if i + 1 < len(args) else None)
    if value is None and envvar:
        for var in [envvar] if isinstance(envvar, str) else envvar:
            value = os.environ.get(var, value)
    return value


def _hint(opts: Sequence[str]) -> str:
    return max(opts, key=len) if opts else "argument"


def _reason(message: str) -> str:
    """click's and pydantic's words for why, as the rest of the line: the choices said as `expected a, b or c`,
    no `Value error,` prefix, lower case."""
    text = " ".join(message.split()).removeprefix("Value error, ")
    choices = NOT_ONE_OF.search(text)
    if choices:
        names = [c.strip().strip("'") for c in choices.group(1).split(",")]
        return "expected " + (f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0])
    return text[:1].lower() + text[1:]
