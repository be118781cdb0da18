"""Agreement between raters: Krippendorff's alpha, with a seeded bootstrap over units.

Krippendorff's alpha compares the disagreement observed within units with the
disagreement expected by chance over all pairable values:

.. math::

    \\alpha = 1 - \\frac{D_o}{D_e}
          = 1 - (n - 1)\\,\\frac{\\sum_u \\frac{1}{m_u - 1}\\sum_{i \\ne j \\in u}
            \\delta^2(x_i, x_j)}{\\sum_{c}\\sum_{k} n_c n_k\\, \\delta^2(c, k)}

where ``m_u`` is the number of values in unit ``u`` (units with fewer than two are not
pairable and are left out), ``n`` the number of pairable values and ``n_c`` how many of
them equal ``c``. The metric ``delta^2`` is the level of measurement:

* ``nominal``: 0 for equal values, 1 otherwise;
* ``interval``: ``(c - k)^2``;
* ``ratio``: ``((c - k) / (c + k))^2`` (values must be non-negative; 0 for ``c = k = 0``);
* ``ordinal``: ``(M_k - M_c)^2`` with ``M_c = (number of values below c) + n_c / 2``, the
  mid-position of ``c`` among the pairable values -- Krippendorff's ordinal metric
  ``(sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2`` rewritten, so ordinal alpha is interval alpha
  on these positions.

Written here rather than taken from the ``krippendorff`` package (whose values the tests
reproduce) because the bootstrap needs every quantity as a sum over units: a resample is
then a row of unit counts from the engine's shared plans (:mod:`multistat.engine`),
and all resamples of a block are a few matrix products, with no loop over resamples.
The interval metric uses within-unit centred sums of squares (shift-free); the ordinal
positions are exact half-integers, so its sums are exact.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from multistat._result import Result
from multistat._validation import (
    CONFIDENCE_LEVEL,
    SEED,
    checked,
    choice,
    integer,
)
from multistat.engine import plan_blocks
from multistat.errors import DataValidationError, ParameterError

if TYPE_CHECKING:  # annotations only: pandas loads when a study is read
    import pandas as pd

LEVELS = ("nominal", "ordinal", "interval", "ratio")
#: the plan name of the unit bootstrap (its own stream of the engine's seeded plans)
PLAN_DATASET = "krippendorff-alpha"


@dataclass(frozen=True)
class KrippendorffResult(Result):
    """Krippendorff's alpha of one raters x units table.

    Attributes
    ----------
    alpha : float
        The point estimate (NaN when every pairable value is equal: no expected
        disagreement).
    level : str
    ci_low, ci_high : float
        Percentile interval of the bootstrap over units at ``confidence_level`` (NaN
        without resamples).
    confidence_level : float
    n_units : int
        Pairable units (two values or more).
    n_values : int
        Pairable values.
    n_raters : int
    n_resamples, seed
        The bootstrap; ``n_undefined`` resamples had no expected disagreement and are
        left out of the interval.
    """

    alpha: float
    level: str
    ci_low: float
    ci_high: float
    confidence_level: float
    n_units: int
    n_values: int
    n_raters: int
    n_resamples: int
    seed: int
    n_undefined: int = 0

    def confidence_interval(self) -> tuple[float, float]:
        return (self.ci_low, self.ci_high)

    def to_dict(self) -> dict:
        return {"alpha": self.alpha, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "confidence_level": self.confidence_level, "level": self.level,
                "n_units": self.n_units, "n_values": self.n_values,
                "n_raters": self.n_raters, "n_resamples": self.n_resamples,
                "seed": self.seed}


def _units_table(data) -> np.ndarray:
    """raters x units -> pairable units x raters, float64, NaN missing."""
    try:
        x = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValidationError(
            "`data` must be a numeric raters x units table (NaN marks a missing rating); "
            "code nominal categories as numbers") from None
    if x.ndim != 2:
        raise ParameterError(f"`data` must be 2-D (raters x units); got {x.ndim}-D")
    if np.isinf(x).any():
        r, u = np.argwhere(np.isinf(x))[0]
        raise DataValidationError(f"`data` has an infinite value (rater {r}, unit {u})")
    x = x.T
    m = (~np.isnan(x)).sum(axis=1)
    return x[m >= 2]


class _Parts:
    """The per-unit quantities every level needs; resample weights combine them."""

    def __init__(self, x: np.ndarray, level: str):
        present = ~np.isnan(x)
        self.m = present.sum(axis=1).astype(np.float64)
        self.level = level
        self.values, codes = np.unique(x[present], return_inverse=True)
        rows = np.nonzero(present)[0]
        v = self.values.size
        # unit x value counts (dense: nominal/ordinal levels are few; a wide interval or
        # ratio table is handled per unit below, not through this matrix)
        self.counts: np.ndarray | None = None
        if level in ("nominal", "ordinal") or (level == "ratio"):
            counts = np.zeros((x.shape[0], v))
            np.add.at(counts, (rows, codes), 1.0)
            self.counts = counts
        if level == "nominal":
            self.q = (self.m**2 - (self._dense()**2).sum(axis=1)) / (self.m - 1.0)
        elif level == "interval":
            # first moved by one of its own values (exact differences for nearby values),
            # then centred: alpha is shift-free up to the rounding of the data themselves
            vals = x[present]
            x = x - np.partition(vals, vals.size // 2)[vals.size // 2]
            centred = x - np.nanmean(x, axis=1, keepdims=True)
            ss = np.nansum(centred**2, axis=1)
            self.q = 2.0 * self.m * ss / (self.m - 1.0)
            grand = x[present].mean()
            xc = np.where(present, x - grand, 0.0)
            self.s1 = xc.sum(axis=1)
            self.s2 = (xc**2).sum(axis=1)
        elif level == "ratio":
            if (self.values < 0).any():
                raise DataValidationError(
                    "`level='ratio'` needs non-negative values (ratio data have an absolute "
                    f"zero); the smallest value is {self.values.min():g}")
            self.q = self._ratio_within(x, present)

    @staticmethod
    def _ratio_delta(a, b):
        s = a + b
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(s == 0, 0.0, (a - b) / np.where(s == 0, 1.0, s))
        return d * d

    def _dense(self) -> np.ndarray:
        """The unit x value counts (kept at the nominal, ordinal and ratio levels)."""
        if self.counts is None:
            raise ValueError(f"no unit x value counts at the {self.level} level")
        return self.counts

    def _ratio_within(self, x, present):
        q = np.empty(x.shape[0])
        step = max(1, 2**22 // max(1, x.shape[1] ** 2))
        for s in range(0, x.shape[0], step):
            blk = x[s:s + step]
            pr = present[s:s + step]
            d = self._ratio_delta(blk[:, :, None], blk[:, None, :])
            d = np.where(pr[:, :, None] & pr[:, None, :], d, 0.0)
            q[s:s + step] = d.sum(axis=(1, 2)) / (self.m[s:s + step] - 1.0)
        return q

    def alpha(self, w: np.ndarray) -> np.ndarray:
        """alpha for each row of unit weights ``w`` (resamples x units)."""
        n = w @ self.m
        if self.level == "interval":
            observed = w @ self.q
            s1, s2 = w @ self.s1, w @ self.s2
            expected = 2.0 * (n * s2 - s1 * s1)
        elif self.level == "nominal":
            observed = w @ self.q
            nc = w @ self._dense()
            expected = n * n - (nc * nc).sum(axis=1)
        elif self.level == "ratio":
            observed = w @ self.q
            nc = w @ self._dense()
            expected = np.zeros(w.shape[0])
            step = max(1, 2**22 // max(1, self.values.size))
            for s in range(0, self.values.size, step):
                delta = self._ratio_delta(self.values[s:s + step, None], self.values[None, :])
                expected += (nc[:, s:s + step] * (nc @ delta.T)).sum(axis=1)
        else:  # ordinal: interval alpha on the mid-positions, which move with the resample
            nc = w @ self._dense()
            pos = np.cumsum(nc, axis=1) - nc / 2.0             # (B, V), half-integers
            sum_pos = self._dense() @ pos.T                      # (U, B)
            sum_sq = self._dense() @ (pos * pos).T
            q = 2.0 * (self.m[:, None] * sum_sq - sum_pos**2) / (self.m[:, None] - 1.0)
            observed = np.einsum("bu,ub->b", w, q)
            expected = 2.0 * (n * (nc * pos * pos).sum(axis=1) - (nc * pos).sum(axis=1) ** 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = 1.0 - (n - 1.0) * observed / expected
        return np.where(expected > 0, out, np.nan)


@checked(level=choice(LEVELS), n_resamples=integer(minimum=0), seed=SEED,
         confidence_level=CONFIDENCE_LEVEL)
def krippendorff_alpha(data, level: str = "interval", *, n_resamples: int = 0, seed=0,
                       confidence_level: float = 0.95):
    """Krippendorff's alpha for a raters x units table, with a bootstrap over units.

    Parameters
    ----------
    data : array_like (raters, units), or a study with ratings
        Ratings, NaN where a rater did not rate a unit. Units with fewer than two ratings
        are left out (they carry no information on agreement). A study read with
        ``rater_col=`` (its ``rating`` variable, see :func:`multistat.read_scores`) gives
        one alpha per dataset x system x metric, as a DataFrame.
    level : {"interval", "nominal", "ordinal", "ratio"}
        Level of measurement (the distance between two values, see the module notes).
    n_resamples : int
        Bootstrap resamples over units for the interval (0: none). The resamples are the
        engine's seeded count plans, so the same seed gives the same interval.
    seed : int
        Seed of the bootstrap plans (0 is a seed).
    confidence_level : float
        Level of the bootstrap interval, in (0, 1).

    Returns
    -------
    KrippendorffResult or pandas.DataFrame
        For an array, a :class:`KrippendorffResult`; for a study, a DataFrame with
        columns ``dataset``, ``system``, ``metric``, ``alpha``, ``ci_low``, ``ci_high``,
        ``confidence_level``, ``level``, ``n_units``, ``n_values``, ``n_raters``,
        ``n_resamples``, ``seed``, ``note`` (a system none of whose items two raters
        rated gets NaN and a note).

    Notes
    -----
    The interval is the percentile interval of alpha over bootstrap resamples of units
    (Hayes & Krippendorff 2007 resample pairs of values instead; resampling whole units
    keeps each unit's ratings together, as the units are the sampled items).

    References
    ----------
    K. Krippendorff (2011). Computing Krippendorff's alpha-reliability.
    https://repository.upenn.edu/asc_papers/43
    A. F. Hayes and K. Krippendorff (2007). Answering the call for a standard reliability
    measure for coding data. Communication Methods and Measures 1(1), 77-89.
    https://doi.org/10.1080/19312450709336664

    Examples
    --------
    Krippendorff's (2011) reliability data (4 observers x 12 units):

    >>> import numpy as np
    >>> from multistat import krippendorff_alpha
    >>> nan = np.nan
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> round(krippendorff_alpha(data, "nominal").alpha, 3)
    0.743
    >>> round(krippendorff_alpha(data, "interval").alpha, 3)
    0.849
    """
    if _is_study(data):
        warnings.warn("krippendorff_alpha(study) is deprecated and will be removed in "
                      "multistat 0.3: it returns a DataFrame, not a KrippendorffResult; use "
                      "multistat.agreement(study)", DeprecationWarning, stacklevel=3)
        return _study_alpha(data, level, n_resamples, seed, confidence_level)
    x = _units_table(data)
    n_raters = int(np.asarray(data, dtype=np.float64).shape[0])
    if x.shape[0] < 1:
        raise DataValidationError("no pairable unit: Krippendorff's alpha needs units rated "
                                  "by at least two raters")
    parts = _Parts(x, level)
    point = float(parts.alpha(np.ones((1, x.shape[0])))[0])
    low = high = np.nan
    undefined = 0
    if n_resamples:
        boot = np.concatenate([parts.alpha(block) for block in plan_blocks(
            "bootstrap", x.shape[0], n_resamples, seed, dataset=PLAN_DATASET)])
        finite = boot[np.isfinite(boot)]
        undefined = int(boot.size - finite.size)
        if finite.size:
            tail = (1.0 - confidence_level) / 2.0
            low, high = (float(v) for v in np.quantile(finite, [tail, 1.0 - tail]))
    return KrippendorffResult(alpha=point, level=level, ci_low=low, ci_high=high,
                              confidence_level=confidence_level, n_units=int(x.shape[0]),
                              n_values=int((~np.isnan(x)).sum()), n_raters=n_raters,
                              n_resamples=n_resamples,
                              seed=seed if isinstance(seed, int) else -1,
                              n_undefined=undefined)


def _is_study(data) -> bool:
    # heavy: pyarrow, xarray, lazily
    import xarray as xr

    return isinstance(data, (xr.Dataset, xr.DataTree))



@checked(level=choice(LEVELS), n_resamples=integer(minimum=0), seed=SEED,
         confidence_level=CONFIDENCE_LEVEL)
def agreement(study, level: str = "interval", *, n_resamples: int = 1000, seed=0,
              confidence_level: float = 0.95) -> pd.DataFrame:
    """Krippendorff's alpha of every dataset x system x metric of a study with ratings.

    Parameters
    ----------
    study : a study (or a path :func:`multistat.load` reads) with ratings by rater
        Read with ``rater_col=`` (its ``rating`` variable, see
        :func:`multistat.read_scores`).
    level : {"interval", "nominal", "ordinal", "ratio"}
        Level of measurement, as in :func:`krippendorff_alpha`.
    n_resamples : int
        Bootstrap resamples over units for each interval (0: none).
    seed : int
        Seed of the bootstrap plans (0 is a seed).
    confidence_level : float
        Level of the intervals.

    Returns
    -------
    pandas.DataFrame
        One row per dataset x system x metric: ``dataset, system, metric`` and the
        fields of :class:`KrippendorffResult` (``alpha``, ``ci_low``, ``ci_high``, ...).

    See Also
    --------
    krippendorff_alpha : one raters x units table.

    Examples
    --------
    >>> import numpy as np, multistat
    >>> from multistat import cube
    >>> rng = np.random.default_rng(0)
    >>> item = rng.normal(3, 1, (1, 1, 25, 1))
    >>> rating = item + rng.normal(0, 0.3, (2, 1, 25, 3))   # 2 systems, 3 raters
    >>> ds = cube.make_dataset("pilot", cube.run_mean(rating), systems=["a", "b"],
    ...                        metrics=["likert"], instances=list(range(25)),
    ...                        rating=rating, raters=["r1", "r2", "r3"])
    >>> table = multistat.agreement(cube.make_study({"pilot": ds}), n_resamples=200)
    >>> list(table["system"]), bool((table["alpha"] > 0.8).all())
    (['a', 'b'], True)
    """
    if not _is_study(study):
        # heavy: xarray, lazily
        from multistat import cube

        study = cube.load(study)
    return _study_alpha(study, level, n_resamples, seed, confidence_level)

def _study_alpha(study, level, n_resamples, seed, confidence_level):
    # heavy: pyarrow, pandas, lazily
    import pandas as pd

    # heavy: pyarrow, xarray, lazily
    import xarray as xr

    # heavy: pyarrow, xarray, lazily
    from multistat.cube import RATING

    nodes = ({"": study} if isinstance(study, xr.Dataset)
             else {name: node.to_dataset() for name, node in study.children.items()})
    rows = []
    for name, ds in nodes.items():
        if RATING not in ds:
            raise DataValidationError(
                f"dataset {ds.attrs.get('dataset', name)!r} has no ratings by rater: read "
                "the scores with rater_col= (CLI --rater-col)")
        rating = ds[RATING].transpose("system", "metric", "rater", "instance")
        values = rating.values
        for i, system in enumerate(rating["system"].values):
            for j, metric in enumerate(rating["metric"].values):
                row = {"dataset": ds.attrs.get("dataset", name), "system": str(system),
                       "metric": str(metric)}
                cell = values[i, j]
                if ((~np.isnan(cell)).sum(axis=0) >= 2).any():
                    res = krippendorff_alpha(cell, level, n_resamples=n_resamples,
                                             seed=seed, confidence_level=confidence_level)
                    rows.append({**row, **res.to_dict(), "note": ""})
                else:
                    rows.append({**row, "alpha": np.nan, "ci_low": np.nan,
                                 "ci_high": np.nan, "confidence_level": confidence_level,
                                 "level": level, "n_units": 0,
                                 "n_values": int((~np.isnan(cell)).sum()),
                                 "n_raters": int(cell.shape[0]), "n_resamples": n_resamples,
                                 "seed": seed, "note": "no item rated by two raters: "
                                                       "agreement cannot be measured"})
    return pd.DataFrame(rows)
