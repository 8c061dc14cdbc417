"""A bad option, argument or command as the one `error: ...` line every other bad input gets, exit 2: typer's
parsing errors (a value of the wrong type, out of range, not among the choices, a missing value, an unknown
option) are caught here rather than drawn as click's boxed usage panel."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from typer._click.exceptions import BadParameter, ClickException, MissingParameter, NoArgsIsHelpError, UsageError

NOT_ONE_OF = re.compile(r"is not one of (.*?)\.?$")


def usage_line(exc: ClickException, args: Sequence[str]) -> str:
    """The line after `error: ` for a parsing error; `args` is the command line it came from, where the value
    a BadParameter refused is found (the error itself does not always carry it)."""
    if isinstance(exc, BadParameter) and not isinstance(exc, MissingParameter) and exc.param is not None:
        hint = exc.param_hint if isinstance(exc.param_hint, str) else _hint(exc.param.opts)
        value = given(args, exc.param.opts, exc.param.envvar)
        shown = f" {value!r}" if value is not None else ""
        return f"{hint}{shown}: {_reason(exc.message)}"
    text = " ".join(exc.format_message().split())  # click's own words, on one line
    return text[:1].lower() + text[1:]


def usage_exit(exc: ClickException) -> bool:
    """Whether `exc` is a usage error said in one line (no arguments at all shows the help instead)."""
    return isinstance(exc, UsageError) and not isinstance(exc, NoArgsIsHelpError)


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
