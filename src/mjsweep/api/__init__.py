"""The Python API notebooks use: a sweep folder read back (`load`), a sweep run or checked from Python (`run`,
`validate`), and a trained run's policy ready to act. docs/api.md has examples.

It returns the objects `sweep report` renders (results/sweepreport.py) and runs sweeps on the path `sweep run`
takes (engine.sweep.prepare and execute); torch and SB3 are imported only when a policy is loaded, pandas
only for a DataFrame."""

from __future__ import annotations

from .options import Backend, Order, RunOptions, StartWith
from .policy import Policy
from .running import PlanSummary, SweepFailed, run, validate
from .sweep_records import CurvePoint, Run, Sweep, load

__all__ = ["Backend", "CurvePoint", "Order", "PlanSummary", "Policy", "Run", "RunOptions", "StartWith", "Sweep",
           "SweepFailed", "load", "run", "validate"]
