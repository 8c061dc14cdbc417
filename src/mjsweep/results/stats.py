"""Statistics over seeds: mean, std, interquartile mean, percentile-bootstrap confidence intervals.

Pure functions of their inputs. The bootstrap draws from a generator seeded by the caller (default 0),
so the same returns always give the same interval, in every report and plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 10_000


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    std: float
    """Sample standard deviation (ddof=1); 0 with a single value."""
    iqm: float
    """Interquartile mean: the mean of the middle half, robust to one lucky or broken seed."""
    ci_low: float
    ci_high: float
    """Percentile-bootstrap 95% confidence interval of the mean."""


def iqm(values: Sequence[float]) -> float:
    """Mean after dropping floor(n/4) values at each end (with fewer than 4 values: the mean)."""
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValueError("iqm of no values")
    cut = x.size // 4
    return float(x[cut:x.size - cut].mean())


def bootstrap_ci(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                 resamples: int = RESAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap interval of the mean over axis 0 (seeds); one interval per later index.

    A single value has the degenerate interval [value, value].
    """
    x = np.asarray(values, dtype=float)
    if x.shape[0] == 0:
        raise ValueError("bootstrap of no values")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.shape[0], size=(resamples, x.shape[0]))
    stats = x[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail], axis=0)
    return low, high


def summarize(values: Sequence[float], seed: int = 0) -> Summary:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("summary of no values")
    low, high = bootstrap_ci(x, seed=seed)
    return Summary(n=int(x.size), mean=float(x.mean()), std=float(x.std(ddof=1)) if x.size > 1 else 0.0,
                   iqm=iqm(x.tolist()), ci_low=float(low), ci_high=float(high))


def mean_over_span(timesteps: Sequence[float], returns: Sequence[float]) -> float | None:
    """The area under a curve of returns over timesteps (trapezoids) divided by the timesteps' span: the mean
    return over training, a summary that an unlucky last evaluation does not decide. A lone point, or a span
    of zero: the last value. None without points."""
    if len(timesteps) == 0:
        return None
    span = timesteps[-1] - timesteps[0]
    if len(timesteps) < 2 or span <= 0:
        return float(returns[-1])
    area = sum((timesteps[i + 1] - timesteps[i]) * (returns[i] + returns[i + 1]) / 2 for i in range(len(timesteps) - 1))
    return float(area / span)
