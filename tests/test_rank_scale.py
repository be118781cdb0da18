"""Leaderboards at shared-task size: planted tiers at 60 and 100 systems, the resampling
floor (multistat.pfloor) and its warning.

Planted tiers: system s has true mean -GAP * (s // 10) (tiers of 10 equal systems), plus a
shared instance effect and independent N(0, 1) noise per system and instance. With
N = 60 instances the standard error of a pair's mean difference is sqrt(2 / 60) = 0.18,
so GAP = 2 is 11 standard errors: every pair across tiers is far beyond every resample,
every pair within a tier is a true null. The expected clusters are the tiers; the top
tier's ``beats`` is the number of systems below it (S - 10).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import cube, pfloor
from multistat.errors import ResamplingFloorWarning

GAP, N, PER_TIER = 2.0, 60, 10


def tier_study(n_systems, *, seed=0):
    rng = np.random.default_rng(seed)
    tiers = np.arange(n_systems) // PER_TIER
    x = (-GAP * tiers[:, None] + rng.normal(size=N)[None, :]
         + rng.normal(size=(n_systems, N)))
    names = [f"s{i:03d}" for i in range(n_systems)]
    ds = cube.make_dataset("planted", x[:, None, :], systems=names, metrics=["score"],
                           instances=np.arange(N))
    return cube.make_study([ds]), pd.Series(tiers + 1, index=names)


def check_tiers(board, tiers):
    S = len(tiers)
    got = board.set_index("system")["cluster"]
    assert got.max() == S // PER_TIER
    pd.testing.assert_series_equal(got.sort_index(), tiers.sort_index(),
                                   check_names=False)
    top = board[board["cluster"] == 1]
    assert (top["beats"] == S - PER_TIER).all()
    # every system beats the systems of the lower tiers; a pair within a tier (a true
    # null) is rejected with family-wise probability <= alpha, so beats may exceed that
    below = S - PER_TIER * board.set_index("system")["cluster"]
    assert (board.set_index("system")["beats"] >= below).all()


@pytest.mark.parametrize("n_systems", [60, 100])
def test_defaults_find_planted_tiers(n_systems):
    study, tiers = tier_study(n_systems)
    board = multistat.rank(study)  # defaults: bootstrap, 10,000 resamples, "auto"
    meta = board.attrs["multistat"]
    assert (meta["test"], meta["correction"], meta["n_resamples"]) == (
        "bootstrap", "westfall-young", 10_000)
    assert meta["floor_notes"] == []
    check_tiers(board, tiers)


def test_cli_defaults_find_planted_tiers(tmp_path, capsys):
    from multistat.cli import main
    from multistat.io import read_parquet

    study, tiers = tier_study(60)
    src, out = tmp_path / "tiers.nc", tmp_path / "ranking.parquet"
    cube.save(study, src)
    assert main(["rank", str(src), "--out", str(out)]) in (0, None)
    text = capsys.readouterr().out
    assert "bootstrap test, westfall-young correction, alpha=0.05" in text
    assert "cluster 6: " in text and "cluster 7" not in text and "note:" not in text
    check_tiers(read_parquet(out), tiers)


@pytest.mark.filterwarnings("always::multistat.errors.ResamplingFloorWarning")
def test_holm_999_resamples_over_1770_pairs_warns(tmp_path, capsys):
    from multistat.cli import main
    from multistat.io import read_parquet

    study, _ = tier_study(60)
    # 60 systems: 1,770 pairs; the two-sided bootstrap p is at least 2/1000, Holm's
    # smallest adjusted p 1770 * 2/1000 = 3.54 -> capped at 1; it reaches 0.05 when
    # 2 * 1770 / (B + 1) <= 0.05, i.e. B + 1 >= 70,800 (by hand)
    msg = (r"bootstrap test with holm correction over 1,770 pairs \(planted / score\): the "
           r"smallest adjusted p-value it can give is 1 > alpha = 0\.05 .*B = 999 "
           r"resamples\).*correction='westfall-young'.* or n_resamples >= 70,799")
    with pytest.warns(ResamplingFloorWarning, match=msg):
        board = multistat.rank(study, correction="holm", n_resamples=999)
    assert board["cluster"].max() == 1  # what the warning says: no pair can be decided
    assert len(board.attrs["multistat"]["floor_notes"]) == 1
    # the command line: a one-line warning on stderr, the note on stdout and in Parquet
    src, out = tmp_path / "tiers.nc", tmp_path / "ranking.parquet"
    cube.save(study, src)
    assert main(["rank", str(src), "--out", str(out), "--correction", "holm",
                 "--n-resamples", "999"]) in (0, None)
    cap = capsys.readouterr()
    assert "multistat: warning: bootstrap test with holm correction over 1,770" in cap.err
    assert "note: bootstrap test with holm correction over 1,770 pairs" in cap.out
    notes = read_parquet(out).attrs["multistat"]["floor_notes"]
    assert len(notes) == 1 and "n_resamples >= 70,799" in notes[0]


def test_floor_is_what_the_tests_give():
    # an observed difference beyond every resample gets exactly the floor
    from multistat.significance.resampling import bootstrap_test, permutation_test

    rng = np.random.default_rng(1)
    x = rng.normal(size=40) + 10.0
    y = rng.normal(size=40)
    for B in (99, 999):
        p = bootstrap_test(x, y, n_resamples=B, seed=0).p_value
        assert p == pfloor.smallest_pvalue("bootstrap", B) == 2 / (B + 1)
        p = permutation_test(x, y, n_resamples=B, seed=0).p_value
        assert p == pfloor.smallest_pvalue("permutation", B) == 1 / (B + 1)
    # exact enumeration (2**10 <= 5000 sign vectors): the all-positive arrangement and its
    # mirror are the two most extreme of 1,024
    p = permutation_test(x[:10], y[:10], n_resamples=5000).p_value
    assert p == pfloor.smallest_pvalue("permutation", 5000, n_units=10) == 2 / 1024
    assert pfloor.smallest_pvalue("t", 5000) is None


@pytest.mark.parametrize("method", ["holm", "bonferroni", "sidak", "holm-sidak",
                                    "simes-hochberg", "hommel", "fdr_bh", "fdr_by"])
def test_smallest_adjusted_against_statsmodels(method):
    from statsmodels.stats.multitest import multipletests

    f, m = 2 / 1001, 45
    rng = np.random.default_rng(2)
    got = pfloor.smallest_adjusted(f, m, method)
    # no family of p-values >= f gets a smaller adjusted p (random families and all at f)
    for _ in range(20):
        p = f + rng.exponential(0.01, size=m) * (rng.random(m) < 0.5)
        assert multipletests(p, method=method)[1].min() >= got - 1e-15
    assert multipletests(np.full(m, f), method=method)[1].min() == pytest.approx(got)
    if method in ("holm", "bonferroni"):
        assert got == pytest.approx(45 * 2 / 1001)  # leaderboards guide: 0.09 at 1000 resamples
    assert pfloor.smallest_adjusted(f, m, "westfall-young") == f


def test_resamples_needed_is_the_boundary():
    for test, m, corr, alpha in (("bootstrap", 1770, "holm", 0.05),
                                 ("permutation", 4950, "bonferroni", 0.01),
                                 ("bootstrap", 11_175, "sidak", 0.05),
                                 ("bootstrap", 45, "fdr_bh", 0.05)):
        b = pfloor.resamples_needed(test, m, corr, alpha)
        assert pfloor.floor_note(test, b, m, corr, alpha) is None
        assert pfloor.floor_note(test, b - 1, m, corr, alpha) is not None
    # by hand: Holm over 1,770 pairs needs 2 * 1770 / (B + 1) <= 0.05
    assert pfloor.resamples_needed("bootstrap", 1770, "holm", 0.05) == 70_799
    assert pfloor.resamples_needed("permutation", 1770, "holm", 0.05) == 35_399
    # exact permutation over 5 units: at least 2/32 whatever B; no B helps
    note = pfloor.floor_note("permutation", 100, 10, "holm", 0.05, n_units=5)
    assert "exact permutation p-value over 5 units is at least 0.0625" in note
    assert note.endswith("or more evaluation units")


def test_the_system_counts_the_docs_give_for_the_holm_floor():
    """docs/guides/leaderboards.md ("Leaderboards at shared-task size"), pfloor's and rank's docstrings: with
    B = 10,000 and Holm at alpha 0.05 the bootstrap (p >= 2/(B + 1) two-sided) cannot
    reject from 23 systems (253 pairs) on, the permutation test (p >= 1/(B + 1)) from 33
    (528): 253 x 2/10001 = 0.0506 > 0.05 >= 231 x 2/10001; 528/10001 > 0.05 >= 496/10001."""
    from multistat.pfloor import floor_note

    for test, first in (("bootstrap", 23), ("permutation", 33)):
        pairs = [(s, s * (s - 1) // 2) for s in (first - 1, first)]
        assert floor_note(test, 10_000, pairs[0][1], "holm", 0.05) is None
        assert floor_note(test, 10_000, pairs[1][1], "holm", 0.05) is not None
