"""A test registered from outside, with the public API only, works everywhere (issue 22.3).

The test is a paired bootstrap of the difference of **10 %-winsorized means** (each
system's scores clipped to its own 10 % and 90 % quantiles, then averaged), written here
the way a user would: a ``TestSpec`` with a ``batch`` on the engine's shared plan
(``multistat.engine.resample`` with its mean kernel) and the public p-value and
interval rules of :mod:`multistat.significance.resampling`. Its spec declares what it can
do (``joint_null``, ``equivalence``, ``p_floor``, ``cost_per_value``, ``reasons``,
``label``), and nothing else in multistat is edited: compare, the TOST columns, the
Westfall-Young step-down, rank, the cost estimate, the analysis advice and the report all
take it from the registry.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import engine as eng
from multistat._cost import study_cost
from multistat.errors import CostLimitError
from multistat.significance import BatchResult, Slab, TestResult, TestSpec, register, unregister
from multistat.significance.resampling import bootstrap_floor, bootstrap_interval, bootstrap_pvalues
from multistat.comparison.stepdown import from_matrix

NAME = "winsorized-bootstrap"
LABEL = "winsorized-mean bootstrap"


def winsorize(X: np.ndarray, q: float = 0.1) -> np.ndarray:
    """Each system's scores clipped to its own ``q`` and ``1 - q`` quantiles."""
    lo, hi = np.quantile(X, [q, 1 - q], axis=-1, keepdims=True)
    return np.clip(X, lo, hi)


def winsorized_batch(slab, ia, ib, ctx) -> BatchResult:
    X = winsorize(np.asarray(slab.scores, dtype=float))  # (S, M, n)
    dist = eng.resample("bootstrap", eng.mean_kernel, X, n=slab.n,
                        n_resamples=ctx.n_resamples, seed=ctx.seed, dataset=slab.dataset,
                        scheduler=ctx.scheduler, n_chunks=ctx.n_chunks, budget=ctx.budget,
                        progress=ctx.progress)  # (B, S, M): every system on one plan
    obs = X.mean(-1)
    est = obs[ia] - obs[ib]  # (P, M)
    pairs = dist[:, ia] - dist[:, ib]  # pairs formed last
    p = bootstrap_pvalues(est, pairs, alternative=ctx.alternative, null_value=ctx.null_value)
    low, high, _ = bootstrap_interval(est, pairs, alternative=ctx.alternative,
                                      confidence_level=ctx.confidence_level,
                                      ci_method="percentile")
    shape = est.shape
    return BatchResult(NAME, {
        "statistic": est, "p_value": p, "estimate": est, "ci_low": low, "ci_high": high,
        "n": np.full(shape, slab.n), "note": np.full(shape, "", dtype=object),
        "statistic_kind": np.full(shape, "mean", dtype=object),
        "se": pairs.std(0, ddof=1), "n_resamples": np.full(shape, ctx.n_resamples),
        "seed": np.full(shape, ctx.seed)}, resampled={"dist": dist})


def winsorized_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
                    n_resamples=1000, seed=0) -> TestResult:
    """The per-pair face: the batch on a two-system slab."""
    from multistat.significance import Context

    slab = Slab(np.stack([np.asarray(x, float), np.asarray(y, float)])[:, None, :])
    ctx = Context(alternative=alternative, null_value=null_value,
                  confidence_level=confidence_level, n_resamples=n_resamples, seed=seed)
    r = winsorized_batch(slab, np.array([0]), np.array([1]), ctx).arrays
    return TestResult(test=NAME, statistic=float(r["statistic"][0, 0]),
                      p_value=float(r["p_value"][0, 0]), estimate=float(r["estimate"][0, 0]),
                      ci_low=float(r["ci_low"][0, 0]), ci_high=float(r["ci_high"][0, 0]),
                      n=len(x), alternative=alternative, null_value=null_value)


REASON = "valid for heavy tails, at a bootstrap's cost"


@pytest.fixture(scope="module")
def registered():
    spec = register(TestSpec(
        NAME, winsorized_test, "resampling", ("mean",), assumes_symmetric=False,
        assumes_normal=False, resampling=True, batch=winsorized_batch, all_pairs=True,
        joint_null=True, equivalence=True, p_floor=bootstrap_floor, cost_per_value=2.0,
        label=LABEL, description="paired bootstrap of 10%-winsorized means",
        reasons={"normal": REASON, "symmetric": REASON, "skewed": REASON}))
    yield spec
    unregister(NAME)


@pytest.fixture(scope="module")
def study():
    """Three tiers of three systems (gap 1.0, noise sd 0.3 with heavy-tailed outliers),
    two metrics, 120 shared instances."""
    rng = np.random.default_rng(22)
    n = 120
    item = rng.normal(0, 1, n)
    rows = []
    for s in range(9):
        tier = s // 3
        for metric in ("m1", "m2"):
            noise = rng.standard_t(3, n) * 0.3
            score = 5.0 - tier * 1.0 + item + noise
            rows += [{"dataset": "test", "system": f"s{s}", "metric": metric,
                      "instance": f"i{i:03d}",  # label order = position order
                      "score": v}
                     for i, v in enumerate(score)]
    return multistat.from_frame(pd.DataFrame(rows))


