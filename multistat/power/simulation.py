"""Simulation power (Card et al. 2020, Figure 2 and appendix B) with Type-M/Type-S errors.

One generic routine, :func:`simulate_power`, draws ``n_simulations`` datasets of size ``n``
from a data generator, tests each, and summarizes

* ``power``: share of simulations with ``p <= alpha`` (both directions, the textbook
  definition that matches the analytic formulas);
* ``power_correct_sign``: share significant **and** of the true sign (the definition of
  Card et al.'s notebooks and of their Likert simulations);
* ``type_m``: mean exaggeration ``|observed| / |true|`` among significant results
  (Gelman & Carlin 2014);
* ``type_s``: share of significant results with the wrong sign;
* ``mean_significant_effect``: mean observed effect among significant results;

each with its Monte Carlo standard error. Datasets are drawn in blocks of simulations,
each block from :func:`multistat.engine.block_rng` (``kind="power"``), so results are
reproducible (seed 0 is a seed) and independent of anything but the arguments; within a
block the generator and the test work on whole ``(simulations, n)`` arrays.

References
----------
Card, D. et al. (2020). With Little Power Comes Great Responsibility. EMNLP.
doi:10.18653/v1/2020.emnlp-main.745
Gelman, A., Carlin, J. (2014). Beyond Power Calculations: Assessing Type S (Sign) and
Type M (Magnitude) Errors. Perspectives on Psychological Science 9(6), 641-651.
doi:10.1177/1745691614551642
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from multistat._budget import DEFAULT_MAX_COST, check_cost
from multistat._result import Result
from multistat.engine import BLOCK_SIZE, block_bounds, block_rng
from multistat.power import _common as c
from multistat.significance._base import get_test

__all__ = ["SimulationResult", "simulate_power", "summarize", "registry_test"]


@dataclass(frozen=True)
class SimulationResult(Result):
    """Monte Carlo power and Type-M/Type-S errors of one design.

    Attributes
    ----------
    power, power_se : P(p <= alpha) and its Monte Carlo standard error
        ``sqrt(power (1 - power) / n_simulations)``.
    power_correct_sign, power_correct_sign_se : P(significant and sign correct).
    type_m, type_m_se : mean ``|observed| / |true|`` over significant simulations; SE is the
        standard deviation of that ratio over ``sqrt(n_significant)``. NaN when nothing is
        significant or the true effect is 0.
    type_s, type_s_se : share of significant simulations with the wrong sign; binomial SE
        over ``n_significant``.
    mean_significant_effect, mean_significant_effect_se : mean observed effect among the
        significant simulations.
    mean_effect : mean observed effect over all simulations (checks the generator).
    true_effect, n, alpha, n_simulations, n_significant, seed, scenario, params : design.
    """

    power: float
    power_se: float
    power_correct_sign: float
    power_correct_sign_se: float
    type_m: float
    type_m_se: float
    type_s: float
    type_s_se: float
    mean_significant_effect: float
    mean_significant_effect_se: float
    mean_effect: float
    true_effect: float
    n: Any
    alpha: float
    n_simulations: int
    n_significant: int
    seed: Any
    scenario: str = "custom"
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Flat mapping (``params`` merged in with a ``param_`` prefix)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "params"}
        out.update({f"param_{k}": v for k, v in self.params.items()})
        return out

    def to_frame(self):
        """One-row :class:`pandas.DataFrame` of :meth:`to_dict`."""

        return pd.DataFrame([self.to_dict()])


def summarize(estimates, p_values, *, true_effect: float, alpha: float, n, seed=None,
              scenario: str = "custom", params: dict | None = None) -> SimulationResult:
    """Summarize simulated estimates and p-values (one per simulation) into a result."""
    est = np.asarray(estimates, dtype=np.float64).ravel()
    p = np.asarray(p_values, dtype=np.float64).ravel()
    s = est.size
    sig = p <= alpha
    k = int(sig.sum())
    power = k / s
    nan = float("nan")
    true_sign = np.sign(true_effect)
    right = sig & (np.sign(est) == true_sign) if true_effect != 0 else np.zeros_like(sig)
    pcs = float(right.sum()) / s
    if k > 0:
        e = est[sig]
        mse = float(e.std(ddof=1) / math.sqrt(k)) if k > 1 else nan
        mean_sig = float(e.mean())
        if true_effect != 0:
            ratio = np.abs(e) / abs(true_effect)
            type_m = float(ratio.mean())
            type_m_se = float(ratio.std(ddof=1) / math.sqrt(k)) if k > 1 else nan
            type_s = float(np.mean(np.sign(e) != true_sign))
            type_s_se = math.sqrt(type_s * (1 - type_s) / k)
        else:
            type_m = type_m_se = type_s = type_s_se = nan
    else:
        mean_sig = mse = type_m = type_m_se = type_s = type_s_se = nan
    return SimulationResult(
        power=power, power_se=math.sqrt(power * (1 - power) / s),
        power_correct_sign=pcs, power_correct_sign_se=math.sqrt(pcs * (1 - pcs) / s),
        type_m=type_m, type_m_se=type_m_se, type_s=type_s, type_s_se=type_s_se,
        mean_significant_effect=mean_sig, mean_significant_effect_se=mse,
        mean_effect=float(est.mean()), true_effect=float(true_effect), n=n,
        alpha=float(alpha), n_simulations=int(s), n_significant=k, seed=seed,
        scenario=scenario, params=dict(params or {}),
    )


def simulate_power(generator: Callable[[np.random.Generator, int, Any], Any],
                   test: Callable[..., tuple[np.ndarray, np.ndarray]], *, n, true_effect: float,
                   n_simulations: int = 1000, alpha: float = 0.05, seed=0,
                   scenario: str = "custom", params: dict | None = None,
                   block_size: int = BLOCK_SIZE, cost_per_simulation: float | None = None,
                   max_cost: float | None = DEFAULT_MAX_COST) -> SimulationResult:
    """Generic simulation power analysis (Card et al. 2020, Figure 2 + appendix B).

    Parameters
    ----------
    generator : callable ``(rng, size, n) -> data``
        Draws ``size`` simulated datasets of size ``n`` at once (e.g. an array
        ``(size, n)`` or a tuple of such arrays).
    test : callable ``(data, rng) -> (estimates, p_values)``
        Tests every dataset of the block; both outputs have shape ``(size,)``. ``rng`` is
        the block's generator (for randomization tests).
    n : int or any
        Size passed to the generator (anything the generator understands).
    true_effect : float
        The effect the generator was set up with, on the scale of ``estimates``.
    n_simulations : int
    alpha : float in (0, 1)
    seed : int >= 0 or numpy.random.SeedSequence
    scenario : str
        Name mixed into the random streams and stored in the result.
    block_size : int
        Simulations per block (part of the reproducibility contract of a scenario).
    cost_per_simulation : float, optional
        Elementary operations one simulated study costs (the built-in scenarios state
        theirs, e.g. ``n x n_permutations``); default ``n`` when it is a number, else 1.
    max_cost : float or None
        Refuse up front, before any simulation, when ``n_simulations x
        cost_per_simulation`` exceeds it (the limit ``compare`` has,
        :data:`multistat._budget.DEFAULT_MAX_COST`); None: no limit.

    Returns
    -------
    SimulationResult
    """
    n_simulations = c.integer("n_simulations", n_simulations, minimum=2)
    alpha = c.open_unit("alpha", alpha)
    true_effect = c.real("true_effect", true_effect)
    if cost_per_simulation is None:
        cost_per_simulation = float(n) if isinstance(n, (int, float)) else 1.0
    # before anything is drawn: 1e12 simulations once grew to 16 GiB before failing
    check_cost(float(n_simulations) * max(float(cost_per_simulation), 1.0), max_cost,
               what=f"{n_simulations:,} simulations of the {scenario} scenario")
    ests, ps = [], []
    for b, (start, stop) in enumerate(block_bounds(n_simulations, block_size)):
        rng = block_rng(seed, f"simulation:{scenario}", "power", b)
        data = generator(rng, stop - start, n)
        est, p = test(data, rng)
        ests.append(np.asarray(est, dtype=np.float64).reshape(-1))
        ps.append(np.asarray(p, dtype=np.float64).reshape(-1))
    return summarize(np.concatenate(ests), np.concatenate(ps), true_effect=true_effect,
                     alpha=alpha, n=n, seed=seed if isinstance(seed, int) else str(seed),
                     scenario=scenario, params=params)


def registry_test(name: str, *, alternative: str = "two-sided", **options):
    """A ``test`` for :func:`simulate_power` from a registered significance test.

    The data must be a pair ``(x, y)`` of ``(size, n)`` arrays (or one array of
    differences, compared with zeros); the registered function is called once per block,
    vectorized over the simulations, and its ``estimate`` and ``p_value`` are returned.
    """

    spec = get_test(name)

    def test(data, rng):
        if isinstance(data, tuple):
            x, y = data
        else:
            x, y = data, np.zeros_like(data)
        res = spec.func(x, y, alternative=alternative, **options)
        return np.asarray(res.estimate), np.asarray(res.p_value)

    return test
