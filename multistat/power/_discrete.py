"""Sample sizes for exact discrete tests, whose power is a saw-tooth in ``n``.

The exact sign test and the exact (conditional, binomial) McNemar test reject on integer
counts, so their power does not grow monotonically with ``n``: for the two-sided sign test
at ``p = 0.6``, power is 0.8037 at n = 199, 0.787 at 200, 0.814 at 208 and 0.798 at 209,
and it never falls below 0.8 again only from n = 210 on. A bisection lands on an arbitrary
crossing, so the solvers here answer two questions instead, both by exhaustive scans:

* ``smallest`` -- the smallest ``n`` whose power reaches the target (a linear scan from
  ``n = 1``);
* ``stays_above`` -- the smallest ``n0`` such that power(n) >= target for **every**
  ``n >= n0``.

How "every n" is established
----------------------------
A scan cannot look at infinitely many ``n``; a proven lower bound ``B(n)`` on the power that
is non-decreasing in ``n`` closes the gap. Once ``B(N) >= target`` at some ``N``, power
stays above the target for all ``n >= N``, and ``stays_above`` is one more than the last
``n < N`` the exact scan finds below the target.

*Sign test*, ``k`` non-tied pairs, success probability ``q``, one-sided level ``a``
(``alpha/2`` two-sided), favoured direction ``eps = |q - 1/2| > 0``. Hoeffding's inequality
``P(Bin(k, 1/2) <= k/2 - t) <= exp(-2 t^2 / k)`` with ``t = sqrt(k ln(1/a) / 2)`` shows that
the critical count ``c_k`` (largest ``c`` with ``P(Bin(k, 1/2) <= c) <= a``) is at least
``k/2 - t - 1``, so the rejection region contains ``{X >= k/2 + t + 1}`` and, by Hoeffding
again for ``X ~ Bin(k, 1/2 + eps)``,
``power(k) >= L(k) = 1 - exp(-2 (k eps - t - 1)^2 / k)`` whenever ``k eps > t + 1``.
``(k eps - t - 1) / sqrt(k) = sqrt(k) eps - sqrt(ln(1/a)/2) - 1/sqrt(k)`` increases with
``k``, so ``L`` is non-decreasing there; ``N`` is the smallest ``k`` with
``L(k) >= target`` (closed form, a quadratic in ``sqrt(k)``). The lower tail of a
two-sided test only adds power and is left out of the bound.

*Exact McNemar*, test-set size ``n``, discordant share ``D``: the number of discordant items
is ``K ~ Bin(n, D)`` and ``power(n) = E[r(K)]`` with ``r`` the sign-test power above. Take
``k1`` with ``L(k1)`` close to 1 and ``m(k) = min(min_{k <= j < k1} r(j), L(k1))``
(``m(k) = L(k1)`` for ``k >= k1``). ``m`` is non-decreasing and ``m(k) <= r(j)`` for every
``j >= k``, so ``m(k) <= r(k)``; ``K`` grows stochastically with ``n``, so
``B(n) = E[m(K)]`` is a non-decreasing lower bound of the power, and its first crossing of
the target (found by bisection, valid for a monotone function) is ``N``.

The scans are bounded: ``N`` above the horizon (10**7 for the sign test, 10**6 for McNemar)
raises :class:`~multistat.errors.InfeasibleError` naming the horizon; no answer is given
that the scan has not verified.
"""

from __future__ import annotations

import math

import numpy as np

from multistat._lazy import lazy_module
from multistat.errors import InfeasibleError

stats = lazy_module("scipy.stats")  # imported on first use

SIGN_HORIZON = 10_000_000
MCNEMAR_HORIZON = 1_000_000

RULE = ("smallest = smallest n with power(n) >= target (linear scan from 1); "
        "stays_above = smallest n0 with power(n) >= target for every n >= n0 (exact scan "
        "up to N, where a proven non-decreasing lower bound on the power reaches the "
        "target; see multistat.power._discrete)")


