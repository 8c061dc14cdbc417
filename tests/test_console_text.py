"""The CLI's console prints users' text as written: no Rich markup in names, grid values or causes."""

from __future__ import annotations

import io

from rich.table import Table

from mjsweep.ui.console_tables import make_console


def test_a_cause_with_a_bracketed_list_keeps_it_in_a_table_and_a_line(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr("sys.stdout", screen)
    out = make_console()
    cause = "BROKEN: non-finite observation (to train anyway: warn_only: [nan_obs, energy])"
    table = Table()
    table.add_column("verdict")
    table.add_row(cause)
    out.print(table)
    out.print(f"failed: walker-s0: {cause}")
    printed = screen.getvalue()
    assert printed.count("[nan_obs, energy]") == 2, printed
