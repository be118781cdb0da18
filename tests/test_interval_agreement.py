"""Intervals agree with their own test and contain their own estimate (issue 24.2)."""

import warnings

import numpy as np
import pytest

from multistat import compare, cube
from multistat.significance import REGISTRY
from multistat.significance.rank import wilcoxon


@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_normal_interval_excludes_every_null_the_test_rejects(correction):
    # n > 50 without ties: the normal-approximation Walsh rank. Reference: the test
    # itself, evaluated on a fine grid of null values across the interval and beyond;
    # main's round(n(n+1)/4 - z sd) put rejected nulls inside in 14 of these 70 inputs
    rng = np.random.default_rng(7)
    inside_rejected = outside_kept = 0
    for _ in range(70):
        n = int(rng.integers(51, 121))
        d = rng.normal(0.2, 1.0, n)
        res = wilcoxon(d, np.zeros(n), correction=correction)
        assert not np.asarray(res.extra["exact"])
        grid = np.linspace(res.ci_low - 0.1, res.ci_high + 0.1, 2001)
        p = wilcoxon(d[None, :] - grid[:, None], np.zeros((grid.size, n)),
                     correction=correction).p_value
        inside = (grid >= res.ci_low) & (grid <= res.ci_high)
        inside_rejected += int(np.count_nonzero(inside & (p <= 0.05)))
        outside_kept += int(np.count_nonzero(~inside & (p > 0.05)))
    assert inside_rejected == 0
    # and the interval is not too short: the nulls it leaves out are rejected (a grid
    # point may fall between the last kept null and the Walsh average at the end)
    assert outside_kept == 0


def _likert_and_binary(rows=90, seed=11):
    rng = np.random.default_rng(seed)
    for r in range(rows):
        n = int(rng.integers(5, 60))
        if r % 2:
            yield rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)
        else:
            yield ((rng.random(n) < 0.6).astype(float),
                   (rng.random(n) < 0.5).astype(float))


@pytest.mark.parametrize("name", ["sign", "wilcoxon"])
def test_rank_test_estimates_lie_in_their_own_interval_on_tied_scores(name):
    # main: 5 of these 180 rows had e.g. estimate 0 with interval [5e-324, 0.5) - the
    # test rejects the median itself (its zero differences are dropped there)
    moved = 0
    for x, y in _likert_and_binary():
        for alternative in ("two-sided", "greater", "less"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = REGISTRY[name].func(x, y, alternative=alternative)
            if np.isnan(res.ci_low) or np.isnan(res.ci_high):  # empty: nothing contains it
                continue
            assert res.ci_low <= res.estimate <= res.ci_high, (name, res.note)
            if "lies outside the interval" in str(res.note):
                moved += 1
                # the estimate is an end of the interval: the nearest unrejected value
                assert res.estimate in (res.ci_low, res.ci_high)
    assert moved > 0  # the case occurs in this sample, and the rows say so


def test_compare_rows_on_likert_scores_contain_their_estimates():
    rng = np.random.default_rng(3)
    score = rng.integers(1, 6, (5, 1, 40)).astype(float)
    score[1] = np.where(rng.random(40) < 0.7, score[0], score[1])  # many zero differences
    ds = cube.make_dataset("d", score, systems=list("abcde"), metrics=["likert"],
                           instances=[f"i{i}" for i in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare(cube.make_study({"d": ds}), tests=("sign", "wilcoxon"),
                        effect_sizes=False, scheduler="synchronous")
    ok = table.dropna(subset=["ci_low", "ci_high"])
    assert len(ok) >= len(table) // 2  # the check is not vacuous: most rows have intervals
    assert ((ok.ci_low <= ok.estimate) & (ok.estimate <= ok.ci_high)).all()


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_permutation_mde_does_not_depend_on_the_null_value(statistic):
    # main: mde 0.174 at null_value 0, 0.792 at 2, and an overflow warning at 1e308
    rng = np.random.default_rng(5)
    base = rng.normal(size=60)
    score = np.stack([base + rng.normal(0, 0.5, 60) + s / 5 for s in range(3)])[:, None]
    ds = cube.make_dataset("d", score, systems=list("abc"), metrics=["m"],
                           instances=[f"i{i}" for i in range(60)])
    study = cube.make_study({"d": ds})
    mdes = []
    # (the median of differences moved by 1e308 overflows in numpy's median itself: the
    # huge null is checked for the mean, whose mde main overflowed)
    for null_value in (0.0, 2.0) + ((1e308,) if statistic == "mean" else ()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning
            table = compare(study, tests=("permutation",), null_value=null_value,
                            statistic=statistic, n_resamples=999, effect_sizes=False,
                            scheduler="synchronous")
        mdes.append(table["mde"].to_numpy())
    assert np.all(np.isfinite(mdes[0]) & (mdes[0] > 0))
    for other in mdes[1:]:
        np.testing.assert_array_equal(other, mdes[0])
