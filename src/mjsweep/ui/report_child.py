"""`sweep run`'s final report.html build, started before the sweep ends (engine/livereport.py):
`python -m mjsweep.ui.report_child report SWEEP_DIR --format html` imports what that command needs (the
report, its SVG figures, the app; no matplotlib, which the report no longer draws with) while runs still
train, then waits for one line on stdin. `go` builds the report as `sweep report SWEEP_DIR --format html`
does and exits at once with its exit code; anything else (the pipe closed: the launcher left without a final
build) ends it having built nothing."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def main() -> None:
    # What the build imports, loaded now, off the sweep's path.
    import numpy.random  # noqa: F401

    from .. import svgplot  # noqa: F401
    from ..api import report_object  # noqa: F401
    from ..results import compare, sweepreport  # noqa: F401
    from ..search import pbtreport, ranking  # noqa: F401
    from . import cli, decision_figures, html_report, report_figures, report_view, status  # noqa: F401

    if sys.stdin.readline().strip() != "go":
        return
    sys.argv = ["sweep", *sys.argv[1:]]
    code = exit_code(cli.main)
    # Every file the build wrote is synced and closed: leave without the interpreter's teardown of each
    # module, which takes about as long as the build itself and which the sweep would wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_code(command: Callable[[], None]) -> int:
    """The exit code `command` ends with, as the interpreter would make it of a SystemExit."""
    try:
        command()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    main()
