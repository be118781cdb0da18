"""Decision and interval agree in every row (significance/_inversion.py): ``p <= alpha`` exactly when the
interval at level ``1 - alpha`` (same sidedness) excludes the null value."""

import warnings

import numpy as np
import pytest

from validation import calibration as C
from multistat.significance import REGISTRY
from multistat.significance import _inversion as inv
from multistat.significance.resampling import bootstrap_pvalues
from multistat.significance.unpaired import UNPAIRED

ALPHA = 0.05
# tests whose interval is not yet the inversion of their p-value; strict xfail: the test
# fails (XPASS) as soon as one of them agrees, so this list cannot go stale
NOT_YET = {
}


def _data(dist, n, rows, seed):
    rng = np.random.default_rng(seed)
    if dist == "small":  # continuous, no ties: Mann-Whitney's p-value is exact for n <= 8
        return rng.normal(0.8, 1.0, (rows, n)), rng.normal(0.0, 1.0, (rows, n))
    if dist == "separated":  # every a above every b (odd rows: below)
        b = rng.normal(0.0, 1.0, (rows, n))
        a = b.max(-1, keepdims=True) + 0.1 + rng.exponential(1.0, (rows, n))
        flip = np.arange(rows) % 2 == 1
        a[flip], b[flip] = b[flip].copy(), a[flip].copy()
        return a, b
    return C.draw(dist, n, rows, rng)


# sample sizes per kind of data: the small ones cross scipy's exact/asymptotic switch of
# Mann-Whitney (a sample of at most 8 without ties: exact)
SIZES = {"small": tuple(range(5, 13)), "separated": (5, 8, 12)}


def _mismatch(spec_name, a, b, alternative, null_value, finite=False):
    spec = REGISTRY[spec_name]
    kw = {"n_resamples": 999} if spec.resampling else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = spec.func(a, b, alternative=alternative, null_value=null_value,
                      confidence_level=1 - ALPHA, **kw)
    p, lo, hi = (np.atleast_1d(np.asarray(v, float)) for v in (r.p_value, r.ci_low,
                                                              r.ci_high))
    # never a silent NaN: a row without a p-value says why in its note
    notes = np.atleast_1d(np.asarray(r.note, dtype=object))
    silent = np.isnan(p) & np.array([not str(x) for x in np.broadcast_to(notes, p.shape)])
    assert not silent.any(), (spec_name, alternative, null_value)
    # completely separated samples have a p-value in every test (a limit where the
    # statistic's variance estimate is 0)
    assert not (finite and np.isnan(p).any()), (spec_name, alternative, null_value)
    if "relative_effect_ci_low" in r.extra:
        # Brunner-Munzel: its interval is for the relative effect, whose null value is
        # 1/2 (at the shift null_value)
        lo = np.atleast_1d(np.asarray(r.extra["relative_effect_ci_low"], float))
        hi = np.atleast_1d(np.asarray(r.extra["relative_effect_ci_high"], float))
        null_value = 0.5
    if np.all(np.isnan(lo)) and np.all(np.isnan(hi)):
        return None  # no interval (permutation: says so in its note)
    reject = p <= ALPHA
    # an empty interval (NaN ends with a p-value: the test rejects every null value,
    # possible with ties) excludes everything
    empty = np.isnan(lo) & np.isnan(hi) & ~np.isnan(p)
    excludes = (lo > null_value) | (hi < null_value) | empty
    return int(np.sum(reject != excludes)), int(reject.sum())