class DiscreteSampleSize(float):
    """A solved sample size of an exact discrete test: a ``float`` equal to ``smallest``.

    Attributes
    ----------
    smallest : smallest ``n`` with power(n) >= target
    stays_above : smallest ``n0`` with power(n) >= target for all ``n >= n0``
        (``>= smallest``; equal when power never dips back below the target)
    power_smallest, power_stays_above : exact power at those two sizes
    bound_n : the ``N`` from which the proven lower bound alone guarantees the target
    target : the target power
    rule : how the two numbers are defined and established
    """

    smallest: int
    stays_above: int
    power_smallest: float
    power_stays_above: float
    bound_n: int
    target: float
    rule: str

    def __new__(cls, smallest, stays_above, power_smallest, power_stays_above, bound_n,
                target):
        obj = super().__new__(cls, float(smallest))
        obj.smallest = int(smallest)
        obj.stays_above = int(stays_above)
        obj.power_smallest = float(power_smallest)
        obj.power_stays_above = float(power_stays_above)
        obj.bound_n = int(bound_n)
        obj.target = float(target)
        obj.rule = RULE
        return obj

    def __repr__(self) -> str:
        return (f"{float(self)!r} (smallest n reaching power {self.target:g}; power stays "
                f">= {self.target:g} from n = {self.stays_above})")

    def to_dict(self) -> dict:
        return {"n": self.smallest, "n_stays_above": self.stays_above,
                "power_at_n": self.power_smallest,
                "power_at_n_stays_above": self.power_stays_above,
                "n_bound": self.bound_n}

    # float arithmetic returns plain floats; pickling keeps the attributes
    def __reduce__(self):
        return (DiscreteSampleSize, (self.smallest, self.stays_above, self.power_smallest,
                                     self.power_stays_above, self.bound_n, self.target))


# ---------------------------------------------------------------------------- sign test
def crit_lower(k: np.ndarray, level: float) -> np.ndarray:
    """Largest ``c`` with ``P(Bin(k, 1/2) <= c) <= level`` (``-1`` when none)."""
    k = np.asarray(k, dtype=np.int64)
    cc = stats.binom.ppf(level, k, 0.5)
    cc = np.where(np.isnan(cc), -1, cc).astype(np.int64)
    return np.where(stats.binom.cdf(cc, k, 0.5) <= level * (1 + 1e-12), cc, cc - 1)


def sign_power(k, q: float, alpha: float, alternative: str) -> np.ndarray:
    """Exact power of the exact sign test at ``k`` trials (array), success prob. ``q``:
    P(the exact binomial test rejects), also McNemar's given ``k`` discordant items.

    Two-sided p-value ``min(1, 2 min(P(X <= x), P(X >= x)))`` (statsmodels ``mcnemar``,
    scipy ``binomtest`` for p0 = 1/2); rejection when ``p <= alpha``. ``"greater"``: H1
    ``q > 1/2`` (many successes).
    """
    k = np.asarray(k, dtype=np.int64)
    if alternative == "two-sided":
        cl = crit_lower(k, alpha / 2)
        return stats.binom.cdf(cl, k, q) + stats.binom.sf(k - cl - 1, k, q)
    cl = crit_lower(k, alpha)
    if alternative == "greater":
        return stats.binom.sf(k - cl - 1, k, q)
    return stats.binom.cdf(cl, k, q)


def _eps_level(q: float, alpha: float, alternative: str) -> tuple[float, float]:
    """Favoured-direction effect ``eps`` and one-sided level ``a`` of the bound."""
    if alternative == "two-sided":
        return abs(q - 0.5), alpha / 2
    return (q - 0.5 if alternative == "greater" else 0.5 - q), alpha


def hoeffding_bound(k, q: float, alpha: float, alternative: str) -> np.ndarray:
    """``L(k)``: a proven lower bound on the sign-test power, non-decreasing where > 0."""
    eps, a = _eps_level(q, alpha, alternative)
    k = np.asarray(k, dtype=float)
    t = np.sqrt(k * math.log(1 / a) / 2)
    gap = k * eps - t - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - np.exp(-2 * gap * gap / k)
    return np.where((gap > 0) & (k > 0), out, 0.0)


def hoeffding_n(q: float, alpha: float, alternative: str, level: float) -> int | None:
    """Smallest ``k`` with ``L(k) >= level`` (``None`` if ``eps <= 0``)."""
    eps, a = _eps_level(q, alpha, alternative)
    if eps <= 0:
        return None
    s = math.sqrt(math.log(1 / a) / 2) + math.sqrt(math.log(1 / (1 - level)) / 2)
    u = (s + math.sqrt(s * s + 4 * eps)) / (2 * eps)
    k = max(1, math.floor(u * u) - 2)
    while hoeffding_bound(k, q, alpha, alternative) < level:  # guard the rounding
        k += 1
    return k


def _infeasible(what: str, horizon: int, target: float, best: float) -> InfeasibleError:
    return InfeasibleError(
        f"no {what} up to the scan horizon {horizon:,} is proven to reach power = "
        f"{target:g} (largest exact power seen {best:.4g}); the effect is too small or "
        f"in the direction the alternative excludes")


