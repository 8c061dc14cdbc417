"""Statistics over seeds: mean, std and the mean's Student's t interval, the interquartile mean with its
trimmed-mean t interval, Yuen's interval of a difference of IQMs, the probability of improvement, performance
profiles with exact bands. The estimates are rliable's (Agarwal et al. 2021); its stratified-bootstrap
intervals (`iqm_interval`, `improvement_interval`, `bootstrap_ci`) stay as the yardstick that the coverage
bench and the tests set the reports' intervals beside: at a few seeds they hold far less than 95%.

Pure functions of their inputs. The bootstrap draws from a generator seeded by the caller (default 0),
so the same returns always give the same interval, in every report and plot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

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
    """Student's t 95% confidence interval of the mean (mean_interval); [value, value] for one value."""


def iqm(values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray) -> float:
    """Mean after dropping floor(n/4) values at each end (with fewer than 4 values: the mean); over every run
    and task of a runs x tasks array, as rliable's aggregate_iqm. Not scipy.stats.trim_mean (the same slice):
    importing scipy.stats would add about 0.35 s to every report build, which needs only scipy.special."""
    x = np.sort(np.asarray(values, dtype=float).reshape(-1))
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
    return _percentiles(x[idx].mean(axis=1), confidence)


@lru_cache(maxsize=256)
def t_quantile(confidence: float, df: int) -> float:
    """The t with P(|T| <= t) = confidence for Student's t with `df` degrees of freedom (cached: a report asks
    for the same few hundred times)."""
    from scipy.special import stdtrit  # Student's t quantile: scipy.stats.t.ppf without its checks

    return float(stdtrit(df, 0.5 + confidence / 2))


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student's t interval of the mean over seeds: mean +- t(n - 1) s / sqrt(n). Exact for normal returns at
    every seed count, where a percentile bootstrap of 2 to 5 seeds holds the mean in about 50-83% of sweeps
    (`python -m benchmarks.coverage --table mean`); [value, value] for a single value."""
    low, high = mean_band(np.asarray(values, dtype=float)[:, None], confidence)
    return float(low[0]), float(high[0])


def iqm_t_interval(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The IQM's interval over seeds by Tukey and McLaughlin (1963): IQM +- t(h - 1) sqrt(d), with d and h as in
    Yuen's interval below (the IQM is the 25%-trimmed mean). Under 4 seeds nothing is trimmed and it is the
    mean's t interval; [value, value] for a single value. Where rliable's stratified bootstrap (`iqm_interval`)
    held the interquartile mean in about half of simulated groups of 2 seeds, this holds it in 93-96% of groups
    of 2-20 seeds with symmetric returns (`python -m benchmarks.coverage --table iqm`)."""
    x = np.sort(np.asarray(values, dtype=float))
    middle = iqm(x)
    if x.size < 2:
        return middle, middle
    d, h = _trimmed_variance(x)
    half = t_quantile(confidence, h - 1) * math.sqrt(d)
    return middle - half, middle + half


def iqm_difference_interval(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
                            ) -> tuple[float, float] | None:
    """Yuen's interval of IQM(A) - IQM(B), each side's seeds apart: the difference of the 25%-trimmed means
    (floor(n/4) seeds dropped at each end, as `iqm`) +- t * sqrt(d_a + d_b), where d = (n - 1) s_w^2 / (h (h - 1))
    estimates a trimmed mean's variance from the winsorized variance s_w^2 of its h = n - 2 floor(n/4) kept
    seeds, and t has Welch's degrees of freedom, rounded down (Yuen 1974; scipy's ttest_ind with trim=0.25).
    A side of one seed (its return untrimmed) has no spread of its own: its variance is the other side's
    sample variance, which holds where both sides train one configuration, and t has that side's n - 1 degrees
    of freedom. None when neither side has two seeds."""
    x, y = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    if min(x.size, y.size) == 0 or max(x.size, y.size) < 2:
        return None
    difference = iqm(x) - iqm(y)
    if x.size == 1 or y.size == 1:
        many = y if x.size == 1 else x
        d, _ = _trimmed_variance(many)
        se, df = math.sqrt(float(many.var(ddof=1)) + d), many.size - 1
    else:
        (d_x, h_x), (d_y, h_y) = _trimmed_variance(x), _trimmed_variance(y)
        se = math.sqrt(d_x + d_y)
        df = max(1, math.floor((d_x + d_y) ** 2 / (d_x ** 2 / (h_x - 1) + d_y ** 2 / (h_y - 1)))) if se > 0 else 1
    half = t_quantile(confidence, df) * se
    return difference - half, difference + half


def _trimmed_variance(sorted_values: np.ndarray) -> tuple[float, int]:
    """(d, h) of Yuen's interval for one side's sorted seeds (at least two). Winsorized here, not by
    scipy.stats.mstats.winsorize, for the import time that `iqm` names."""
    n = sorted_values.size
    g = n // 4
    h = n - 2 * g
    winsorized = np.clip(sorted_values, sorted_values[g], sorted_values[n - g - 1])
    return float((n - 1) * winsorized.var(ddof=1) / (h * (h - 1))), h


