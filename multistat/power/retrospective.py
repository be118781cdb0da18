"""Retrospective power curves for any registered test (NLPStatTest manual, section 3.4 and
appendix F.2, Algorithms 3 and 4).

At each sample size of a grid, ``n_simulations`` datasets of that size are drawn as one
``(n_simulations, n)`` array of differences and tested with **one** call of the registered
test function (which is vectorized over leading axes); power is the share of p-values
``<= alpha``.

* ``method="normal"`` (Algorithm 3): differences ~ ``Normal(delta, sd)``, ``sd`` from the
  data (``ddof=1``) unless given.
* ``method="bootstrap"`` (Algorithm 4): differences resampled with replacement from the
  empirical differences **shifted** so that their location (mean, or median for median
  tests) equals the hypothesised ``delta``. Without the shift the curve describes the
  observed effect, not ``delta``: at ``delta = 0`` it would report power far above
  ``alpha`` whenever the sample shows an effect (``shift=False`` exists only to show that).

References
----------
NLPStatTest user's manual (Zhu et al. 2020), appendix F.2.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd

from multistat.engine import block_rng
from multistat.errors import PowerParameterError
from multistat.power import _common as c
from multistat.significance import get_test

__all__ = ["power_curve", "default_sample_sizes"]

#: how the curve's power is estimated: resampled (shifted to delta) or the normal formula
CURVE_METHODS = ("bootstrap", "normal")
_MAX_CELLS = 20_000_000  # doubles per test call (160 MB); larger grids go in blocks


def default_sample_sizes(n_total: int, n_points: int = 5) -> list[int]:
    """The manual's grid: ``n_total * j / n_points`` for ``j = 1..n_points`` (rounded,
    at least 2, unique) -- e.g. 100 units and 5 points give 20, 40, 60, 80, 100."""
    n_total = c.integer("n_total", n_total, minimum=2)
    n_points = c.integer("n_points", n_points, minimum=1)
    sizes = sorted({max(2, int(round(n_total * j / n_points))) for j in range(1, n_points + 1)})
    return sizes


def power_curve(x=None, y=None, *, delta, method="bootstrap", test="t", sample_sizes=None,
                n_points=5, n_simulations=1000, alpha=0.05, alternative="two-sided", seed=0,
                sd=None, shift=True, test_options=None):
    """Power of a registered test as a function of the sample size.

    Parameters
    ----------
    x, y : array_like (n,) or None
        Paired scores of systems a and b (or ``x`` alone: the differences ``a - b``).
        Optional for ``method="normal"`` when ``sd`` and ``sample_sizes`` are given.
    delta : float
        Hypothesised true difference (mean, or median for median tests) in metric units.
        Required: post-hoc power at the observed effect is only a transform of the
        p-value (Card et al. 2020, appendix A).
    method : {"bootstrap", "normal"}
        Algorithm 4 (empirical differences shifted to ``delta``) or Algorithm 3.
    test : str
        Name in the test registry (``"t"``, ``"wilcoxon"``, ``"sign"``, ``"bootstrap"``,
        ...); called as ``get_test(test).func(D, zeros, alternative=..., **test_options)``.
    sample_sizes : sequence of int or None
        Grid; default :func:`default_sample_sizes` of the data size and ``n_points``.
    n_simulations : int
        Simulated datasets per sample size.
    alpha : float in (0, 1)
    alternative : {"two-sided", "greater", "less"}
    seed : int >= 0
        One generator per sample size from :func:`multistat.engine.block_rng`.
    sd : float or None
        Standard deviation of the differences for ``method="normal"``.
    shift : bool
        Bootstrap only. ``False`` skips the shift (wrong; for comparison only).
    test_options : dict or None
        Extra keywords for the test (e.g. ``n_resamples`` and ``seed`` of resampling
        tests).

    Returns
    -------
    pandas.DataFrame
        One row per sample size: ``n, power, power_se`` (binomial Monte Carlo standard
        error), ``n_simulations, method, test, delta, alpha, alternative, seed``.
    """

    method = c.choice("method", method, CURVE_METHODS)
    alternative = c.alternative(alternative)
    alpha = c.open_unit("alpha", alpha)
    delta = c.real("delta", delta)
    n_simulations = c.integer("n_simulations", n_simulations, minimum=1)
    spec = get_test(test)
    options = dict(test_options or {})

    d = None
    if x is not None:
        x = np.asarray(x, dtype=np.float64)
        d = x - np.asarray(y, dtype=np.float64) if y is not None else x
        if d.ndim != 1 or d.size < 2:
            raise PowerParameterError(
                f"`x`/`y` must be 1-d with at least 2 paired values; got shape {d.shape}")
        if not np.all(np.isfinite(d)):
            raise PowerParameterError("`x`/`y` contain NaN or infinite values; drop them first")
    elif method == "bootstrap":
        raise PowerParameterError("method='bootstrap' needs the observed scores `x` (and `y`)")

    if sample_sizes is None:
        if d is None:
            raise PowerParameterError("give `sample_sizes` when no data are given")
        sample_sizes = default_sample_sizes(d.size, n_points)
    sizes = [c.integer("sample_sizes", m, minimum=2) for m in np.atleast_1d(sample_sizes)]

    if method == "normal":
        if sd is None:
            if d is None:
                raise PowerParameterError("method='normal' needs `sd` or data to estimate it")
            sd = float(np.std(d, ddof=1))
        sd = c.positive("sd", sd)
        pool = None
    else:
        kind = spec.statistic_kinds[0]
        centre = float(np.median(d)) if kind == "median" else float(np.mean(d))
        pool = d - centre + delta if shift else d.copy()

    rows = []
    for j, m in enumerate(sizes):
        rng = block_rng(seed, f"power_curve:{method}", "power", j)
        step = max(1, min(n_simulations, _MAX_CELLS // m))  # normally one call per size
        pvals = []
        for start in range(0, n_simulations, step):
            size = min(step, n_simulations - start)
            if pool is None:
                sim = rng.normal(delta, sd, size=(size, m))
            else:
                sim = pool[rng.integers(0, pool.size, size=(size, m))]
            res = spec.func(sim, np.zeros_like(sim), alternative=alternative,
                            **_p_value_only(spec.func), **options)
            pvals.append(np.asarray(res.p_value, dtype=np.float64).reshape(-1))
        p = np.concatenate(pvals)
        power = float(np.mean(p <= alpha))
        rows.append({
            "n": m, "power": power,
            "power_se": math.sqrt(power * (1 - power) / p.size),
            "n_simulations": int(p.size), "method": method, "test": spec.name,
            "delta": delta, "alpha": alpha, "alternative": alternative, "seed": seed,
        })
    return pd.DataFrame(rows)


def _p_value_only(func) -> dict:
    """Keywords that skip a test's confidence interval when only p-values are needed.

    The power simulation uses p-values alone; the Wilcoxon test's interval on tied
    (bootstrap-resampled) data is an exact inversion scan that costs far more than the
    test itself, so it is skipped when the test function offers that (``_interval``).
    """

    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return {}
    return {"_interval": False} if "_interval" in params else {}

