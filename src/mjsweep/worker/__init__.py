"""One training run, in its own process: `python -m mjsweep.worker RUN_DIR`."""
