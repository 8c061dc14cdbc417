"""The command line: typer commands, terminal tables, the live view, figures and the HTML report."""
