"""Variance components at many systems: a balanced subsample of pairs (``max_pairs``,
``multistat components --max-pairs``) instead of every one of the S(S-1)/2 REML fits.

The subsample's fits are the full run's fits of the same pairs (the same function of the
same ratings), and the pooled standard deviations are their root mean square, computed
here by hand from the per-pair table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import multistat
from multistat.errors import ParameterError
from multistat.human.ratings import balanced_pairs, variance_components

_SDS = ("rater_intercept", "rater_slope", "item_intercept", "item_slope", "sigma")


@pytest.mark.parametrize("n", [2, 3, 8, 17, 60])
def test_balanced_pairs_are_distinct_and_give_every_system_the_same_count(n):
    pairs = balanced_pairs(n, 2 * n)
    assert len(pairs) == len(set(pairs)) and all(0 <= i < j < n for i, j in pairs)
    if n * (n - 1) // 2 <= 2 * n:
        assert pairs == [(i, j) for i in range(n) for j in range(i + 1, n)]
    else:  # two whole rounds of the cyclic design: every system in exactly 4 pairs
        assert len(pairs) == 2 * n
        assert (np.bincount(np.ravel(pairs), minlength=n) == 4).all()
    assert balanced_pairs(n, None) == [(i, j) for i in range(n) for j in range(i + 1, n)]


def test_balanced_pairs_take_at_least_one_round():
    assert len(balanced_pairs(10, 3)) == 10   # one round (10 pairs) even below the cap


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    rng = np.random.default_rng(5)
    S, items, raters = 6, 20, 4
    u, a = rng.normal(0, 0.3, raters), rng.normal(0, 0.5, items)
    w, b = rng.normal(0, 0.2, (raters, S)), rng.normal(0, 0.3, (items, S))
    rows = [(f"s{s}", f"i{i}", f"r{r}", u[r] + a[i] + w[r, s] + b[i, s] + rng.normal(0, 0.6))
            for s in range(S) for i in range(items)
            for r in rng.choice(raters, 2, replace=False)]
    path = tmp_path_factory.mktemp("vc") / "ratings.csv"
    pd.DataFrame(rows, columns=["system", "item", "rater", "score"]).to_csv(path, index=False)
    study = multistat.load(path, score_col="score", instance_col="item", rater_col="rater")
    out = path.with_suffix(".nc")
    multistat.save_study(study, out)
    return out


def test_subsample_pools_the_same_fits_as_the_full_run(study):
    s = multistat.open_study(study)
    full = variance_components(s, max_pairs=None)
    sub = variance_components(s, max_pairs=6)
    assert len(full.pairs) == 15 and len(sub.pairs) == 6
    assert full.note == ""
    assert sub.note.startswith("pooled over a balanced subsample of 6 of 15 pairs")
    assert "each system in 2 pairs" in sub.note
    key = ["system_a", "system_b"]
    same = sub.pairs.merge(full.pairs, on=key, suffixes=("", "_full"))
    assert len(same) == 6
    for k in _SDS:
        np.testing.assert_array_equal(same[k], same[f"{k}_full"])
        want = np.sqrt(np.mean(sub.pairs[k] ** 2))
        got = getattr(sub.variance, k.replace("rater", "worker"))
        assert got == pytest.approx(want, rel=1e-12)
    with pytest.raises(ParameterError, match=r"`max_pairs`"):
        variance_components(s, max_pairs=0)


def test_cli_components_max_pairs(study, tmp_path, capsys):
    out = tmp_path / "vc.parquet"
    code, stdout, stderr = run_cli(["components", str(study), "--max-pairs", "6", "-o",
                                    str(out)], capsys)
    assert code == 0, stderr
    assert "note: pooled over a balanced subsample of 6 of 15 pairs" in stdout
    assert len(pd.read_parquet(out)) == 6
    code, _, stderr = run_cli(["components", str(study), "--max-pairs", "-1", "-o",
                               str(tmp_path / "bad.parquet")], capsys)
    assert code == 2 and "--max-pairs" in stderr
