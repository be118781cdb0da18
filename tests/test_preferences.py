"""Pairwise preferences: Bradley-Terry leaderboards and head-to-head tests.

References: statsmodels GLM(Binomial) / Logit and scipy.optimize for the maximum
likelihood fits, scipy.stats.binomtest for one judgment per item, a plain loop over
battle resamples for the bootstrap, brute-force enumeration for the sign-flip test.
Real data: MQM newstest2020 zh-en segment scores (tests/data), turned into battles.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import MQM_ZHEN
from scipy import optimize, stats

import multistat
from multistat.human import preferences as P
from multistat.errors import DataValidationError, ParameterError


# ------------------------------------------------------------------------------ data
def simulate_battles(strength, n, *, p_tie=0.1, seed=0, names=None):
    """Battles between random pairs with Bradley-Terry win probabilities (logits)."""
    rng = np.random.default_rng(seed)
    S = len(strength)
    a = rng.integers(0, S, n)
    b = (a + rng.integers(1, S, n)) % S
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    tie = rng.random(n) < p_tie
    awin = ~tie & (rng.random(n) < p)
    names = np.array([f"s{i:02d}" for i in range(S)] if names is None else names)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b],
                         "winner": np.where(tie, "tie",
                                            np.where(awin, "model_a", "model_b"))})


def mqm_battles(n_segments=400):
    """Real battles: on each MQM zh-en segment every pair of systems; the system with
    the smaller error penalty wins, equal penalties tie."""
    mqm = pd.read_csv(MQM_ZHEN, sep=r"\s+")
    wide = mqm.pivot(index="seg_id", columns="system", values="mqm_avg_score")
    wide = wide.iloc[:n_segments]
    rows = []
    for sa, sb in itertools.combinations(wide.columns, 2):
        d = wide[sa].to_numpy() - wide[sb].to_numpy()
        rows.append(pd.DataFrame({"model_a": sa, "model_b": sb, "item": wide.index,
                                  "winner": np.where(d > 0, "model_a",
                                                     np.where(d < 0, "model_b", "tie"))}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(7)
    strength = rng.normal(0, 0.8, 20)
    return strength, simulate_battles(strength, 20_000, seed=1)


def design(bt):
    """Pair rows: +1 for a, -1 for b (system 0 dropped: the reference)."""
    X = np.zeros((len(bt.ia), len(bt.systems)))
    X[np.arange(len(bt.ia)), bt.ia] = 1
    X[np.arange(len(bt.ia)), bt.ib] = -1
    return X[:, 1:]


# ============================================================ Bradley-Terry: the fit
def test_half_ties_equal_statsmodels_glm(planted):
    _, battles = planted
    bt = P.aggregate_battles(battles)
    beta, _ = P.fit_bradley_terry(bt)
    c = bt.counts
    n = c.sum(1)
    # the logistic regression of the outcome (1, 1/2, 0) on the system indicators:
    # statsmodels GLM Binomial on the per-pair shares weighted by the battles
    glm = sm.GLM((c[:, 0] + c[:, 2] / 2) / n, design(bt), family=sm.families.Binomial(),
                 var_weights=n).fit(tol=1e-13)
    elo = P.ELO_PER_LOGIT * (beta[1:] - glm.params)
    assert np.abs(elo).max() < 1e-6  # the issue asks 0.05 Elo points


def test_no_ties_equal_statsmodels_logit_per_battle():
    # per battle, the textbook way: Logit of "a won" on +1/-1 indicators, no intercept
    rng = np.random.default_rng(3)
    battles = simulate_battles(rng.normal(0, 1, 8), 3000, p_tie=0.0, seed=4)
    bt = P.aggregate_battles(battles)
    idx = {s: i for i, s in enumerate(bt.systems)}
    X = np.zeros((len(battles), len(bt.systems)))
    X[np.arange(len(battles)), battles["model_a"].map(idx)] = 1
    X[np.arange(len(battles)), battles["model_b"].map(idx)] = -1
    y = (battles["winner"] == "model_a").to_numpy(float)
    logit = sm.Logit(y, X[:, 1:]).fit(disp=0, tol=1e-12, method="newton")
    beta, _ = P.fit_bradley_terry(bt)
    assert np.abs(P.ELO_PER_LOGIT * (beta[1:] - logit.params)).max() < 1e-6
    board = multistat.bradley_terry(battles, n_resamples=50)
    ref = 1000 + P.ELO_PER_LOGIT * (np.r_[0, logit.params] - np.r_[0, logit.params].mean())
    got = board.set_index("system").loc[bt.systems, "score"].to_numpy()
    assert np.abs(got - ref).max() < 1e-6


def test_davidson_equals_scipy_maximum_likelihood():
    rng = np.random.default_rng(5)
    battles = simulate_battles(rng.normal(0, 1, 6), 4000, p_tie=0.2, seed=6)
    bt = P.aggregate_battles(battles)
    wa, wb, t = bt.counts.T

    def nll(par):  # Davidson (1970), per pair: pi_i / (pi_i + pi_j + nu sqrt(pi_i pi_j))
        beta = np.r_[0.0, par[:-1]]
        d = beta[bt.ia] - beta[bt.ib]
        logD = np.log(np.exp(d / 2) + np.exp(-d / 2) + np.exp(par[-1]))
        return -np.sum(wa * d / 2 - wb * d / 2 + t * par[-1] - (wa + wb + t) * logD)

    ref = optimize.minimize(nll, np.zeros(len(bt.systems)), method="BFGS",
                            options={"gtol": 1e-9})
    beta, nu = P.fit_bradley_terry(bt, "davidson")
    assert np.abs(P.ELO_PER_LOGIT * (beta[1:] - ref.x[:-1])).max() < 0.05
    assert nu == pytest.approx(math.exp(ref.x[-1]), rel=1e-4)
    board = multistat.bradley_terry(battles, ties="davidson", n_resamples=100)
    assert board.attrs["multistat"]["davidson_nu"] == pytest.approx(nu)


def test_planted_strengths_are_recovered(planted):
    strength, battles = planted
    board = multistat.bradley_terry(battles, ties="half", n_resamples=300, seed=0)
    assert list(board.columns[:9]) == ["system", "score", "ci_low", "ci_high", "rank",
                                       "rank_ci_low", "rank_ci_high", "n_battles",
                                       "win_rate"]
    got = board.set_index("system").loc[[f"s{i:02d}" for i in range(20)], "score"]
    rho = stats.spearmanr(got, strength)[0]
    assert rho >= 0.95, rho
    # the Elo scale: 400 / ln 10 points per logit, the mean at 1000
    assert board["score"].mean() == pytest.approx(1000)
    assert (board["ci_low"] <= board["score"]).all() and (board["score"] <= board["ci_high"]).all()
    assert (board["rank_ci_low"] <= board["rank"]).all()
    assert (board["rank"] <= board["rank_ci_high"]).all()
    assert board["n_battles"].sum() == 2 * len(battles)
    assert board["p_best"].sum() == pytest.approx(1)


def test_anchor_fixes_one_system_at_1000(planted):
    _, battles = planted
    mean = multistat.bradley_terry(battles, n_resamples=100, seed=3)
    fixed = multistat.bradley_terry(battles, n_resamples=100, seed=3, anchor="s05")
    row = fixed.set_index("system").loc["s05"]
    assert row["score"] == pytest.approx(1000) and row["ci_low"] == pytest.approx(1000)
    assert row["ci_high"] == pytest.approx(1000)
    m, f = mean.set_index("system")["score"], fixed.set_index("system")["score"]
    np.testing.assert_allclose((f - f["s05"]).sort_index(), (m - m["s05"]).sort_index(),
                               atol=1e-9)
    np.testing.assert_array_equal(mean["rank_ci_low"], fixed["rank_ci_low"])
    np.testing.assert_array_equal(mean["cluster"], fixed["cluster"])


# ========================================================== Bradley-Terry: bootstrap
def test_bootstrap_agrees_with_resampling_the_battles():
    # reference: resample battles with replacement, aggregate, refit (a Python loop);
    # ours draws the pair x outcome counts as one multinomial and fits all at once
    rng = np.random.default_rng(11)
    battles = simulate_battles(rng.normal(0, 0.7, 5), 2000, seed=12)
    ours = P.aggregate_battles(battles)
    beta, _ = P.fit_bradley_terry(ours)
    boot = P.bootstrap_fits(ours, beta, 0.0, False, 2000, 0)
    dist = boot.dist
    assert boot.unconverged == 0 and np.isfinite(dist).all() and boot.unit == "battles"
    ref = []
    loop_rng = np.random.default_rng(1)
    for _ in range(400):
        sample = battles.iloc[loop_rng.integers(0, len(battles), len(battles))]
        agg = P.aggregate_battles(sample)  # systems in the sample's order: map to ours
        fit = P.fit_bradley_terry(agg)[0]
        ref.append(pd.Series(fit, agg.systems)[ours.systems].to_numpy())
    ref = np.array(ref)
    centre = lambda b: b - b.mean(1, keepdims=True)
    sd_ours, sd_ref = centre(dist).std(0), centre(ref).std(0)
    # Monte Carlo error of an SD from 400 resamples: about 1 / sqrt(800) = 3.5 %
    np.testing.assert_allclose(sd_ours, sd_ref, rtol=0.15)
    np.testing.assert_allclose(centre(dist).mean(0), centre(beta[None])[0], atol=0.02)


def test_seeded_and_independent_of_the_batch_size(planted, monkeypatch):
    _, battles = planted
    one = multistat.bradley_terry(battles, n_resamples=120, seed=9)
    monkeypatch.setattr(P, "DRAW_BUDGET", 2_000)  # a few resamples per drawn chunk
    monkeypatch.setattr(P, "FIT_BLOCK", 1_000)  # and per block of the chord iteration
    small = multistat.bradley_terry(battles, n_resamples=120, seed=9)
    pd.testing.assert_frame_equal(one, small)
    other = multistat.bradley_terry(battles, n_resamples=120, seed=10)
    assert not np.allclose(one["ci_low"], other["ci_low"])


def test_clusters_follow_the_rank_rule():
    # three tiers far apart, systems within a tier equal: the WMT rule gives the tiers
    strength = np.repeat([2.0, 0.0, -2.0], 3)
    battles = simulate_battles(strength, 30_000, seed=2)
    board = multistat.bradley_terry(battles, n_resamples=400)
    tiers = board.set_index("system")["cluster"].sort_index().to_numpy()
    np.testing.assert_array_equal(tiers, np.repeat([1, 2, 3], 3))
    # rank ranges: a tier-2 system is beaten by the 3 above and beats the 3 below
    mid = board[board["cluster"] == 2]
    assert (mid["beaten_by"] == 3).all() and (mid["beats"] == 3).all()
    assert board.attrs["multistat"]["correction"] == "holm"


def test_davidson_and_half_rank_alike_on_real_mqm_battles():
    battles = mqm_battles(300)
    half = multistat.bradley_terry(battles, n_resamples=200)
    dav = multistat.bradley_terry(battles, ties="davidson", n_resamples=200)
    assert stats.spearmanr(half.set_index("system")["score"].sort_index(),
                           dav.set_index("system")["score"].sort_index())[0] > 0.95
    assert dav.attrs["multistat"]["davidson_nu"] > 0


def test_reads_csv_parquet_jsonl_alike(tmp_path, planted):
    _, battles = planted
    part = battles.iloc[:3000]
    boards = []
    for ext in ("csv", "parquet", "jsonl"):
        path = tmp_path / f"battles.{ext}"
        if ext == "csv":
            part.to_csv(path, index=False)
        elif ext == "parquet":
            part.to_parquet(path)
        else:
            part.to_json(path, orient="records", lines=True)
        boards.append(multistat.bradley_terry(path, n_resamples=50))
    pd.testing.assert_frame_equal(boards[0], boards[1])
    pd.testing.assert_frame_equal(boards[0], boards[2])


# ========================================================== Bradley-Terry: bad input
def frame(rows):
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


GOOD = [("x", "y", "model_a"), ("y", "x", "model_a"), ("x", "z", "tie"),
        ("z", "y", "model_a"), ("y", "z", "tie")]


@pytest.mark.parametrize("rows, match", [
    (GOOD + [("x", "y", "model_c")], (r"column 'winner' has unknown value 'model_c' in "
                                     r"row 6; allowed: 'model_a', 'model_b', 'tie'")),
    (GOOD + [("x", "x", "tie")], r"system 'x' plays against itself in row 6"),
    (GOOD + [("u", "v", "tie")], (r"comparison graph is not connected: 2 groups of "
                                 r"systems never meet \(\{u, v\}; \{x, y, z\}\)")),
    ([("x", "y", "model_a"), ("x", "z", "model_a"), ("y", "z", "tie")],
     r"system\(s\) \['x'\] never lose \(nor tie\)"),
    (GOOD + [("x", None, "tie")], r"column 'model_b' is empty in row 6"),
])
def test_bad_battles(rows, match):
    with pytest.raises(DataValidationError, match=match):
        multistat.bradley_terry(frame(rows), n_resamples=10)


def test_bad_parameters_and_systems():
    with pytest.raises(DataValidationError, match=r"system\(s\) \['w'\] never play"):
        multistat.bradley_terry(frame(GOOD), systems=["w", "x", "y", "z"])
    with pytest.raises(DataValidationError, match=r"no column 'left' \(`model_a`\)"):
        multistat.bradley_terry(frame(GOOD), model_a="left")
    with pytest.raises(DataValidationError, match="ties='davidson' needs both ties and "
                                                  "decided battles; no battle is a tie"):
        multistat.bradley_terry(frame([("x", "y", "model_a"), ("y", "x", "model_a"),
                                       ("y", "z", "model_a"), ("z", "y", "model_a"),
                                       ("x", "z", "model_b")]), ties="davidson")
    with pytest.raises(ParameterError, match=r"`anchor` 'q' is not a system"):
        multistat.bradley_terry(frame(GOOD), anchor="q")
    with pytest.raises(ParameterError, match="ties"):
        multistat.bradley_terry(frame(GOOD), ties="split")


# ================================================================== preference_test
@pytest.mark.parametrize("wins, losses, ties", [(14, 5, 3), (30, 30, 0), (0, 7, 2),
                                                (61, 39, 10)])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_one_judgment_per_item_is_binomtest(wins, losses, ties, alternative):
    j = pd.DataFrame({"winner": ["A"] * wins + ["B"] * losses + ["tie"] * ties,
                      "item": np.arange(wins + losses + ties)})
    ref = stats.binomtest(wins, wins + losses, alternative=alternative)
    for item_col in (None, "item"):
        res = multistat.preference_test(j, winner_col="winner", a="A", b="B",
                                        item_col=item_col, ties="exclude",
                                        alternative=alternative)
        assert res.p_value == ref.pvalue  # exactly
        assert res.win_share == pytest.approx(wins / (wins + losses))
        ci = ref.proportion_ci(0.95, method="exact")
        assert res.confidence_interval() == pytest.approx((ci.low, ci.high))
        assert (res.wins, res.losses, res.ties) == (wins, losses, ties)
    split = multistat.preference_test(j, a="A", b="B", ties="split",
                                      alternative=alternative)
    assert split.p_value == ref.pvalue  # a split tie carries no evidence
    assert split.win_share == pytest.approx((wins + ties / 2) / (wins + losses + ties))


def heterogeneous_items(n_items, raters, seed):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n_items)  # items differ in which system they favour
    rows = []
    for i in range(n_items):
        for r in range(raters):
            u = rng.random()
            rows.append((f"item{i}", f"r{r}", "tie" if u < 0.1 else
                         ("A" if rng.random() < p[i] else "B")))
    return pd.DataFrame(rows, columns=["item", "rater", "winner"])


@pytest.mark.parametrize("n_items", [10, 60])  # exact enumeration, Monte Carlo
def test_three_copies_of_every_judgment_give_the_same_p(n_items):
    j = heterogeneous_items(n_items, 3, seed=n_items)
    one = multistat.preference_test(j, a="A", b="B", item_col="item")
    three = multistat.preference_test(pd.concat([j, j, j]), a="A", b="B", item_col="item")
    assert three.p_value == one.p_value
    assert three.win_share == one.win_share
    assert "sign-flip" in one.method
    assert one.method.endswith("(exact enumeration)") == (n_items == 10)
    # without the item column the copies look independent: p shrinks (why item_col)
    naive = multistat.preference_test(pd.concat([j, j, j]), a="A", b="B")
    assert naive.p_value < multistat.preference_test(j, a="A", b="B").p_value


def test_sign_flip_exact_by_brute_force():
    j = heterogeneous_items(9, 4, seed=3)
    res = multistat.preference_test(j, a="A", b="B", item_col="item")
    cnt = j.assign(w=j["winner"] == "A", l=j["winner"] == "B").groupby("item")[["w", "l"]].sum()
    x = (cnt["w"] / (cnt["w"] + cnt["l"]) - 0.5).dropna().to_numpy()
    x = x[x != 0]
    null = [abs(np.dot(s, x)) for s in itertools.product([1, -1], repeat=len(x))]
    ref = np.mean(np.array(null) >= abs(x.sum()) - 1e-12)
    assert res.p_value == pytest.approx(ref, abs=1e-12)
    assert res.method == "sign-flip test over units (exact enumeration)"
    # Monte Carlo agrees within its error
    mc = P.sign_flip_pvalues(x[None], n_resamples=20_000,
                             rng=np.random.default_rng(0))[0][0]
    assert abs(mc - ref) < 4 * math.sqrt(ref * (1 - ref) / 20_000) + 1e-4


def test_rater_as_the_unit_and_real_mqm_items():
    j = heterogeneous_items(30, 5, seed=8)
    res = multistat.preference_test(j, a="A", b="B", rater_col="rater")
    assert res.unit == "rater" and res.n_units == 5
    # real data: MQM zh-en, two systems, one judgment per segment -> binomtest
    b = mqm_battles(2000)
    pair = b[(b["model_a"] == "Huoshan_Translate.919") & (b["model_b"] == "WeChat_AI.1525")]
    pair = pair.assign(winner=pair["winner"].map({"model_a": "Huoshan_Translate.919",
                                                  "model_b": "WeChat_AI.1525",
                                                  "tie": "tie"}))
    res = multistat.preference_test(pair, a="Huoshan_Translate.919", b="WeChat_AI.1525",
                                    item_col="item")
    assert res.p_value == stats.binomtest(res.wins, res.wins + res.losses).pvalue


def test_type_i_error_respects_items():
    # null: items favour A or B (Beta(2, 2)), 5 raters each: the sign-flip test over
    # items holds alpha; the binomial test over judgments does not
    from validation._preferences import preference_rows

    rows = pd.DataFrame(preference_rows(replicates=1000, sizes=(40,), raters=5, seed=1))
    ours = rows[rows["test"] == "preference_test (items)"].iloc[0]
    naive = rows[rows["test"] == "binomial over judgments (ignores items)"].iloc[0]
    assert ours["rate"] <= 0.05 + 3 * ours["se_binomial"]
    assert naive["rate"] > 0.05 + 3 * naive["se_binomial"]
    assert naive["verdict"] == "liberal" and naive["reason"]


@pytest.mark.parametrize("kwargs, match", [
    ({"a": "A", "b": "A"}, r"`a` and `b` are the same system 'A'"),
    ({"a": "A", "b": "C"}, (r"column 'winner' has value 'B' in rows 3, 4; allowed: 'A', "
                           r"'C', 'tie'")),
    ({"a": "A", "b": "B", "item_col": "doc"}, r"no column 'doc' \(`item_col`\)"),
    ({"a": "A", "b": "B", "ties": "half"}, r"`ties`.*'exclude', 'split'"),
])
def test_preference_test_bad_input(kwargs, match):
    j = pd.DataFrame({"winner": ["A", "A", "B", "B", "tie"]})
    with pytest.raises((DataValidationError, ParameterError), match=match):
        multistat.preference_test(j, **kwargs)


def test_all_ties_is_an_error():
    with pytest.raises(DataValidationError, match=r"no judgment prefers 'A' or 'B' \(all "
                                                  r"ties\)"):
        multistat.preference_test(pd.DataFrame({"winner": ["tie"] * 4}), a="A", b="B")


def test_calibration_suite_includes_the_preference_rows(tmp_path):
    from validation import calibration as C
    table = C.run_calibration(distributions=(), sizes=(), replicates=200, seed=2,
                              preferences=True)
    assert set(table["test"]) == {"preference_test (items)",
                                  "binomial over judgments (ignores items)"}
    assert (table["n"].tolist() == [30, 30, 100, 100]) and (table["replicates"] == 200).all()
    _, md = C.write_reports(table, tmp_path)
    assert "preference_test (items)" in md.read_text()


# ============================================== win share and interval: one quantity
def test_win_share_and_its_interval_describe_the_same_mean():
    # two judgments per item: 20 items A-A, 1 item B-B, 17 items split 1-1. The mean
    # item share is 0.5 + (20 * 0.5 - 0.5) / 38 = 0.75; a Clopper-Pearson interval of
    # the 21 decided items (20 of 21: [0.762, 0.999]) would not even contain it
    rows = [(f"i{k}", w) for k in range(20) for w in ("A", "A")]
    rows += [("j0", "B"), ("j0", "B")]
    rows += [(f"k{k}", w) for k in range(17) for w in ("A", "B")]
    j = pd.DataFrame(rows, columns=["item", "winner"])
    res = multistat.preference_test(j, a="A", b="B", item_col="item")
    x = np.r_[np.full(20, 0.5), -0.5, np.zeros(17)]
    assert res.win_share == pytest.approx(0.75)
    assert res.ci_low <= res.win_share <= res.ci_high
    # the same mean's Student t interval (scipy), clipped to [0, 1]
    ref = stats.t.interval(0.95, len(x) - 1, loc=0.5 + x.mean(), scale=stats.sem(x))
    assert (res.ci_low, res.ci_high) == pytest.approx((ref[0], min(1.0, ref[1])))
    assert res.interval == "student t over units"
    assert res.estimand == "mean over items of each item's share of A, wins / (wins + losses)"
    assert res.to_frame()["estimand"].iloc[0] == res.estimand
    # every item unanimous: the mean is the share of items won, Clopper-Pearson of it
    res = multistat.preference_test(j[~j["item"].str.startswith("k")], a="A", b="B",
                                    item_col="item")
    ci = stats.binomtest(20, 21).proportion_ci(0.95, method="exact")
    assert res.win_share == pytest.approx(20 / 21)
    assert (res.ci_low, res.ci_high) == pytest.approx((ci.low, ci.high))


# ====================================================== Bradley-Terry: sparse systems
def test_a_sparse_system_leaves_the_others_intervals_unchanged():
    # 10 systems with about 400 battles each, then one more system with 3 battles (it
    # beats s00 and s01, loses to s02): in about a third of the resamples it never loses
    rng = np.random.default_rng(3)
    base = simulate_battles(rng.normal(0, 0.5, 10), 2000, seed=4)
    extra = pd.DataFrame({"model_a": ["X", "s01", "X"], "model_b": ["s00", "X", "s02"],
                          "winner": ["model_a", "model_b", "model_b"]})
    before = multistat.bradley_terry(base, n_resamples=1000, seed=0).set_index("system")
    assert (before["n_battles"] > 300).all()
    with pytest.warns(P.PreferenceWarning, match=r"1 system\(s\) have no finite score.*"
                                                 r"'X': no finite score in \d+ of 1000"):
        after = multistat.bradley_terry(pd.concat([base, extra], ignore_index=True),
                                        n_resamples=1000, seed=0).set_index("system")
    common = before.index
    width0 = before["ci_high"] - before["ci_low"]
    width1 = (after["ci_high"] - after["ci_low"])[common]
    # the widths agree within the Monte Carlo error of 1000 resamples (a few %), not
    # 50 times wider as when the sparse system's divergent fits set the scale
    assert width0.between(40, 160).all()
    np.testing.assert_allclose(width1, width0, rtol=0.15)
    np.testing.assert_allclose(after.loc[common, "score"], before["score"], atol=2.0)
    np.testing.assert_allclose(after.loc[common, "ci_low"], before["ci_low"], atol=10.0)
    np.testing.assert_allclose(after.loc[common, "ci_high"], before["ci_high"], atol=10.0)
    meta = after.attrs["multistat"]
    assert list(meta["sparse_systems"]) == ["X"] and "never lost in" in \
        meta["sparse_systems"]["X"]
    assert meta["n_resamples_unconverged"] == 0 and meta["n_resamples_partial"] > 100
    assert meta["scale"].startswith("the scale is anchored on the 10 of 11 systems")
    assert after.loc["X", "ci_high"] == np.inf  # it never loses in > 2.5 % of them
    # the 10 systems' mean is the scale's zero, in the fit as in every resample
    assert after.loc[common, "score"].mean() == pytest.approx(1000)


def test_partial_resamples_fit_the_main_group_on_its_own_battles():
    # a resample in which X never loses: the others' scores are the maximum-likelihood
    # fit of the battles among them (statsmodels, without X), X scores +inf
    rng = np.random.default_rng(5)
    base = simulate_battles(rng.normal(0, 0.5, 4), 400, seed=6)
    bt = P.aggregate_battles(pd.concat([base, pd.DataFrame(
        {"model_a": ["X", "X"], "model_b": ["s00", "s01"], "winner": ["model_a", "tie"]})]))
    beta, _ = P.fit_bradley_terry(bt)
    pl = P._plan(bt, beta, 0.0, False)
    c = bt.counts.copy()
    x = list(bt.systems).index("X")
    with_x = (bt.ia == x) | (bt.ib == x)
    c[with_x] = 0
    c[with_x, np.where(bt.ia[with_x] == x, 0, 1)] = 2  # X wins both its battles
    got, ok = P._fit_resamples(pl, c[None])
    assert ok.all() and got[0, x] == np.inf
    rest = ~with_x
    X = np.zeros((rest.sum(), len(bt.systems)))
    X[np.arange(rest.sum()), bt.ia[rest]] = 1
    X[np.arange(rest.sum()), bt.ib[rest]] = -1
    keep = [s for s in range(len(bt.systems)) if s != x]
    n = c[rest].sum(1)
    glm = sm.GLM((c[rest, 0] + c[rest, 2] / 2) / n, X[:, keep[1:]],
                 family=sm.families.Binomial(), var_weights=n).fit(tol=1e-13)
    mine = got[0, keep] - got[0, keep[0]]
    np.testing.assert_allclose(mine[1:], glm.params, atol=1e-8)


def test_multinomial_rows_are_exact_multinomial_draws():
    # Poisson counts corrected to the total: the moments of Multinomial(N, p) and
    # totals exactly N (both corrections, adding and removing, occur)
    cells = np.array([40, 25, 3, 0, 12])
    N, p = cells.sum(), cells / cells.sum()
    R = 12_000
    X = P.multinomial_rows(cells, R, np.random.default_rng(1), np.random.default_rng(2))
    assert (X.sum(1) == N).all() and (X[:, 3] == 0).all()
    se = np.sqrt(N * p * (1 - p) / R)  # Monte Carlo error of each mean
    assert (np.abs(X.mean(0) - N * p) <= 4 * se + 1e-12).all()
    cov = np.cov(X.T)
    ref = N * (np.diag(p) - np.outer(p, p))  # multinomial covariance
    np.testing.assert_allclose(cov, ref, atol=0.05 * N * p.max())
    # one cell's marginal is Binomial(N, p_0): chi-square goodness of fit
    k = np.arange(N + 1)
    expected = stats.binom.pmf(k, N, p[0]) * len(X)
    use = expected > 5
    observed = np.bincount(X[:, 0], minlength=N + 1)
    obs = np.r_[observed[use], observed[~use].sum()]
    exp_ = np.r_[expected[use], expected[~use].sum()]
    assert stats.chisquare(obs, exp_ * obs.sum() / exp_.sum()).pvalue > 1e-3
    # the same rows whatever the batch
    parts = [P.multinomial_rows(cells, n, g1, g2) for g1, g2 in
             [(np.random.default_rng(1), np.random.default_rng(2))] for n in (10,)]
    g1, g2 = np.random.default_rng(1), np.random.default_rng(2)
    two = np.vstack([P.multinomial_rows(cells, 4, g1, g2), P.multinomial_rows(cells, 6, g1, g2)])
    np.testing.assert_array_equal(two, parts[0])


# ================================================ Bradley-Terry: resampling items
@pytest.mark.slow
def test_item_bootstrap_agrees_with_resampling_the_items():
    # real battles: every pair of MQM zh-en systems on each segment (an item); the
    # reference resamples segments with replacement, all their battles together
    battles = mqm_battles(60)
    ours = P.aggregate_battles(battles, item="item")
    assert ours.n_items == 60
    beta, _ = P.fit_bradley_terry(ours)
    boot = P.bootstrap_fits(ours, beta, 0.0, False, 1500, 0, unit="items")
    fin = np.isfinite(boot.dist).all(1)
    assert fin.mean() > 0.95 and boot.unit == "items"
    cols = battles[["model_a", "model_b", "winner"]].to_numpy()
    groups = [cols[idx] for idx in battles.groupby("item", sort=False).indices.values()]
    loop_rng = np.random.default_rng(2)
    ref = []
    for _ in range(300):
        pick = loop_rng.integers(0, len(groups), len(groups))
        agg = P.aggregate_battles(pd.DataFrame(np.concatenate([groups[i] for i in pick]),
                                               columns=["model_a", "model_b", "winner"]))
        try:
            P._check_finite(agg, "", False)
        except DataValidationError:
            continue
        fit = P.fit_bradley_terry(agg)[0]
        ref.append(pd.Series(fit, agg.systems)[ours.systems].to_numpy())
    ref = np.array(ref)
    centre = lambda b: b - b.mean(1, keepdims=True)
    # Monte Carlo error of an SD from ~300 resamples: about 4 %
    np.testing.assert_allclose(centre(boot.dist[fin]).std(0), centre(ref).std(0),
                               rtol=0.2)


def test_item_column_widens_intervals_of_correlated_battles():
    battles = mqm_battles(300)
    per_battle = multistat.bradley_terry(battles, n_resamples=400, seed=1)
    per_item = multistat.bradley_terry(battles, n_resamples=400, seed=1, item="item")
    w = lambda b: (b["ci_high"] - b["ci_low"]).mean()
    # battles on one segment share its difficulty: resampling them as independent
    # understates the uncertainty
    assert w(per_item) > 1.2 * w(per_battle)
    assert per_item["cluster"].max() <= per_battle["cluster"].max()
    meta = per_item.attrs["multistat"]
    assert meta["resampling"] == "items" and meta["n_items"] == 300
    assert meta["item_column"] == "item" and "resamples of the items" in meta["rank_interval"]
    assert per_battle.attrs["multistat"]["resampling"] == "battles"
    pd.testing.assert_series_equal(per_item["score"], per_battle["score"])
    # one battle per item: the item bootstrap is the battle bootstrap (in distribution)
    single = battles.assign(item=np.arange(len(battles)))
    one = multistat.bradley_terry(single, n_resamples=400, seed=2, item="item")
    assert w(one) == pytest.approx(w(per_battle), rel=0.1)


# ============================================== Bradley-Terry: names do not matter
def test_renaming_the_systems_changes_no_number(planted):
    _, battles = planted
    part = battles.iloc[:4000]
    rng = np.random.default_rng(0)
    old = sorted(set(part["model_a"]) | set(part["model_b"]))
    # new names in another alphabetical order (reversed and shuffled)
    new = dict(zip(old, [f"m{k:02d}" for k in rng.permutation(len(old))]))
    renamed = part.assign(model_a=part["model_a"].map(new), model_b=part["model_b"].map(new))
    for item in (None, "item"):
        a, b = part.assign(item=np.arange(len(part)) // 3), renamed.assign(
            item=np.arange(len(part)) // 3)
        one = multistat.bradley_terry(a, n_resamples=300, seed=5, item=item)
        two = multistat.bradley_terry(b, n_resamples=300, seed=5, item=item)
        one = one.assign(system=one["system"].map(new)).set_index("system").sort_index()
        two = two.set_index("system").sort_index()
        pd.testing.assert_frame_equal(one, two, check_exact=True)


# ==================================================== Bradley-Terry: names refused
@pytest.mark.parametrize("rows, fragments", [
    ([("m1", "m2", "model_a"), ("m2", "m1 ", "tie")],
     ["system names 'm1' (", "line 2, column 'model_a') and 'm1 ' (",
      "line 3, column 'model_b') differ only by surrounding whitespace"]),
    ([("m1", "m2", "model_a"), ("m2", "m\x1b[31m3", "tie")],
     ["line 3, column 'model_b': system name 'm\\x1b[31m3' contains the control",
      "character U+001B"]),
])
def test_names_that_readers_refuse_are_refused_with_file_and_line(tmp_path, rows, fragments):
    path = tmp_path / "battles.csv"
    frame(rows).to_csv(path, index=False)
    with pytest.raises(DataValidationError) as err:
        multistat.bradley_terry(path, n_resamples=10)
    for f in fragments:
        assert f in str(err.value)
    assert str(path) in str(err.value)


def test_a_json_boolean_is_not_a_name(tmp_path):
    path = tmp_path / "battles.jsonl"
    path.write_text('{"model_a": "x", "model_b": 1, "winner": "model_a"}\n'
                    '{"model_a": "x", "model_b": true, "winner": "tie"}\n')
    with pytest.raises(DataValidationError, match=r"battles.jsonl, line 2, column "
                                                  r"'model_b': system True is a boolean"):
        multistat.bradley_terry(path, n_resamples=10)
    j = pd.DataFrame({"winner": ["A", "B", "A"], "item": ["q1", True, "q2"]})
    with pytest.raises(DataValidationError, match=r"judgments, row 2, column 'item': "
                                                  r"item True is a boolean"):
        multistat.preference_test(j, a="A", b="B", item_col="item")
    j = pd.DataFrame({"winner": ["A", "B", "A"], "rater": ["r1", "r1 ", "r2"]})
    with pytest.raises(DataValidationError, match=r"rater names 'r1' \(judgments, row 1, "
                                                  r"column 'rater'\) and 'r1 '"):
        multistat.preference_test(j, a="A", b="B", rater_col="rater")


@pytest.mark.parametrize("kwargs", [{"ties": "davidson"}, {"anchor": "X"}, {"anchor": "s00"}])
def test_sparse_system_with_davidson_ties_or_an_anchor(kwargs):
    # X: 4 battles (2 wins, 1 tie, 1 loss); every resample converges, X is named; a
    # named anchor sets the scale, even a sparse one (then everyone's interval is wide)
    rng = np.random.default_rng(3)
    base = simulate_battles(rng.normal(0, 0.5, 6), 1500, seed=4, p_tie=0.2)
    extra = pd.DataFrame({"model_a": ["X", "s01", "X", "X"],
                          "model_b": ["s00", "X", "s02", "s03"],
                          "winner": ["model_a", "model_b", "tie", "model_b"]})
    with pytest.warns(P.PreferenceWarning, match="'X': no finite score"):
        board = multistat.bradley_terry(pd.concat([base, extra]), n_resamples=300, seed=0,
                                        **kwargs).set_index("system")
    meta = board.attrs["multistat"]
    assert meta["n_resamples_unconverged"] == 0 and list(meta["sparse_systems"]) == ["X"]
    if "anchor" in kwargs:
        assert meta["scale"] == f"{kwargs['anchor']} fixed at 1000"
        assert board.loc[kwargs["anchor"], "score"] == pytest.approx(1000)
    assert np.isfinite(board.drop(index="X")[["ci_low", "ci_high"]].to_numpy()).all()
