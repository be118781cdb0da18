"""A rater-aware leaderboard (``rank(test="mixed")``, ``multistat rank --test mixed``) and the
flag on mixed-model rows with very few Satterthwaite degrees of freedom (``low_df``).

Data: Google's MQM ratings of WMT21 TED talks, English-German (tests/data/mqm-ted-ende,
Apache-2.0), scored as pipelines/human-eval/make_scores.py does (minus the weighted error
count of each rater's annotations of a segment). Each system x segment was rated by one of
four raters, so the rater slopes are estimated from four raters: on this slice the
Facebook-AI vs UEdin fit has 1.66 Satterthwaite df and Facebook-AI vs Nemo 564 (the fits
themselves are checked against statsmodels and the classical balanced-design df in
tests/test_mixed.py and tests/test_human.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import multistat
from multistat.errors import LowDegreesOfFreedomWarning, ParameterError
from multistat.leaderboard.ranking import better_matrix, clusters, rank_with_pairs, score_order
from multistat.significance.mixed import LOW_DF, LOW_DF_NOTE

SOURCE = Path(__file__).resolve().parent / "data" / "mqm-ted-ende" / "ratings.tsv.gz"
SYSTEMS = ("Facebook-AI", "Nemo", "UEdin")


@pytest.fixture(scope="module")
def study_path(tmp_path_factory):
    errors = pd.read_csv(SOURCE, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
    weight = errors["severity"].map({"Major": 5.0, "Minor": 1.0, "No-error": 0.0})
    weight[(errors["severity"] == "Minor") & (errors["category"] == "Fluency/Punctuation")] = 0.1
    scores = (errors.assign(mqm=-weight)
              .groupby(["system", "doc", "seg_id", "rater"], as_index=False)["mqm"].sum())
    scores["segment"] = scores["doc"] + "/" + scores["seg_id"].astype(str)
    scores = scores[scores["system"].isin(SYSTEMS)]
    path = tmp_path_factory.mktemp("ted") / "ted.csv"
    scores[["system", "segment", "rater", "mqm"]].to_csv(path, index=False)
    out = path.with_suffix(".nc")
    multistat.save_study(multistat.load(path, score_col="mqm", instance_col="segment",
                                        rater_col="rater", dataset="ted"), out)
    return out


@pytest.fixture(scope="module")
def ranked(study_path):
    with pytest.warns(LowDegreesOfFreedomWarning, match=r"1 of 3 fit\(s\) of dataset 'ted' "
                      r"have Satterthwaite df below 2 \(smallest 1\.7: Facebook-AI vs UEdin"):
        return rank_with_pairs(multistat.open_study(study_path), test="mixed",
                               n_resamples=200)


def test_low_df_rows_are_flagged_with_a_note(ranked):
    pairs = ranked.pairs
    assert (pairs["test"] == "mixed").all()
    df = pairs["df"].to_numpy(float)
    low = pairs["low_df"].astype(bool).to_numpy()
    np.testing.assert_array_equal(low, df < LOW_DF)
    assert low.sum() == 1 and df[~low].min() > 500   # one pair on 1.66 df, two on > 500
    assert all(LOW_DF_NOTE in n for n in pairs.loc[low, "note"])
    assert not any(LOW_DF_NOTE in n for n in pairs.loc[~low, "note"])
    # the t quantile behind the flag: at 2 df already 4.30 (scipy.stats.t(2).ppf(0.975))
    from scipy.stats import t
    assert t(LOW_DF).ppf(0.975) == pytest.approx(4.302652729911275)
    # the interval of the low-df row is wider than 2 x 4.30 standard errors
    row = pairs[low].iloc[0]
    assert (row["ci_high"] - row["ci_low"]) / row["se"] > 2 * 4.30


def test_rank_mixed_clusters_come_from_the_mixed_model_with_holm(ranked, study_path):
    board, pairs = ranked.table, ranked.pairs
    meta = board.attrs["multistat"]
    assert (meta["test"], meta["correction"]) == ("mixed", "holm")
    assert "not raters" in meta["rank_interval"]
    assert len(meta["low_df_notes"]) == 1 and "1 of 3 pairs" in meta["low_df_notes"][0]
    # the same decisions as compare's mixed model with Holm, and the WMT rule on them
    with pytest.warns(LowDegreesOfFreedomWarning):
        table = multistat.compare(multistat.open_study(study_path), tests=["mixed"],
                                  correction="holm", effect_sizes=False)
    np.testing.assert_array_equal(table["reject"].to_numpy(bool),
                                  pairs["reject"].to_numpy(bool))
    np.testing.assert_allclose(table["p_adjusted"], pairs["p_adjusted"], rtol=0, atol=0)
    names = list(board.sort_values("system")["system"])
    idx = {s: i for i, s in enumerate(names)}
    est = table["estimate"].to_numpy(float)
    better = better_matrix(len(names), table["system_a"].map(idx), table["system_b"].map(idx),
                           table["reject"].to_numpy(bool), np.sign(est))
    score = board.set_index("system").loc[names, "score"].to_numpy(float)
    want = clusters(score_order(score, True, names), better)
    got = board.set_index("system").loc[names, "cluster"].to_numpy(int)
    np.testing.assert_array_equal(got, want)
    assert board["beats"].sum() == int(table["reject"].sum())


def test_rank_mixed_refuses_westfall_young(study_path):
    with pytest.raises(ParameterError, match=r"`correction` 'westfall-young' cannot decide a "
                       r"leaderboard of the closed-form 'mixed' test.*'holm'"):
        multistat.rank(multistat.open_study(study_path), test="mixed",
                       correction="westfall-young")


def test_cli_rank_mixed_notes_low_df_and_refuses_westfall_young(study_path, tmp_path,
                                                                 capsys):
    out = tmp_path / "board.parquet"
    code, stdout, stderr = run_cli(["rank", str(study_path), "--test", "mixed",
                                    "--n-resamples", "200", "-o", str(out)], capsys,
                                   warnings_always=True)
    assert code == 0, stderr
    assert "mixed test, holm correction" in stdout
    assert "note: ted / mqm: 1 of 3 pairs were decided on fewer than 2 Satterthwaite df" \
        in stdout
    assert "multistat: warning: mixed: 1 of 3 fit(s)" in stderr
    code, _, stderr = run_cli(["rank", str(study_path), "--test", "mixed", "--correction",
                               "westfall-young", "-o", str(tmp_path / "b2.parquet")], capsys)
    assert code == 2
    assert stderr.strip().count("\n") == 0
    assert "`--correction` 'westfall-young' cannot decide" in stderr