def test_compare_runs_it_with_its_estimate_and_plan(registered, study):
    table = multistat.compare(study, tests=(NAME, "t"), n_resamples=999, seed=3)
    rows = table[table["test"] == NAME]
    assert len(rows) == 36 * 2 and rows["p_value"].between(0, 1).all()
    assert (rows["n_resamples"] == 999).all() and (rows["seed"] == 3).all()
    # the estimate by hand: winsorized means of the study's own arrays
    ds = multistat.cube.datasets(study)
    (_, d), = ds.items()
    sysnames = [str(s) for s in d.system.values]
    X = winsorize(np.asarray(d["score"].values, float))
    obs = X.mean(-1)
    m = {str(v): j for j, v in enumerate(d.metric.values)}
    for r in rows.head(10).itertuples():
        a, b = sysnames.index(r.system_a), sysnames.index(r.system_b)
        assert r.estimate == pytest.approx(obs[a, m[r.metric]] - obs[b, m[r.metric]],
                                           abs=1e-12)


def test_equivalence_columns_are_its_two_one_sided_runs(registered, study):
    margin = 0.5
    table = multistat.compare(study, tests=(NAME,), n_resamples=999,
                              equivalence_margin=margin)
    lower = multistat.compare(study, tests=(NAME,), n_resamples=999,
                              alternative="greater", null_value=-margin)
    upper = multistat.compare(study, tests=(NAME,), n_resamples=999,
                              alternative="less", null_value=margin)
    expect = np.fmax(lower["p_value"].to_numpy(), upper["p_value"].to_numpy())
    np.testing.assert_array_equal(table["p_equivalence"].to_numpy(), expect)
    # systems of one tier are equivalent within 0.5 on some pairs; different tiers never
    tier = table["system_a"].str[1:].astype(int) // 3 != \
        table["system_b"].str[1:].astype(int) // 3
    assert not table.loc[tier, "equivalent"].any()
    assert table.loc[~tier, "equivalent"].any()


def test_westfall_young_takes_its_joint_null(registered, study):
    B = 499
    table = multistat.compare(study, tests=(NAME,), n_resamples=B,
                              correction="westfall-young", metrics=["m1"])
    # the step-down by hand from the test's own per-system plan
    (name, d), = multistat.cube.datasets(study).items()
    X = winsorize(np.asarray(d["score"].values, float)[:, :1])
    dist = eng.resample("bootstrap", eng.mean_kernel, X, n=X.shape[-1], n_resamples=B,
                        seed=0, dataset=name)[..., 0]
    sysnames = [str(s) for s in d.system.values]
    a = table["system_a"].map(sysnames.index).to_numpy()
    b = table["system_b"].map(sysnames.index).to_numpy()
    est = table["estimate"].to_numpy()
    null = dist[:, a] - dist[:, b] - est
    _, p = from_matrix(null, est, alternative="two-sided", method="maxT")
    np.testing.assert_allclose(table["p_adjusted"], np.fmax(p, table["p_value"]), rtol=0,
                               atol=0)
    # closed-form tests have no joint null: the registry says which do
    with pytest.raises(multistat.errors.ParameterError, match=NAME):
        multistat.compare(study, tests=("t",), correction="westfall-young")


def test_rank_finds_the_tiers_with_it(registered, study):
    board = multistat.rank(study, test=NAME, n_resamples=999, metrics=["m1"])
    assert board.attrs["multistat"]["correction"] == "westfall-young"  # joint_null
    tiers = board["system"].str[1:].astype(int) // 3
    assert board["cluster"].tolist() == (tiers + 1).tolist()
    assert board.loc[tiers == 0, "beats"].eq(6).all()
    # its dist is no score distribution: the rank intervals come from the shared
    # bootstrap of the scores, as with any test (system_scores)
    scores = multistat.system_scores(study, n_resamples=999, metrics=["m1"])
    merged = board.merge(scores, on=["dataset", "metric", "system"], suffixes=("", "_s"))
    np.testing.assert_array_equal(merged["ci_low"], merged["ci_low_s"])


def test_cost_and_floor_come_from_its_spec(registered, study):
    B = 1000
    n, S, M, P = 120, 9, 2, 36
    ours = study_cost(study, tests=(NAME,), n_resamples=B)
    boot = study_cost(study, tests=("bootstrap",), n_resamples=B)
    assert boot == B * n + B * M * (S * n + P)
    assert ours - B * n == pytest.approx(2.0 * (boot - B * n))
    with pytest.raises(CostLimitError):
        multistat.compare(study, tests=(NAME,), n_resamples=B, max_cost=ours / 2)
    from multistat.pfloor import smallest_pvalue

    assert smallest_pvalue(NAME, 99) == 2 / 100


def test_analysis_and_report_name_it(registered, study, tmp_path):
    advice = multistat.analyze(study)
    assert advice["non_preferred"].str.contains(NAME).all()
    assert advice["reasons"].str.contains(f"{NAME}: {REASON}", regex=False).all()
    table = multistat.compare(study, tests=(NAME,), n_resamples=499, metrics=["m1"])
    # the analysis stages the report draws (scores, detectability, ...), then the report
    from multistat.stages import report_inputs

    html = multistat.report.write_report(table, tmp_path / "report", study=study,
                                         sections=report_inputs(table, study=study))
    text = html.read_text(encoding="utf-8")
    assert f"the {LABEL} test" in text
    figures = list((tmp_path / "report" / "figures").glob("*.png"))
    assert figures