def _end_probes(spec_name, a, b, alternative):
    """Mismatches of the decision just inside and just outside each finite end of every
    row's interval (the row's test at null ``delta`` is its test of ``a - delta``
    against ``b`` at null 0): an interval that inverts another test than the row's
    (e.g. asymptotic where the p-value is exact) shows at its ends, which null values
    drawn independently of the data seldom hit. Returns ``(mismatches, probes)``."""
    spec = REGISTRY[spec_name]

    def run(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return spec.func(x, b, alternative=alternative, null_value=0.0,
                             confidence_level=1 - ALPHA)

    r = run(a)
    lo, hi = (np.atleast_1d(np.asarray(v, float)) for v in (r.ci_low, r.ci_high))
    bad = probes = 0
    for end, inward in ((lo, 1.0), (hi, -1.0)):
        ok = np.isfinite(end)
        eps = 1e-9 * (1.0 + np.abs(np.where(ok, end, 0.0)))
        ok &= hi - lo > 2 * eps
        for step, want_reject in ((inward, False), (-inward, True)):
            delta = np.where(ok, np.where(ok, end, 0.0) + step * eps, 0.0)
            p = np.atleast_1d(np.asarray(run(a - delta[:, None]).p_value, float))
            bad += int(np.count_nonzero(ok & ((p <= ALPHA) != want_reject)))
            probes += int(ok.sum())
    return bad, probes


@pytest.mark.parametrize("test", sorted(REGISTRY))
@pytest.mark.parametrize("dist", ["skewed", "likert", "binary", "small", "separated"])
def test_reject_iff_interval_excludes_null(test, dist, request):
    if REGISTRY[test].binary_only and dist != "binary":
        pytest.skip("binary-only test")
    if test in NOT_YET:
        request.applymarker(pytest.mark.xfail(reason=NOT_YET[test], strict=True))
    # resampling tests and the unpaired ones (their interval scans the p-value over all
    # differences a_i - b_j) are slower per row
    rows = 60 if REGISTRY[test].resampling or test in UNPAIRED else 300
    sizes = SIZES.get(dist, (12, 40))
    rows = 12 if dist in SIZES else rows  # per size
    total_rejections = total_probes = 0
    for n in sizes:
        a, b = _data(dist, n, rows, seed=n)
        for alternative in ("two-sided", "greater", "less"):
            for null_value in ((0.0, 0.5) if dist != "binary" else (0.0,)):
                if REGISTRY[test].binary_only and null_value != 0:
                    continue
                got = _mismatch(test, a, b, alternative, null_value,
                                # (ASO reports eps_min, never a p-value)
                                finite=dist == "separated" and test != "aso")
                if got is None:
                    pytest.skip(f"{test} reports no interval")
                bad, rej = got
                total_rejections += rej
                assert bad == 0, (test, dist, n, alternative, null_value, bad)
            if dist in SIZES and not REGISTRY[test].resampling:
                bad, probes = _end_probes(test, a, b, alternative)
                assert bad == 0, (test, dist, n, alternative, "ends", bad, probes)
                total_probes += probes
    assert total_rejections > 0  # the data exercise both decisions
    if dist in SIZES and not REGISTRY[test].resampling and test != "brunner-munzel":
        assert total_probes > 0  # (Brunner-Munzel's interval is not on the shift scale)


def test_bootstrap_basic_interval_inverts_shifted_pvalue():
    rng = np.random.default_rng(0)
    for trial in range(60):
        b = int(rng.choice([99, 199, 999, 1000]))
        est = np.array(rng.normal())
        dist = est + rng.standard_t(3, (b, 1)) * 0.3
        if trial % 3 == 0:  # discrete bootstrap distributions (ties)
            dist, est = np.round(dist, 1), np.round(est, 1)
        for alt in ("two-sided", "greater", "less"):
            lo, hi = inv.bootstrap_basic_interval(est[None], dist, alternative=alt,
                                                  confidence_level=1 - ALPHA)
            for delta in rng.normal(float(est), 1.0, 40):
                p = bootstrap_pvalues(est[None], dist, alternative=alt, null_value=delta)
                assert bool(p[0] <= ALPHA) == bool(delta < lo[0] or delta > hi[0])


def test_sign_interval_equals_brute_force_acceptance_set():
    rng = np.random.default_rng(1)
    sign = REGISTRY["sign"].func
    for trial in range(80):
        n = int(rng.integers(2, 30))
        d = (rng.integers(-3, 4, n).astype(float) if trial % 2 else rng.normal(0.5, 1, n))
        for alt in ("two-sided", "greater", "less"):
            for zm in ("drop", "split"):
                lo, hi = inv.sign_interval_rows(np.sort(d)[None], alternative=alt,
                                                confidence_level=0.95, zero_method=zm)
                u = np.unique(d)
                cands = np.concatenate([u, (u[:-1] + u[1:]) / 2, u - 1, u + 1,
                                        [lo[0], hi[0]]])
                cands = cands[np.isfinite(cands)]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    p = sign(d[None] - cands[:, None], np.zeros((cands.size, n)),
                             alternative=alt, zero_method=zm).p_value
                accept = ~(np.asarray(p) <= 0.05)
                inside = (cands >= lo[0]) & (cands <= hi[0])
                assert np.array_equal(accept, inside), (d, alt, zm)


def test_sign_interval_continuous_data_is_order_statistics():
    # distinct differences: [d_(k), d_(n-k+1)] (Hollander et al. 2013, 3.6), up to one
    # float where the end value itself is rejected
    from scipy import stats

    rng = np.random.default_rng(2)
    d = np.sort(rng.normal(size=30))
    k = int(stats.binom.ppf(0.025, 30, 0.5))  # P(B <= k - 1) <= 0.025 < P(B <= k)
    while stats.binom.cdf(k - 1, 30, 0.5) > 0.025:
        k -= 1
    lo, hi = inv.sign_interval_rows(d[None], alternative="two-sided", confidence_level=0.95)
    assert lo[0] in (d[k - 1], np.nextafter(d[k - 1], np.inf))
    assert hi[0] in (d[30 - k], np.nextafter(d[30 - k], -np.inf))
