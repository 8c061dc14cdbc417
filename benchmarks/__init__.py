"""The developers' lab: simulations and benchmarks that back the figures in BENCHMARKS.md and docs/statistics.md.

Not part of the installed package (only src/ is packaged). Run each from a checkout's root, where mjsweep is
installed in the venv: `python -m benchmarks.ceiling`, `python -m benchmarks.coverage`,
`python -m benchmarks.stepsaving`. tests/ imports it from there too (pyproject's pytest `pythonpath`).
"""
