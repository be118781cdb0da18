"""Every public result class follows one protocol (multistat/_result.py): ``to_frame()``
a DataFrame, ``to_dict()`` the scalar fields, ``summary()`` text headed by the class,
``_repr_html_()`` an escaped HTML table, and ``confidence_interval()`` where the result
has an interval. Each result here comes from the public function that makes it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import cube
from multistat._result import Result
from multistat.demo import demo_frame


def _rated_study():
    rng = np.random.default_rng(4)
    items, raters = 20, 4
    base = rng.normal(3, 1, (items, 1)) + rng.normal(0, 0.3, (1, raters))
    ya = base + rng.normal(0, 0.5, (items, raters))
    yb = base + 0.3 + rng.normal(0, 0.5, (items, raters))
    rating = np.stack([ya, yb])[:, None]
    ds = cube.make_dataset("pilot", cube.run_mean(rating), systems=["a", "b"],
                           metrics=["likert"], instances=[f"i{j:03d}" for j in range(items)],
                           rating=rating, raters=[f"r{j}" for j in range(raters)])
    return cube.make_study({"pilot": ds})


def _results():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.6, 0.1, 40), rng.normal(0.55, 0.1, 40)
    wide = pd.DataFrame({"A": [0.9, 0.8, 0.85, 0.7], "B": [0.8, 0.7, 0.8, 0.6],
                         "C": [0.7, 0.75, 0.6, 0.65]})
    judgments = pd.DataFrame({"winner": ["A"] * 14 + ["B"] * 5 + ["tie"] * 3})
    study = multistat.from_frame(demo_frame())
    gold, metric = rng.normal(size=30), rng.normal(size=30)
    from multistat.leaderboard.ranking import rank_with_pairs

    return {
        "TestResult": multistat.significance.paired_t(x, y),
        "ASOResult": multistat.aso(x, y, n_resamples=200),
        "KrippendorffResult": multistat.krippendorff_alpha(
            np.array([[1, 2, 3, 3, 2], [1, 2, 3, 3, 3], [np.nan, 2, 3, 2, 2]]), "interval",
            n_resamples=200),
        "PreferenceResult": multistat.preference_test(judgments, a="A", b="B"),
        "VarianceComponents": multistat.variance_components(_rated_study()),
        "CorrelationResult": multistat.metric_correlation(gold, metric),
        "MetaResult": multistat.meta_analysis([0.1, 0.3, 0.2, 0.4], [0.01, 0.02, 0.015, 0.03]),
        "MetaRegressionResult": multistat.meta_regression(
            [0.1, 0.3, 0.2, 0.4, 0.35], [0.01, 0.02, 0.015, 0.03, 0.02], mods=[1, 2, 3, 4, 5],
            method="fixed"),
        "SimulationResult": multistat.power.simulate_mcnemar(
            n=100, delta=0.05, agreement=0.8, n_simulations=200),
        "FriedmanResult": multistat.friedman(wide),
        "ReplicabilityResult": multistat.replicability([0.168, 0.297, 0.019, 0.001]),
        "RankResult": rank_with_pairs(study, metrics=["likert"], datasets=["newstest"],
                                      n_resamples=200),
    }


RESULTS = _results()


def test_every_public_result_class_is_covered():
    # the classes that inherit the protocol are exactly those checked here
    def subclasses(k):
        for s in k.__subclasses__():
            yield s
            yield from subclasses(s)

    assert {k.__name__ for k in subclasses(Result)} == set(RESULTS)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_protocol(name):
    res = RESULTS[name]
    assert type(res).__name__ == name and isinstance(res, Result)
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) >= 1 and frame.shape[1] >= 2
    d = res.to_dict()
    # numbers, text and flags (numpy scalars and arrays serialise through tolist)
    as_json = json.dumps(d, default=lambda o: o.tolist())
    assert d and json.loads(as_json).keys() == d.keys()
    text = res.summary()
    assert text.splitlines()[0] == name and len(text.splitlines()) >= 2
    html = res._repr_html_()
    assert html.startswith(f"<p><strong>{name}</strong></p>") and "<table" in html
    if hasattr(res, "confidence_interval"):
        low, high = res.confidence_interval()
        assert low <= high or (np.isnan(low) and np.isnan(high))


def test_repr_html_escapes_cell_text():
    res = multistat.replicability(pd.Series([0.01, 0.2], index=["<b>x</b>", "y&z"]))
    html = res._repr_html_()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html and "y&amp;z" in html


def test_one_row_summary_lists_fields():
    res = RESULTS["MetaResult"]
    assert "estimate" in res.summary() and f"{res.estimate:.6g}" in res.summary()


def test_read_table_gives_the_run_metadata_explicitly(tmp_path):
    table = multistat.compare(multistat.from_frame(demo_frame()), tests=("t",), seed=3)
    path = multistat.write_parquet(table, tmp_path / "results.parquet")
    rows, meta = multistat.read_table(path)
    pd.testing.assert_frame_equal(rows, table.reset_index(drop=True), check_dtype=False)
    assert meta == table.attrs["multistat"] and meta["seed"] == 3
    assert meta["correction"] == "holm"
