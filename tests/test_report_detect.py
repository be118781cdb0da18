""""Could we tell?" in the report: smallest detectable differences, power against the true
difference for the adjacent pairs, the DVC metrics/plots files, results.csv and the
sacrebleu signature.

Inputs are real: REALSumm (tests/data/realsumm) through ``multistat.load`` and
``multistat.compare``. Reference values: statsmodels ``TTestPower`` (paired t power and the
standardized effect solving it), numpy for the standard deviation of the differences.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from conftest import REALSUMM, full_report
from statsmodels.stats.power import TTestPower

import multistat as ms
from multistat import cube
from multistat.power import detectability as pdet
from multistat.report import detectability as det_mod
from multistat.report import tables, write_report

METRICS = ["litepyramid_recall", "rouge_1_f_score"]
SYSTEMS = ["abs/bart_out", "abs/semsim_out", "ext/refresh_out", "abs/t5_out_11B",
           "abs/bottom_up_out", "ext/neusumm_out"]


@pytest.fixture(scope="module")
def study():
    full = ms.load(REALSUMM, instance_col="doc_id", system_col=["summary_type", "system"])
    ds = cube.datasets(full)["scores"].sel(system=SYSTEMS, metric=METRICS)
    return cube.make_study({"realsumm": ds})


@pytest.fixture(scope="module")
def results(study):
    return ms.compare(study, tests=("t", "wilcoxon"), effect_sizes=False, seed=0)


def test_mde_equals_statsmodels_paired_t(results, study):
    det = pdet.detectability(results, study=study, test="t")
    assert len(det) == 2 * 15                       # every pair of 6 systems, 2 metrics
    ds = cube.datasets(study)["realsumm"]
    for r in det.sample(6, random_state=0).itertuples():
        d = (ds.score.sel(system=r.system_a, metric=r.metric).values
             - ds.score.sel(system=r.system_b, metric=r.metric).values)
        sd = np.std(d, ddof=1)
        # reference: statsmodels solves the standardized effect for power 0.8
        es = TTestPower().solve_power(nobs=len(d), alpha=0.05, power=0.8,
                                      alternative="two-sided")
        assert r.n == 100 and r.sd == pytest.approx(sd, rel=1e-12)
        assert r.mde == pytest.approx(es * sd, rel=1e-4)   # both solve by root finding
        # and statsmodels' power at our MDE is the 80 % it was solved for
        assert TTestPower().power(effect_size=r.mde / sd, nobs=len(d), alpha=0.05,
                                  alternative="two-sided") == pytest.approx(0.8, abs=1e-6)
        assert r.mde_source == "mde column (t test)"      # compare's own column
    # without the column the report's closed form gives the same numbers
    own = pdet.detectability(results.drop(columns="mde"), study=study, test="t")
    assert (own["mde_source"] == "paired t closed form").all()
    np.testing.assert_allclose(own["mde"], det["mde"], rtol=1e-6)


def test_mde_from_t_interval_without_study(results, study):
    no_col = results.drop(columns="mde")
    with_study = pdet.detectability(no_col, study=study, test="t")
    without = pdet.detectability(no_col, test="t")    # sd recovered from the t interval
    np.testing.assert_allclose(without["mde"], with_study["mde"], rtol=1e-8)


def test_mde_column_wins_when_present(results, study):
    marked = results.assign(mde=np.where(results["test"] == "t", 0.125, np.nan))
    det = pdet.detectability(marked, study=study, test="t")
    assert (det["mde"] == 0.125).all() and (det["mde_source"] == "mde column (t test)").all()


def test_adjacent_pairs_follow_the_leaderboard(results, study):
    lb = tables.leaderboard(results, scores=ms.system_scores(study, seed=0), test="t")
    det = pdet.detectability(results, study=study, leaderboard=lb, test="t",
                                pairs="adjacent")
    for metric in METRICS:
        order = lb[lb["metric"] == metric]["system"].tolist()
        got = det[det["metric"] == metric][["system_a", "system_b"]]
        assert [tuple(x) for x in got.to_numpy()] == list(itertools.pairwise(order))


def test_power_curves_match_statsmodels(results, study):
    det = pdet.detectability(results, study=study, test="t", pairs="adjacent")
    curves = pdet.power_curves(det.iloc[:2], points=11)
    assert len(curves) == 22
    for (a, b), g in curves.groupby(["system_a", "system_b"], sort=False):
        r = det[(det.system_a == a) & (det.system_b == b)].iloc[0]
        ref = [TTestPower().power(effect_size=d / r.sd, nobs=r.n, alpha=0.05,
                                  alternative="two-sided") for d in g["delta"]]
        np.testing.assert_allclose(g["power"], ref, rtol=1e-6, atol=1e-9)
        assert g["power"].iloc[0] == pytest.approx(0.05, abs=1e-9)   # size at delta = 0
        assert g["delta"].iloc[-1] == pytest.approx(2 * r.mde)
        # at the MDE the power is the 80 % it was solved for
        assert np.interp(r.mde, g["delta"], g["power"]) == pytest.approx(0.8, abs=0.02)


def test_statement_and_summary(results, study):
    lb = tables.leaderboard(results, scores=ms.system_scores(study, seed=0), test="t")
    det = pdet.detectability(results, study=study, leaderboard=lb, test="t")
    small = det_mod.smallest_detectable(det)
    for r in small.itertuples():
        assert r.mde_min == det[det.metric == r.metric]["mde"].min()
    text = det_mod.statement(small.iloc[0])
    assert text.startswith("differences smaller than ")
    assert "are not detectable with this test set (80 % power; mde column (t test))" in text
    summary = det_mod.study_summary(results, lb, det, test="t")
    json.dumps(summary)                                   # plain JSON
    for metric in METRICS:
        e = summary["results"]["realsumm"][metric]
        part = lb[lb.metric == metric]
        assert e["leader"] == part["system"].iloc[0]
        rows = results[(results.metric == metric) & (results.test == "t")]
        assert e["significant_pairs"] == int(rows["reject"].sum())
        assert e["pairs"] == 15 and e["systems"] == 6
        assert e["leader_significantly_best"] == bool(part["wins"].iloc[0] == 5)
        assert e["mde"] == pytest.approx(small.set_index("metric").loc[metric, "mde_min"],
                                         rel=1e-5)
    assert summary["run"]["seed"] == 0


def test_report_writes_results_csv_metrics_and_plots(results, study, tmp_path):
    full_report(results, tmp_path, study=study,
                options={"test": "t", "histogram_pairs": None})
    csv = pd.read_csv(tmp_path / "tables" / "results.csv")
    assert len(csv) == len(results) and list(csv.columns) == list(results.columns)
    np.testing.assert_allclose(csv["p_value"], results["p_value"], rtol=1e-12)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics["results"]["realsumm"]) == set(METRICS)
    lb_files = sorted(p.name for p in (tmp_path / "plots" / "leaderboard").iterdir())
    assert lb_files == ["realsumm__litepyramid_recall.csv", "realsumm__rouge_1_f_score.csv"]
    power_files = list((tmp_path / "plots" / "power").iterdir())
    assert len(power_files) == 2 * 5                      # 5 adjacent pairs per metric
    html = (tmp_path / "report.html").read_text()
    assert html.count('<p class="mde">') == 2
    assert "are not detectable with this test set" in html
    assert (tmp_path / "figures" / "power_adjacent_realsumm__rouge_1_f_score.png").exists()


def test_sacrebleu_signature_in_results_metadata_and_report(tmp_path):
    hyp = pd.DataFrame({"system": ["a"] * 4 + ["b"] * 4, "segment": [0, 1, 2, 3] * 2,
                        "hypothesis": ["the cat sat", "a dog", "hello world", "yes",
                                       "the cat", "dog", "hello there world", "no"]})
    ref = pd.DataFrame({"segment": [0, 1, 2, 3],
                        "reference": ["the cat sat", "a dog barks", "hello world", "yes"]})
    study = ms.load_translations(hyp, ref, metrics="bleu", dataset="toy")
    res = ms.compare(study, tests=("bootstrap",), n_resamples=200, seed=0,
                     effect_sizes=False)
    sig = json.loads(study["toy"].attrs["sacrebleu"])["bleu"]
    assert res.attrs["multistat"]["sacrebleu"] == {"toy": {"bleu": sig}}
    path = tmp_path / "r.parquet"
    ms.write_parquet(res, path, metadata=res.attrs["multistat"])
    assert ms.read_parquet(path).attrs["multistat"]["sacrebleu"]["toy"]["bleu"] == sig
    html = write_report(res, tmp_path / "rep").read_text()
    assert "sacrebleu signature (toy, bleu)" in html and sig in html


def test_extreme_dpi_and_mismatched_study_are_one_line_errors(results, study, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from multistat.errors import DataValidationError, ParameterError

    with pytest.raises(ParameterError, match=r"^`dpi` must be between 20 and 1200 .*got 100000$"):
        write_report(results, tmp_path / "a", dpi=100_000)
    other = cube.make_study({"realsumm": cube.datasets(study)["realsumm"].isel(system=[0, 1])})
    with pytest.raises(DataValidationError, match=r"`study` does not match the results: "
                                                  r"dataset 'realsumm' lacks system\(s\)"):
        write_report(results, tmp_path / "b", study=other)
    renamed = cube.make_study({"news": cube.datasets(study)["realsumm"]})
    with pytest.raises(DataValidationError, match=r"lacks dataset\(s\) \['realsumm'\] "
                                                  r"\(it has \['news'\]\)"):
        write_report(results, tmp_path / "c", study=renamed)
    assert not (tmp_path / "b" / "report.html").exists()
    # the command line: exit 2, one line, no traceback, nothing written
    ms.write_parquet(results, tmp_path / "r.parquet", metadata=results.attrs["multistat"])
    cube.save(renamed, tmp_path / "other.nc")
    exe = str(Path(sys.executable).with_name("multistat"))
    for extra, fragment in ((["--dpi", "99999"], "`--dpi` must be an integer <= 1200"),
                            (["--study", str(tmp_path / "other.nc")],
                             "study` does not match the results")):
        proc = subprocess.run([exe, "report", str(tmp_path / "r.parquet"), "--out",
                               str(tmp_path / "cli"), *extra], capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and fragment in proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "cli" / "report.html").exists()


def test_identical_systems_do_not_make_the_smallest_detectable_difference_zero():
    # two byte-identical submissions made every report sentence say "differences smaller
    # than 0 are not detectable"; they are left out of the summary and counted
    from multistat.report import detectability as D

    det = pd.DataFrame({"dataset": "d", "metric": "m", "system_a": ["a", "a", "b"],
                        "system_b": ["b", "c", "c"], "mde": [0.0, 0.8, 1.1],
                        "sd": [0.0, 2.0, 2.5], "mde_source": "paired t",
                        "power_level": 0.8})
    small = D.smallest_detectable(det)
    row = small.iloc[0]
    assert row["mde_min"] == 0.8 and row["mde_median"] == pytest.approx(0.95)
    assert row["degenerate"] == 1 and row["pairs"] == 3
    text = D.statement(row)
    assert text.startswith("differences smaller than 0.800 ") and "1 pair(s) of identical" in text
