"""The console scripts `sweep` and `mjsweep`. Before the command line's own imports, `sweep run` starts
the template process that its runs will be forked from (launchers.prestart_template); cli parses the
command line and adopts it."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        from ..launchers import prestart_template

        prestart_template(sys.argv[2:])
    from .cli import main as cli_main

    cli_main()