def sign_sample_size(q: float, target: float, alpha: float, alternative: str,
                     horizon: int = SIGN_HORIZON) -> DiscreteSampleSize:
    """Both sample sizes of the exact sign test (see the module docstring)."""
    big_n = hoeffding_n(q, alpha, alternative, target)
    if big_n is None or big_n > horizon:
        probe = sign_power(np.unique(np.geomspace(1, horizon, 200).astype(int)), q, alpha,
                           alternative)
        raise _infeasible("number of pairs", horizon, target, float(probe.max()))
    ns = np.arange(1, big_n + 1)
    pw = np.empty(ns.size)
    for s in range(0, ns.size, 1_000_000):  # bounded memory
        pw[s:s + 1_000_000] = sign_power(ns[s:s + 1_000_000], q, alpha, alternative)
    return _result(ns, pw, big_n, target, horizon, "number of pairs")


def _result(ns, pw, big_n, target, horizon, what) -> DiscreteSampleSize:
    ok = pw >= target
    if not ok.any():
        raise _infeasible(what, horizon, target, float(pw.max()))
    i_small = int(np.argmax(ok))
    below = np.nonzero(~ok)[0]
    i_stay = int(below[-1]) + 1 if below.size else 0
    if i_stay >= ns.size:  # cannot happen: the bound says power(N) >= target
        raise RuntimeError(f"internal error: exact power {pw[-1]!r} at n = {big_n} is below "
                           f"the proven lower bound's target {target!r}")
    return DiscreteSampleSize(ns[i_small], ns[i_stay], pw[i_small], pw[i_stay], big_n,
                              target)


# ------------------------------------------------------------------------------ McNemar
def _mixture_powers(r: np.ndarray, disc: float, n_max: int, tail: float = 1e-17):
    """``E[r(K_n)]`` for ``K_n ~ Bin(n, disc)``, ``n = 1..n_max``, by the recursion
    ``pmf_{n+1}(k) = (1 - D) pmf_n(k) + D pmf_n(k - 1)`` on a window holding all but
    ``tail`` of the mass (the dropped mass bounds the error)."""
    out = np.empty(n_max)
    if disc >= 1.0:
        return r[1:n_max + 1].astype(float).copy()
    pmf = np.array([1.0])  # n = 0, support starting at lo
    lo = 0
    for n in range(1, n_max + 1):
        new = np.empty(pmf.size + 1)
        new[:-1] = pmf * (1 - disc)
        new[-1] = 0.0
        new[1:] += pmf * disc
        pmf = new
        # trim negligible tails (keeps the cost O(sqrt(n)) per step)
        if pmf.size > 64:
            c = np.cumsum(pmf)
            a = int(np.searchsorted(c, tail))
            b = int(np.searchsorted(c, c[-1] - tail)) + 1
            if a > 0 or b < pmf.size:
                pmf = pmf[a:b]
                lo += a
        out[n - 1] = float(pmf @ r[lo:lo + pmf.size])
    return out


def mcnemar_sample_size(disc: float, q: float, target: float, alpha: float,
                        alternative: str, horizon: int = MCNEMAR_HORIZON
                        ) -> DiscreteSampleSize:
    """Both sample sizes of the exact McNemar test: discordant share ``disc``, ``q`` =
    P(the discordant item favours ``a``)."""
    level = 1 - (1 - target) / 4  # L(k1) well above the target keeps the bound tight
    k1 = hoeffding_n(q, alpha, alternative, level)
    if k1 is None or disc <= 0 or k1 / disc > horizon:
        raise _infeasible("test-set size", horizon, target,
                          float(sign_power(np.arange(1, 2000), q, alpha,
                                           alternative).max()) if disc > 0 else 0.0)
    ks = np.arange(0, k1)
    r_exact = sign_power(ks, q, alpha, alternative)
    r_exact[0] = 0.0
    l1 = float(hoeffding_bound(k1, q, alpha, alternative))
    m = np.minimum(np.minimum.accumulate(r_exact[::-1])[::-1], l1)  # min over j in [k, k1)

    def bound(n: int) -> float:
        k = np.arange(0, min(n, k1 - 1) + 1)
        below = float(stats.binom.pmf(k, n, disc) @ m[k])
        above = float(stats.binom.sf(k1 - 1, n, disc)) * l1
        return below + above

    lo, hi = 1, max(2, int(k1 / disc))
    while bound(hi) < target:
        hi *= 2
        if hi > 4 * horizon:
            raise _infeasible("test-set size", horizon, target, bound(hi))
    while hi - lo > 1:  # B is non-decreasing in n: bisection finds its first crossing
        mid = (lo + hi) // 2
        if bound(mid) >= target:
            hi = mid
        else:
            lo = mid
    big_n = hi
    if big_n > horizon:
        raise _infeasible("test-set size", horizon, target, bound(horizon))
    r = sign_power(np.arange(0, big_n + 1), q, alpha, alternative)
    r[0] = 0.0
    pw = _mixture_powers(r, disc, big_n)
    return _result(np.arange(1, big_n + 1), pw, big_n, target, horizon, "test-set size")
