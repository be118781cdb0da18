"""Almost Stochastic Order (multistat.significance.aso) against deepsig's ``aso``."""

from __future__ import annotations

import warnings

import deepsig  # noqa: F401  the reference (dev and bench extras)
import numpy as np
import pytest

import multistat
from multistat import cube
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.significance.aso import aso, quantiles, violation_ratio

B_REF = 100  # deepsig's num_bootstrap_iterations: small, deepsig is slow (~50 ms each)


def _samples(seed, shift):
    """A: 30 runs from N(shift, 1); B: 25 runs from N(0, 1) (different lengths on
    purpose: the sqrt(nm/(n+m)) factor matters)."""
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1, 30), rng.normal(0, 1, 25)


def _mc_sd(a, b, attr):
    """Monte Carlo sd of an eps_min computed with B_REF resamples (from 40 seeds of our
    implementation: deepsig's estimate at B_REF has this spread around the B -> inf
    value)."""
    return float(np.std([getattr(aso(a, b, n_resamples=B_REF, seed=s), attr)
                         for s in range(1, 41)]))


def _deepsig(a, b):
    from deepsig import aso as ref

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(ref(a, b, confidence_level=0.95, num_bootstrap_iterations=B_REF,
                         show_progress=False, seed=1))


@pytest.mark.parametrize("setting,seed,shift", [
    ("clearly better", 1, 0.6),   # our eps_min ~ 0.28 (B = 2000)
    ("equal", 3, 0.0),            # ~ 0.61
    ("clearly worse", 4, -0.6),   # eps_min = 1 (clipped); B over A ~ 0.1
])
def test_aso_agrees_with_deepsig(setting, seed, shift):
    from deepsig.aso import compute_violation_ratio

    a, b = _samples(seed, shift)
    ours = aso(a, b, n_resamples=4000, seed=0)
    # the observed violation ratio is deterministic: equal to deepsig's
    assert ours.violation_ratio == pytest.approx(compute_violation_ratio(a, b, dt=0.005),
                                                 abs=1e-12)
    # eps_min agrees within Monte Carlo error (4 sd of deepsig's B_REF-resample estimate;
    # our B = 4000 estimate adds a further sqrt(100/4000) of that)
    ref = _deepsig(a, b)
    tol = 4 * _mc_sd(a, b, "eps_min") + 1e-9
    assert tol < 0.25  # the comparison is informative
    assert abs(ours.eps_min - ref) <= tol, (setting, ours.eps_min, ref, tol)
    # the reverse direction (B over A) from the same bootstrap agrees with deepsig(b, a)
    ref_rev = _deepsig(b, a)
    tol_rev = 4 * _mc_sd(a, b, "eps_min_reverse") + 1e-9
    assert abs(ours.eps_min_reverse - ref_rev) <= tol_rev, (setting, ours.eps_min_reverse,
                                                            ref_rev, tol_rev)
    if setting == "clearly better":
        assert ours.dominant and ours.eps_min_reverse > 0.5
    if setting == "clearly worse":
        assert ours.eps_min == 1.0 and ref == 1.0
        assert ours.eps_min_reverse < 0.2 and not ours.dominant


def test_violation_ratio_by_hand():
    # A = (1, 2), B = (0, 3) on the grid t = .005 ... .995 (199 points):
    # quantiles: t <= .5 -> A 1, B 0 (no violation, diff^2 = 1); t > .5 -> A 2, B 3
    # (violation, diff^2 = 1). 100 points have t <= .5, 99 above:
    # eps = 99 / 199 (the first grid point is not a violation, so deepsig's diff[1:] is moot)
    qa, qb = quantiles(np.array([1.0, 2.0])), quantiles(np.array([0.0, 3.0]))
    assert violation_ratio(qa, qb) == pytest.approx(99 / 199)
    # identical samples: W2 = 0 -> 0.5 by convention
    assert violation_ratio(qa, qa) == 0.5
    # A = (-5, -4) always below (1, 2): diff^2 = 36 at all 199 points, the violation
    # integral skips t = dt (deepsig's convention): 198 * 36 / (199 * 36) = 198/199;
    # the other way round no violation: 0
    q_low = quantiles(np.array([-5.0, -4.0]))
    assert violation_ratio(q_low, qa) == pytest.approx(198 / 199)
    assert violation_ratio(qa, q_low) == 0.0


def test_aso_vectorised_over_pairs_equals_one_at_a_time():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 12)) + np.arange(4)[:, None] * 0.3
    b = rng.normal(size=(4, 9))
    many = aso(a, b, n_resamples=300, seed=5)
    assert many.eps_min.shape == (4,)
    for i in range(4):
        one = aso(a[i], b[i], n_resamples=300, seed=5)
        assert one.eps_min == pytest.approx(many.eps_min[i], abs=1e-12)
    # broadcasting one B against many A
    assert aso(a, b[0], n_resamples=50).eps_min.shape == (4,)


