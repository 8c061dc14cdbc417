"""`python -m mjsweep.worker RUN_DIR`: the launchers, and SLURM arrays already queued, start runs by this name."""

import sys

from .main import main

sys.exit(main())
