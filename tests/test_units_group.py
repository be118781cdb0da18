"""Units by group: evaluation_units(study, by="group") (issue 11.4)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from multistat import cube
from multistat.errors import DataValidationError, ParameterError
from multistat.units import evaluation_units, groups_of


def grouped(score, groups, name="docs", **kw):
    n = score.shape[-1]
    ds = cube.make_dataset(name, score, systems=[f"s{i}" for i in range(score.shape[0])],
                           metrics=[f"m{j}" for j in range(score.shape[1])],
                           instances=[f"i{k}" for k in range(n)], **kw)
    return ds.assign_coords(group=("instance", list(groups)))


def test_one_unit_per_group_by_hand():
    # 2 systems x 1 metric x 6 instances in documents b, b, a, a, a, c (labels sorted: a b c)
    score = np.array([[[1.0, 3.0, 2.0, 4.0, 9.0, 5.0]],
                      [[0.0, 0.0, 1.0, 1.0, 1.0, 7.0]]])
    ds = grouped(score, ["b", "b", "a", "a", "a", "c"])
    out = cube.datasets(evaluation_units(cube.make_study([ds]), by="group"))["docs"]
    assert out.instance.values.tolist() == ["a", "b", "c"]
    assert out.unit_n.values.tolist() == [3, 2, 1]
    # means: s0 a (2+4+9)/3 = 5, b (1+3)/2 = 2, c 5; s1 a 1, b 0, c 7
    np.testing.assert_allclose(out.score.values[:, 0], [[5, 2, 5], [1, 0, 7]])
    med = cube.datasets(evaluation_units(cube.make_study([ds]), by="group",
                                         statistic="median"))["docs"]
    # medians: s0 a median(2, 4, 9) = 4, b 2, c 5
    np.testing.assert_allclose(med.score.values[0, 0], [4, 2, 5])
    assert out.attrs["unit_by"] == "group"


def test_row_order_does_not_matter_and_missing_instances_leave_their_group():
    rng = np.random.default_rng(0)
    score = rng.normal(size=(3, 2, 12))
    score[:, 1, [0, 1]] = np.nan  # metric m1 lost both instances of document d0
    groups = [f"d{k // 2}" for k in range(12)]
    ds = grouped(score, groups)
    a = cube.datasets(evaluation_units(cube.make_study([ds]), by="group"))["docs"]
    perm = rng.permutation(12)
    b = cube.datasets(evaluation_units(cube.make_study([ds.isel(instance=perm)]),
                                       by="group"))["docs"]
    np.testing.assert_allclose(a.score.values, b.score.values)
    # d0 is an empty unit for m1 (NaN for every system); m0 keeps it
    assert np.isnan(a.score.values[:, 1, 0]).all()
    np.testing.assert_allclose(a.score.values[:, 0, 0], score[:, 0, :2].mean(-1))
    np.testing.assert_allclose(a.score.values[:, 1, 1:],
                               score[:, 1, 2:].reshape(3, 5, 2).mean(-1))


def test_corpus_statistics_are_summed_within_a_group():
    rng = np.random.default_rng(1)
    n = 8
    stats = rng.integers(1, 5, size=(2, 1, n, 2)).astype(float)  # (correct, total)
    stats[..., 1] += stats[..., 0]
    score = stats[..., 0] / stats[..., 1]
    ds = grouped(score, ["x"] * 3 + ["y"] * 5, kind=["corpus"], corpus_fn=["accuracy"],
                 stats=stats)
    out = cube.datasets(evaluation_units(cube.make_study([ds]), by="group"))["docs"]
    np.testing.assert_allclose(out.stats.values[:, 0, 0], stats[:, 0, :3].sum(1))
    np.testing.assert_allclose(out.stats.values[:, 0, 1], stats[:, 0, 3:].sum(1))


def test_groups_of_and_errors():
    score = np.zeros((2, 1, 4))
    ds = grouped(score, ["a", "a", "b", "b"])
    labels, idx = groups_of(ds)
    assert labels.tolist() == ["a", "b"] and [g.tolist() for g in idx] == [[0, 1], [2, 3]]
    plain = cube.make_study([cube.make_dataset("plain", score, systems=["a", "b"],
                                               metrics=["m"], instances=list("wxyz"))])
    with pytest.raises(DataValidationError, match="'plain' has no 'group' coordinate"):
        evaluation_units(plain, by="group")
    one = cube.make_study([grouped(score, ["a"] * 4)])
    with pytest.raises(DataValidationError, match="one group"):
        evaluation_units(one, by="group")
    with pytest.raises(ParameterError, match="give neither `size`"):
        evaluation_units(cube.make_study([ds]), by="group", size=2)
    with pytest.raises(ParameterError, match="`by` must be one of"):
        evaluation_units(cube.make_study([ds]), by="doc")
    with pytest.raises(ParameterError, match="give `size`"):
        evaluation_units(cube.make_study([ds]))


# ----------------------------------------------------------------- real data: MQM TED
MQM_TED = Path(__file__).resolve().parent / "data" / "mqm-ted-ende" / "ratings.tsv.gz"


def mqm_ted_segments() -> pd.DataFrame:
    """Segment-level MQM scores of the TED slice: Major 5, Minor 1, Minor
    Fluency/Punctuation 0.1 (Freitag et al. 2021 weights), summed per system x segment,
    negated so that higher is better; one row per system x segment with its talk."""
    rows = pd.read_csv(MQM_TED, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
    weight = rows["severity"].map({"Major": 5.0, "Minor": 1.0, "No-error": 0.0})
    weight[(rows["severity"] == "Minor") & (rows["category"] == "Fluency/Punctuation")] = 0.1
    seg = (rows.assign(penalty=weight)
           .groupby(["system", "doc", "seg_id"], as_index=False)["penalty"].sum())
    return seg.assign(score=-seg["penalty"])


def mqm_ted_dataset():
    seg = mqm_ted_segments()
    wide = seg.pivot(index="seg_id", columns="system", values="score")
    doc = seg.drop_duplicates("seg_id").set_index("seg_id")["doc"].loc[wide.index]
    ds = cube.make_dataset("ted", wide.to_numpy().T[:, None, :], systems=wide.columns,
                           metrics=["mqm"], instances=wide.index.astype(str))
    return ds.assign_coords(group=("instance", doc.to_numpy().astype(str)))


def test_mqm_ted_units_by_talk():
    ds = mqm_ted_dataset()
    assert ds.sizes["instance"] == 529 and ds.sizes["system"] == 4
    out = cube.datasets(evaluation_units(cube.make_study([ds]), by="group"))["ted"]
    seg = mqm_ted_segments()
    ref = seg.groupby(["system", "doc"])["score"].mean().unstack("doc")  # pandas reference
    assert out.instance.values.tolist() == ["talk.1", "talk.3", "talk.4", "talk.5",
                                            "talk.6"]
    assert out.unit_n.values.tolist() == [140, 31, 129, 70, 159]  # segments per talk
    np.testing.assert_allclose(out.score.values[:, 0],
                               ref.loc[out.system.values, out.instance.values].to_numpy())


def test_units_by_group_keep_the_runs():
    rng = np.random.default_rng(5)
    rs = rng.normal(size=(2, 1, 6, 3))  # 3 runs
    ds = cube.make_dataset("r", cube.run_mean(rs), systems=["a", "b"], metrics=["m"],
                           instances=[f"i{k}" for k in range(6)], run_score=rs,
                           group=["x", "x", "y", "y", "y", "z"])
    out = cube.datasets(evaluation_units(cube.make_study([ds]), by="group"))["r"]
    assert out.run.values.tolist() == ["0", "1", "2"]
    # run 1 of system b, document y = mean of instances 2, 3, 4 of that run
    assert out.run_score.values[1, 0, 1, 1] == pytest.approx(rs[1, 0, 2:5, 1].mean())
    # the unit score is still the run average
    np.testing.assert_allclose(out.score.values, out.run_score.values.mean(-1))