def test_aso_seeded_orientation_and_frame():
    a, b = _samples(1, 0.6)
    r1, r2 = aso(a, b, seed=7), aso(a, b, seed=7)
    assert r1.eps_min == r2.eps_min
    # lower is better: negating both samples and the direction gives the same answer
    r3 = aso(-a, -b, seed=7, higher_is_better=False)
    assert r3.eps_min == pytest.approx(r1.eps_min)
    # swapping A and B swaps the violation ratio: eps_W2(B, A) = 1 - eps_W2(A, B) up to
    # the first grid point deepsig leaves out of the violation integral
    sw = aso(b, a, seed=7)
    assert sw.violation_ratio + r1.violation_ratio == pytest.approx(1, abs=0.02)
    frame = r1.to_frame()
    assert list(frame.columns[:3]) == ["eps_min", "eps_min_reverse", "violation_ratio"]
    assert bool(frame.dominant[0]) == (r1.eps_min < 0.5)
    assert multistat.aso is aso


def test_aso_errors():
    with pytest.raises(DataValidationError, match="`scores_b` needs at least 2 scores"):
        aso([1.0, 2.0], [1.0])
    with pytest.raises(DataValidationError, match="`scores_a` has 1 missing"):
        aso([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ParameterError, match="`confidence_level` must be in"):
        aso([1.0, 2.0], [1.0, 2.0], confidence_level=1.0)
    with pytest.raises(ParameterError, match="`n_resamples` must be an integer >= 2"):
        aso([1.0, 2.0], [1.0, 2.0], n_resamples=1)
    with pytest.raises(ParameterTypeError, match="`scores_a` must be an array"):
        aso(["x", "y"], [1.0, 2.0])
    with pytest.raises(DataValidationError, match="leading axes do not broadcast"):
        aso(np.zeros((3, 4)), np.zeros((2, 4)))


def test_deepsig_level_correction_is_the_documented_one():
    # issue 24.7: deepsig 1.2.8 raises the level to level + (1 - level) / k for k
    # comparisons (deepsig/aso.py: ``confidence_level += (1 - confidence_level) /
    # num_comparisons``), not to 1 - (1 - level) / k as this docstring said. Small samples
    # (5 runs each) and k = 45 make the two levels give eps_min 0.45 apart (0.53 with
    # deepsig's level, 0.98 with Bonferroni's, deepsig itself 0.57 at its B = 100)
    from deepsig import aso as ref

    assert "level + (1 - level) / k" in aso.__doc__
    assert "1 - (1 - level) / #pairs" not in aso.__doc__
    a, b = _samples(4, 0.5)
    a, b, k = a[:5], b[:5], 45
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = float(ref(a, b, confidence_level=0.95, num_comparisons=k,
                           num_bootstrap_iterations=B_REF, show_progress=False, seed=1))
    documented = aso(a, b, confidence_level=0.95 + 0.05 / k, n_resamples=4000).eps_min
    bonferroni = aso(a, b, confidence_level=1 - 0.05 / k, n_resamples=4000).eps_min
    tol = 4 * _mc_sd(a, b, "eps_min") + 1e-9
    assert abs(documented - theirs) <= tol, (documented, theirs, tol)
    assert abs(bonferroni - theirs) > tol, (bonferroni, theirs, tol)


@pytest.mark.parametrize("n,m", [(30, 25), (12, 12), (5, 40)])
def test_eps_min_reverse_is_the_eps_min_of_the_swapped_call(n, m):
    # issue 24.7: on main the two differed by up to 0.002 (the reverse was taken as
    # 1 - eps_W2(A, B), which the first grid point deepsig leaves out breaks, and the two
    # calls resampled A and B from swapped streams)
    rng = np.random.default_rng(n * m)
    for _ in range(10):
        a, b = rng.normal(0.2, 1, n), rng.normal(0, 1, m)
        ab, ba = aso(a, b, n_resamples=300, seed=3), aso(b, a, n_resamples=300, seed=3)
        assert ab.eps_min_reverse == ba.eps_min and ba.eps_min_reverse == ab.eps_min
    # many pairs at once, and tied samples (the order rule falls back on the values)
    A, B = rng.integers(0, 3, (6, 12)).astype(float), rng.integers(0, 3, (6, 12)).astype(float)
    B[0] = A[0]
    ab, ba = aso(A, B, seed=2), aso(B, A, seed=2)
    np.testing.assert_array_equal(ab.eps_min_reverse, ba.eps_min)
    np.testing.assert_array_equal(ab.eps_min, ba.eps_min_reverse)


def test_compare_eps_min_reverse_is_the_eps_min_of_the_reversed_pair():
    rng = np.random.default_rng(4)
    score = rng.normal(size=(4, 1, 30)) + np.arange(4)[:, None, None] * 0.2
    ds = cube.make_dataset("d", score, systems=list("abcd"), metrics=["m"],
                           instances=[f"i{i}" for i in range(30)])
    study = cube.make_study({"d": ds})
    fwd = multistat.compare(study, tests=("aso",), n_resamples=200, effect_sizes=False)
    rev = multistat.compare(study, tests=("aso",), n_resamples=200, effect_sizes=False,
                            pairs=[(b, a) for a, b in zip(fwd.system_a, fwd.system_b,
                                                          strict=True)])
    np.testing.assert_array_equal(fwd["eps_min_reverse"].to_numpy(),
                                  rev["eps_min"].to_numpy())