def mean_band(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of the mean of each column of seeds x points, mean +- t(n - 1) s / sqrt(n): a
    learning curve's band, one per timestep (`mean_interval` is one column); the mean itself with one seed."""
    x = np.asarray(values, dtype=float)
    mean = x.mean(axis=0)
    if x.shape[0] < 2:
        return mean, mean.copy()
    half = t_quantile(confidence, x.shape[0] - 1) * x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
    return mean - half, mean + half


def summarize(values: Sequence[float]) -> Summary:
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("summary of no values")
    low, high = mean_interval(x)
    return Summary(n=int(x.size), mean=float(x.mean()), std=float(x.std(ddof=1)) if x.size > 1 else 0.0,
                   iqm=iqm(x.tolist()), ci_low=float(low), ci_high=float(high))


def _scores(values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Scores as rliable holds them: runs x tasks. A flat list is one task (a group's seeds on its robot)."""
    x = np.asarray(values, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError("scores must be runs x tasks, with at least one run")
    return x


def trimmed_iqm(resamples: np.ndarray) -> np.ndarray:
    """The IQM of each resample (axis 0) over all its runs and tasks, as rliable's aggregate_iqm:
    scipy.stats.trim_mean(scores, 0.25, axis=None), which drops int(n / 4) scores at each end (by hand, as
    `iqm`, which it must equal)."""
    flat = np.sort(resamples.reshape(resamples.shape[0], -1), axis=1)
    cut = flat.shape[1] // 4
    return flat[:, cut:flat.shape[1] - cut].mean(axis=1)


def _stratified(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """resamples x runs x tasks: each task's runs drawn with replacement from that task's runs alone
    (rliable's StratifiedBootstrap), so every resample keeps the tasks' weights."""
    runs, tasks = x.shape
    idx = rng.integers(0, runs, size=(resamples, runs, tasks))
    return x[idx, np.arange(tasks)]


def _percentiles(stats: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of resampled statistics (axis 0: the resamples), one per later index."""
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail], axis=0)
    return low, high


def _percentile_interval(stats: np.ndarray, confidence: float) -> tuple[float, float]:
    low, high = _percentiles(stats, confidence)
    return float(low), float(high)


def iqm_interval(values: Sequence[float] | Sequence[Sequence[float]] | np.ndarray, confidence: float = CONFIDENCE,
                 resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The IQM's percentile interval over stratified-bootstrap resamples of the runs (Agarwal et al. 2021,
    "Deep RL at the edge of the statistical precipice"; rliable's get_interval_estimates)."""
    x = _scores(values)
    return _percentile_interval(trimmed_iqm(_stratified(x, np.random.default_rng(seed), resamples)), confidence)


def probability_of_improvement(x: Sequence[float] | Sequence[Sequence[float]],
                               y: Sequence[float] | Sequence[Sequence[float]]) -> float:
    """P(X > Y): the chance that a run of X beats a run of Y, ties counting half, averaged over tasks
    (rliable's probability_of_improvement: the Mann-Whitney U statistic of each task over m x n)."""
    return float(improvements(_scores(x)[None], _scores(y)[None])[0])


def improvements(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) of each row (a resample, or a simulated sweep): x is rows x m x tasks, y rows x n x tasks."""
    greater = (x[:, :, None, :] > y[:, None, :, :]).mean(axis=(1, 2))
    ties = (x[:, :, None, :] == y[:, None, :, :]).mean(axis=(1, 2))
    return (greater + 0.5 * ties).mean(axis=1)


def improvement_interval(x: Sequence[float] | Sequence[Sequence[float]],
                         y: Sequence[float] | Sequence[Sequence[float]], confidence: float = CONFIDENCE,
                         resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """P(X > Y)'s percentile interval, X's and Y's runs resampled independently, each task apart
    (rliable's StratifiedIndependentBootstrap)."""
    rng = np.random.default_rng(seed)
    a, b = _scores(x), _scores(y)
    if a.shape[1] != b.shape[1]:
        raise ValueError("X and Y must have the same tasks")
    return _percentile_interval(improvements(_stratified(a, rng, resamples), _stratified(b, rng, resamples)),
                                confidence)


def performance_profile(values: Sequence[float] | Sequence[Sequence[float]], taus: Sequence[float],
                        confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fraction of runs that score above each tau (strictly: rliable's run-score distribution), and its
    Clopper-Pearson interval: (fractions, lows, highs). rliable's stratified bootstrap band said [1, 1] wherever
    every one of a few seeds was above tau; this one is exact, at least `confidence` for every true fraction."""
    x, t = _scores(values), np.asarray(taus, dtype=float)
    runs = x.size
    above = (x.reshape(-1)[None, :] > t[:, None]).sum(axis=1)
    bounds = np.array([clopper_pearson(int(k), runs, confidence) for k in above]).reshape(-1, 2)
    return above / runs, bounds[:, 0], bounds[:, 1]


@lru_cache(maxsize=4096)
def clopper_pearson(hits: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper and Pearson 1934) interval of a proportion seen as hits of n: the fractions p for
    which neither tail of Binomial(n, p) at `hits` is below (1 - confidence) / 2, which are beta quantiles.
    Its coverage is at least `confidence` whatever the true p (tests/test_statistics.py counts it exactly)."""
    from scipy.special import betaincinv  # the beta quantile: scipy.stats.beta.ppf without its checks

    tail = (1.0 - confidence) / 2
    low = 0.0 if hits == 0 else float(betaincinv(hits, n - hits + 1, tail))
    high = 1.0 if hits == n else float(betaincinv(hits + 1, n - hits, 1.0 - tail))
    return low, high


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
