"""Tests of multistat.adapters on the real WMT17 en-de data and on random labels.

References: sacrebleu's ``corpus_score`` (BLEU, CHRF, TER objects with the same options)
and scikit-learn's classification metrics (test-only). The data are the slice in
``tests/data/wmt17-en-de`` (10 systems x 600 segments; see its SOURCE.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from multistat import cube
from multistat.adapters import from_statistics, load_labels, load_translations
from multistat.corpus import get_corpus_metric, register_corpus_metric
from multistat.errors import DataValidationError, InputFileError, ParameterError, ParameterTypeError

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU, CHRF, TER

DATA = Path(__file__).resolve().parent / "data" / "wmt17-en-de"


@pytest.fixture(scope="module")
def wmt():
    hyp = pd.read_csv(DATA / "hypotheses.tsv.gz", sep="\t", keep_default_na=False)
    ref = pd.read_csv(DATA / "references.tsv.gz", sep="\t", keep_default_na=False)
    return hyp, ref


def _subset(wmt, systems=None, n_segments=None):
    hyp, ref = wmt
    if systems is not None:
        hyp = hyp[hyp.system.isin(systems)]
    if n_segments is not None:
        hyp = hyp[hyp.segment < n_segments]
        ref = ref[ref.segment < n_segments]
    return hyp, ref


def _corpus_scores(study, metric):
    ds = next(iter(cube.datasets(study).values()))
    j = list(ds.metric.values).index(metric)
    cm = get_corpus_metric(str(ds.corpus_fn.values[j]))
    return dict(zip(ds.system.values.tolist(), cm.score(ds.stats.values[:, j]).tolist()))


def _sacrebleu_scores(metric_obj, hyp, ref):
    refs = [ref.sort_values("segment").reference.tolist()]
    return {s: metric_obj.corpus_score(g.sort_values("segment").hypothesis.tolist(),
                                       refs).score
            for s, g in hyp.groupby("system", sort=False)}


def _max_diff(a, b):
    assert a.keys() == b.keys()
    return max(abs(a[k] - b[k]) for k in a)


def test_wmt17_bleu_all_systems_equal_sacrebleu(wmt):
    study = load_translations(DATA / "hypotheses.tsv.gz", DATA / "references.tsv.gz",
                              metrics="bleu")
    assert list(study.children) == ["wmt17-en-de"]
    ds = study["wmt17-en-de"].to_dataset()
    assert ds.sizes["system"] == 10 and ds.sizes["instance"] == 600
    assert ds.kind.values.tolist() == ["corpus"]
    ours = _corpus_scores(study, "bleu")
    # sacrebleu 2.x defaults: 13a tokenizer, exp smoothing
    assert _max_diff(ours, _sacrebleu_scores(BLEU(), *wmt)) < 1e-9
    sig = json.loads(ds.attrs["sacrebleu"])["bleu"]
    assert "tok:13a" in sig and "smooth:exp" in sig


def test_wmt17_chrf_ter_all_systems_equal_sacrebleu(wmt):
    # all 10 systems; a slice of segments keeps TER (slow in sacrebleu) under ~10 s
    hyp, ref = _subset(wmt, n_segments=100)
    study = load_translations(hyp, ref, metrics=["chrf", "ter"])
    assert _max_diff(_corpus_scores(study, "chrf"), _sacrebleu_scores(CHRF(), hyp, ref)) < 1e-9
    assert _max_diff(_corpus_scores(study, "ter"), _sacrebleu_scores(TER(), hyp, ref)) < 1e-9
    ds = study["translations"].to_dataset()
    assert ds.higher_is_better.values.tolist() == [True, False]
    assert ds.sizes["stat"] == 18   # chrF's 18 statistics; TER's 2 zero-padded
    assert not ds.stats.values[:, 1, :, 2:].any()


@pytest.mark.parametrize("options, metric, ref_obj", [
    ({"tokenize": "intl"}, "bleu", BLEU(tokenize="intl")),
    ({"lowercase": True}, "bleu", BLEU(lowercase=True)),
    ({"smooth_method": "floor", "smooth_value": 0.2}, "bleu",
     BLEU(smooth_method="floor", smooth_value=0.2)),
    ({"tokenize": "char", "max_ngram_order": 6}, "bleu", BLEU(tokenize="char",
                                                             max_ngram_order=6)),
    ({"chrf_lowercase": True, "beta": 1}, "chrf", CHRF(lowercase=True, beta=1)),
    ({}, "chrf++", CHRF(word_order=2)),
    ({"eps_smoothing": True}, "chrf", CHRF(eps_smoothing=True)),
    ({"case_sensitive": True, "normalized": True}, "ter",
     TER(case_sensitive=True, normalized=True)),
])
def test_sacrebleu_options_reflected(wmt, options, metric, ref_obj):
    hyp, ref = _subset(wmt, ["LIUM-NMT", "C-3MA", "online-F"], 80)
    study = load_translations(hyp, ref, metrics=[metric], **options)
    assert _max_diff(_corpus_scores(study, metric), _sacrebleu_scores(ref_obj, hyp, ref)) < 1e-9


def test_plain_text_files_equal_table_route(wmt, tmp_path):
    hyp, ref = _subset(wmt, ["LIUM-NMT", "FBK", "xmu"], 200)
    files = {}
    for s, g in hyp.groupby("system", sort=False):
        files[s] = tmp_path / f"{s}.txt"
        files[s].write_text("\n".join(g.sort_values("segment").hypothesis) + "\n",
                            encoding="utf-8")
    ref_file = tmp_path / "ref.de"
    ref_file.write_text("\n".join(ref.sort_values("segment").reference) + "\n",
                        encoding="utf-8")
    from_text = load_translations(files, ref_file, metrics="bleu,chrf")
    from_table = load_translations(hyp, ref, metrics="bleu,chrf")
    a = from_text["translations"].to_dataset()
    b = from_table["translations"].to_dataset()
    np.testing.assert_array_equal(a.stats.values, b.stats.values)
    assert a.instance.values.tolist() == [str(i) for i in range(200)]
    # line-count mismatch names the file and both counts
    short = tmp_path / "short.txt"
    short.write_text("\n".join(["x"] * 150) + "\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"short\.txt.*150 lines.*ref\.de has 200"):
        load_translations({**files, "short": short}, ref_file)
    with pytest.raises(InputFileError, match="no such file"):
        load_translations({"a": tmp_path / "missing.txt", "b": short}, ref_file)
    with pytest.raises(ParameterTypeError, match="must be the path of a plain-text"):
        load_translations(files, 3)


def test_saved_study_keeps_corpus_metric(tmp_path):
    hyp = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 3, "segment": [0, 1, 2] * 2,
                        "hypothesis": ["the cat sat on the mat", "a dog", "hello world",
                                       "the cat sat", "dog", "hello there world"]})
    ref = pd.DataFrame({"segment": [2, 0, 1], "reference": [
        "hello world", "the cat sat on the mat", "a dog barks"]})
    study = load_translations(hyp, ref, metrics=["bleu", "ter"], smooth_method="floor")
    ds = study["translations"].to_dataset()
    assert ds.instance.values.tolist() == ["2", "0", "1"]      # reference order
    assert ds.corpus_fn.values.tolist() == ["bleu(smooth_method=floor,smooth_value=0.1)",
                                            "ter"]
    path = cube.save(study, tmp_path / "s.nc")
    back = cube.open_study(path)
    assert _corpus_scores(back, "bleu") == _corpus_scores(study, "bleu")
    expected = BLEU(smooth_method="floor").corpus_score(
        ["the cat sat", "dog", "hello there world"],
        [["the cat sat on the mat", "a dog barks", "hello world"]]).score
    assert _corpus_scores(back, "bleu")["b"] == pytest.approx(expected, abs=1e-9)


def _tiny():
    hyp = pd.DataFrame({"system": ["a", "a", "b", "b"], "segment": [0, 1, 0, 1],
                        "hypothesis": ["x y", "z", "x", "y z"]})
    ref = pd.DataFrame({"segment": [0, 1], "reference": ["x y", "y z"]})
    return hyp, ref


def test_translation_input_errors(tmp_path):
    hyp, ref = _tiny()
    with pytest.raises(ParameterError, match=r"unknown translation metric\(s\) \['meteor'\]"):
        load_translations(hyp, ref, metrics=["bleu", "meteor"])
    with pytest.raises(ParameterError, match="`metrics` is empty"):
        load_translations(hyp, ref, metrics="")
    with pytest.raises(ParameterError, match="more than once"):
        load_translations(hyp, ref, metrics=["bleu", "bleu"])
    with pytest.raises(ParameterError, match="unknown sacrebleu option 'tokeniser'"):
        load_translations(hyp, ref, tokeniser="13a")
    with pytest.raises(ParameterError, match="`tokenize` must be one of"):
        load_translations(hyp, ref, tokenize="moses")
    with pytest.raises(ParameterError, match="`smooth_method` must be one of"):
        load_translations(hyp, ref, smooth_method="nist")
    with pytest.raises(DataValidationError, match="`hypotheses` is empty"):
        load_translations(hyp.iloc[:0], ref)
    with pytest.raises(DataValidationError, match="`references` is empty"):
        load_translations(hyp, ref.iloc[:0])
    with pytest.raises(DataValidationError, match=r"lacks column\(s\) \['text'\]"):
        load_translations(hyp, ref, text_col="text")
    with pytest.raises(DataValidationError, match=r"system 'b' lacks 1 of 2 segments"):
        load_translations(hyp.iloc[:3], ref)
    extra = pd.concat([hyp, pd.DataFrame({"system": ["a"], "segment": [7],
                                          "hypothesis": ["q"]})])
    with pytest.raises(DataValidationError, match=r"segment sets do not match: 1 segment"
                                                  r"\(s\) of `hypotheses` are not in"):
        load_translations(extra, ref)
    more_ref = pd.concat([ref, pd.DataFrame({"segment": [9], "reference": ["r"]})])
    with pytest.raises(DataValidationError, match=r"of `references` have no hypothesis"):
        load_translations(hyp, more_ref)
    with pytest.raises(DataValidationError, match=r"duplicated \(system, segment\)"):
        load_translations(pd.concat([hyp, hyp.iloc[:1]]), ref)
    with pytest.raises(DataValidationError, match="duplicated segment"):
        load_translations(hyp, pd.concat([ref, ref.iloc[:1]]))
    nan_hyp = hyp.astype({"hypothesis": object})
    nan_hyp.loc[1, "hypothesis"] = None
    with pytest.raises(DataValidationError, match=r"column 'hypothesis' has 1 missing"):
        load_translations(nan_hyp, ref)
    nan_ref = ref.astype({"reference": object})
    nan_ref.loc[0, "reference"] = None
    with pytest.raises(DataValidationError, match=r"`references`: column 'reference' has 1"):
        load_translations(hyp, nan_ref)
    with pytest.raises(InputFileError, match="no such file"):
        load_translations(tmp_path / "nope.tsv", ref)
    with pytest.raises(ParameterTypeError, match="must be a path or a pandas DataFrame"):
        load_translations(42, ref)
    with pytest.raises(DataValidationError, match="at least 2 systems"):
        load_translations(hyp[hyp.system == "a"], ref)
    (tmp_path / "r.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match="`hypotheses` is empty"):
        load_translations({}, tmp_path / "r.txt")


# --------------------------------------------------------------------------- labels
def _label_frame(seed=0, n=120, systems=3):
    rng = np.random.default_rng(seed)
    gold = rng.choice(list("abcd"), n, p=[0.4, 0.3, 0.2, 0.1])
    rows, preds = [], {}
    for s in range(systems):
        pred = np.where(rng.random(n) < 0.5, gold, rng.choice(list("abcde"), n))
        preds[f"s{s}"] = pred
        rows.append(pd.DataFrame({"system": f"s{s}", "instance": np.arange(n), "gold": gold,
                                  "prediction": pred}))
    return pd.concat(rows, ignore_index=True), gold, preds


@pytest.mark.parametrize("seed", [0, 7])
def test_load_labels_equal_sklearn(seed):
    skm = pytest.importorskip("sklearn.metrics")
    frame, gold, preds = _label_frame(seed)
    study = load_labels(frame, metrics=["accuracy", "macro_f1", "micro_f1",
                                        "macro_precision", "macro_recall", "f1"])
    ds = study["labels"].to_dataset()
    classes = json.loads(ds.attrs["classes"])
    assert ds.metric.values.tolist()[:5] == ["accuracy", "macro_f1", "micro_f1",
                                              "macro_precision", "macro_recall"]
    assert ds.metric.values.tolist()[5:] == [f"f1[{c}]" for c in classes]
    for s, pred in preds.items():
        ref = {"accuracy": skm.accuracy_score(gold, pred),
               "macro_f1": skm.f1_score(gold, pred, average="macro", zero_division=0),
               "micro_f1": skm.f1_score(gold, pred, average="micro", zero_division=0),
               "macro_precision": skm.precision_score(gold, pred, average="macro",
                                                      zero_division=0),
               "macro_recall": skm.recall_score(gold, pred, average="macro",
                                                zero_division=0)}
        per_class = skm.f1_score(gold, pred, labels=classes, average=None, zero_division=0)
        ref.update({f"f1[{c}]": v for c, v in zip(classes, per_class)})
        for m, v in ref.items():
            assert _corpus_scores(study, m)[s] == pytest.approx(v, abs=1e-12), (s, m)


def test_load_labels_file_and_errors(tmp_path):
    frame, _, _ = _label_frame(1, n=30)
    path = tmp_path / "cls.csv"
    frame.rename(columns={"prediction": "pred"}).to_csv(path, index=False)
    study = load_labels(path, pred_col="pred", metrics="accuracy,f1[a]")
    assert list(study.children) == ["cls"]
    with pytest.raises(ParameterError, match=r"unknown classification metric\(s\) \['auc'\]"):
        load_labels(frame, metrics=["auc"])
    with pytest.raises(ParameterError, match="class 'z' is not among the labels"):
        load_labels(frame, metrics=["f1[z]"])
    with pytest.raises(ParameterError, match="per-class metrics are written"):
        load_labels(frame, metrics=["macro_f1[a]"])
    bad = frame.copy()
    bad.loc[0, "gold"] = "zz"
    with pytest.raises(DataValidationError, match="gold labels disagree across systems"):
        load_labels(bad)
    with pytest.raises(DataValidationError, match=r"system 's2' lacks predictions for 1 of"):
        load_labels(frame.iloc[:-1])
    with pytest.raises(DataValidationError, match=r"duplicated \(system, instance\)"):
        load_labels(pd.concat([frame, frame.iloc[:1]]))
    with pytest.raises(DataValidationError, match="`path_or_frame` is empty"):
        load_labels(frame.iloc[:0])
    nan = frame.copy()
    nan["prediction"] = nan["prediction"].astype(object)
    nan.loc[3, "prediction"] = None
    with pytest.raises(DataValidationError, match=r"column 'prediction' has 1 missing"):
        load_labels(nan)


# --------------------------------------------------------------------------- generic
def test_from_statistics_frame_and_array():
    register_corpus_metric("test_hits", lambda s: 100 * s[..., 0] / s[..., 1], 2,
                           stat_names=["hits", "n"], overwrite=True)
    rng = np.random.default_rng(3)
    arr = np.stack([rng.integers(0, 5, (2, 40)), np.full((2, 40), 5)], axis=-1)
    st = from_statistics(arr, "test_hits", systems=["x", "y"], metric="hit_rate")
    ds = st["statistics"].to_dataset()
    assert ds.metric.values.tolist() == ["hit_rate"]
    assert ds.corpus_fn.values.tolist() == ["test_hits"]
    scores = _corpus_scores(st, "hit_rate")
    assert scores["x"] == pytest.approx(100 * arr[0, :, 0].sum() / arr[0, :, 1].sum())
    frame = pd.DataFrame({"system": np.repeat(["x", "y"], 40), "instance": np.tile(
        np.arange(40), 2), "n": arr[..., 1].ravel(), "hits": arr[..., 0].ravel()})
    st2 = from_statistics(frame, "test_hits", metric="hit_rate")   # columns by stat_names
    np.testing.assert_array_equal(st2["statistics"].to_dataset().stats.values,
                                  ds.stats.values)
    with pytest.raises(DataValidationError, match=r"needs 2 statistic column\(s\); got 3"):
        from_statistics(frame, "test_hits", stat_cols=["n", "hits", "n"])
    with pytest.raises(DataValidationError, match=r"must have shape \(system, instance, 2\)"):
        from_statistics(arr[..., :1], "test_hits")
    with pytest.raises(DataValidationError, match="statistics missing or NaN"):
        from_statistics(frame.iloc[1:], "test_hits")
    with pytest.raises(DataValidationError, match="must be finite"):
        from_statistics(np.where(arr == 0, np.nan, arr), "test_hits")
    with pytest.raises(ParameterError, match="unknown corpus metric 'nope'"):
        from_statistics(arr, "nope")


# --------------------------------------------------------------------------- vs sacrebleu's
# paired tests (engine on corpus metrics; baseline LIUM-NMT as in the issue)
SB_SYSTEMS = ["LIUM-NMT", "FBK", "KIT", "RWTH-nmt-ensemble", "SYSTRAN"]
SB_AR, SB_BS = 2000, 500


@pytest.fixture(scope="module")
def sb_paired(wmt):
    """sacrebleu PairedTest (ar and bs) on 4 systems vs LIUM-NMT, BLEU, with the same
    statistics fed to multistat; sacrebleu's seed 12345 (its default)."""
    import os

    from sacrebleu.significance import PairedTest
    hyp, ref = _subset(wmt, SB_SYSTEMS)
    study = load_translations(hyp, ref, metrics="bleu")
    refs = [ref.sort_values("segment").reference.tolist()]
    named = [(s, hyp[hyp.system == s].sort_values("segment").hypothesis.tolist())
             for s in SB_SYSTEMS]
    old = os.environ.pop("SACREBLEU_SEED", None)
    try:
        out = {}
        for kind, n in (("ar", SB_AR), ("bs", SB_BS)):
            _, res = PairedTest(named, {"BLEU": BLEU()}, refs, test_type=kind,
                                n_samples=n)()
            out[kind] = {s: r.p_value for s, r in zip(res["System"][1:], res["BLEU"][1:])}
    finally:
        if old is not None:
            os.environ["SACREBLEU_SEED"] = old
    return study, out


def _p(frame, system, test):
    r = frame[(frame.system_a == system) & (frame.system_b == "LIUM-NMT") &
              (frame.test == test)]
    assert len(r) == 1
    return float(r.p_value.iloc[0])


def test_sacrebleu_pvalues_reproduced_exactly_on_its_own_plans(sb_paired):
    # sacrebleu draws its plans with numpy default_rng(12345): AR swap masks
    # rng.integers(2, (B, n), bool), bootstrap indices rng.choice(n, (B, n)); feeding them
    # through multistat's corpus function and p rules must give sacrebleu's numbers.
    from multistat.errors import CompatibilityWarning
    from multistat.significance.resampling import bootstrap_pvalues
    study, sb = sb_paired
    ds = study["translations"].to_dataset()
    cm = get_corpus_metric("bleu")
    stats = ds.stats.values[:, 0]                       # (S, n, 10)
    n = stats.shape[1]
    swap = np.random.default_rng(12345).integers(2, size=(SB_AR, n), dtype=bool)
    idx = np.random.default_rng(12345).choice(n, size=(SB_BS, n), replace=True)
    counts = np.zeros((SB_BS, n))
    np.add.at(counts, (np.repeat(np.arange(SB_BS), n), idx.ravel()), 1.0)
    base = stats[0]
    for k, s in enumerate(SB_SYSTEMS[1:], start=1):
        other = stats[k]
        obs = cm(other.sum(0)) - cm(base.sum(0))
        null = np.abs(cm(swap @ base + ~swap @ other) - cm(~swap @ base + swap @ other))
        assert (np.sum(null > abs(obs)) + 1) / (SB_AR + 1) == pytest.approx(sb["ar"][s],
                                                                            abs=1e-12)
        dist = cm(counts @ other) - cm(counts @ base)
        with pytest.warns(CompatibilityWarning, match="over-rejects"):
            p = bootstrap_pvalues(np.asarray(obs), dist, alternative="two-sided",
                                  null_value=0.0, method="sacrebleu")
        assert float(p) == pytest.approx(sb["bs"][s], abs=1e-12)


def test_compare_pvalues_agree_with_sacrebleu_within_monte_carlo_error(sb_paired):
    import multistat as ms
    from multistat.errors import CompatibilityWarning
    study, sb = sb_paired
    B = 10_000
    ar = ms.compare(study, tests=("permutation", "bootstrap"), pairs="baseline:LIUM-NMT",
                    n_resamples=B, seed=0, effect_sizes=False)
    with pytest.warns(CompatibilityWarning):
        compat = ms.compare(study, tests=("bootstrap",), pairs="baseline:LIUM-NMT",
                            n_resamples=2000, seed=0, effect_sizes=False,
                            bootstrap_pvalue="sacrebleu")
    for s in SB_SYSTEMS[1:]:
        p_sb, p_ms = sb["ar"][s], _p(ar, s, "permutation")
        # sacrebleu counts |null| > |obs|; multistat doubles the smaller tail: binomial
        # variances p(1-p)/B and 2p(1-p/2)/B
        se = np.sqrt(p_sb * (1 - p_sb) / SB_AR + 2 * p_sb * (1 - p_sb / 2) / B)
        assert abs(p_ms - p_sb) <= 4 * se + 1e-3, (s, p_ms, p_sb)
        # multistat's (shifted) bootstrap p agrees with its own AR p on the same data
        p_boot = _p(ar, s, "bootstrap")
        assert abs(p_boot - p_ms) <= 0.25 * p_ms + 0.01, (s, p_boot, p_ms)
        # the compatibility option reproduces sacrebleu's bs numbers (other plans)
        p_bs, p_c = sb["bs"][s], _p(compat, s, "bootstrap")
        se = np.sqrt(p_bs * (1 - p_bs) * (1 / SB_BS + 1 / 2000)) + 1 / SB_BS
        assert abs(p_c - p_bs) <= 4 * se, (s, p_c, p_bs)
        # ... and it is roughly half the correct p where the latter is not tiny
        if p_ms > 0.1:
            assert p_c < 0.75 * p_boot


# --------------------------------------------------------------------------- command line
def _cli_app():
    import typer

    from multistat.cli.corpus import load_labels_command, load_mt_command
    app = typer.Typer()
    app.command("load-mt")(load_mt_command)
    app.command("load-labels")(load_labels_command)
    return app


def test_cli_load_mt_table_and_text_folder(tmp_path):
    from typer.testing import CliRunner
    hyp = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 3, "segment": [0, 1, 2] * 2,
                        "hypothesis": ["The cat sat", "a dog", "hello world",
                                       "the cat", "dog", "Hello there world"]})
    ref = pd.DataFrame({"segment": [0, 1, 2], "reference": ["the cat sat", "a dog barks",
                                                            "hello world"]})
    hyp.to_csv(tmp_path / "hyp.tsv", sep="\t", index=False)
    ref.to_csv(tmp_path / "ref.tsv", sep="\t", index=False)
    runner = CliRunner()
    res = runner.invoke(_cli_app(), ["load-mt", str(tmp_path / "hyp.tsv"),
                                     str(tmp_path / "ref.tsv"), "--metrics", "bleu,ter",
                                     "--lowercase", "--smooth-method", "floor",
                                     "--sacrebleu-option", "ter_case_sensitive=true",
                                     "--out", str(tmp_path / "s.nc")])
    assert res.exit_code == 0, res.output
    assert "2 systems x 2 metrics x 3 instances" in res.output
    study = cube.open_study(tmp_path / "s.nc")
    ds = study[next(iter(study.children))].to_dataset()
    sig = json.loads(ds.attrs["sacrebleu"])
    assert "case:lc" in sig["bleu"] and "case:mixed" in sig["ter"]
    direct = load_translations(hyp, ref, metrics="bleu,ter", lowercase=True,
                               smooth_method="floor", ter_case_sensitive=True)
    assert _corpus_scores(study, "bleu") == pytest.approx(_corpus_scores(direct, "bleu"))
    # plain-text folder, one file per system
    folder = tmp_path / "systems"
    folder.mkdir()
    for s, g in hyp.groupby("system"):
        (folder / f"{s}.txt").write_text("\n".join(g.hypothesis) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(ref.reference) + "\n", encoding="utf-8")
    res = runner.invoke(_cli_app(), ["load-mt", str(folder), str(tmp_path / "ref.txt"),
                                     "--metrics", "chrf", "--out", str(tmp_path / "t.nc")])
    assert res.exit_code == 0, res.output
    assert set(cube.open_study(tmp_path / "t.nc")["translations"].system.values) == {"a", "b"}
    res = runner.invoke(_cli_app(), ["load-mt", str(tmp_path / "hyp.tsv"),
                                     str(tmp_path / "ref.tsv"), "--sacrebleu-option", "x"])
    assert isinstance(res.exception, ParameterError)
    assert "expected KEY=VALUE" in str(res.exception)
    res = runner.invoke(_cli_app(), ["load-mt", str(tmp_path / "none*.txt"),
                                     str(tmp_path / "ref.txt")])
    assert isinstance(res.exception, InputFileError)
    assert "no system files found" in str(res.exception)


def test_cli_load_labels(tmp_path):
    from typer.testing import CliRunner
    frame, _, _ = _label_frame(2, n=40)
    frame.to_csv(tmp_path / "cls.csv", index=False)
    res = CliRunner().invoke(_cli_app(), ["load-labels", str(tmp_path / "cls.csv"),
                                          "--metrics", "accuracy,micro_f1,macro_f1",
                                          "--out", str(tmp_path / "c.nc")])
    assert res.exit_code == 0, res.output
    study = cube.open_study(tmp_path / "c.nc")
    assert study["cls"].metric.values.tolist() == ["accuracy", "micro_f1", "macro_f1"]


def test_parallel_extraction_equals_serial(wmt):
    hyp, ref = _subset(wmt, ["LIUM-NMT", "C-3MA", "xmu"], 100)
    serial = load_translations(hyp, ref, metrics="bleu,chrf")
    forked = load_translations(hyp, ref, metrics="bleu,chrf", n_jobs=2)
    np.testing.assert_array_equal(serial["translations"].stats.values,
                                  forked["translations"].stats.values)
    with pytest.raises(ParameterError, match="`n_jobs` must be an integer >= 1"):
        load_translations(hyp, ref, n_jobs=0)


def test_multiple_references_and_empty_hypotheses(wmt, tmp_path):
    # second reference: another system's output stands in for a second human reference
    hyp, ref = _subset(wmt, ["LIUM-NMT", "C-3MA", "FBK"], 60)
    ref2 = hyp[hyp.system == "FBK"].sort_values("segment").hypothesis.tolist()
    hyp = hyp[hyp.system != "FBK"].copy()
    hyp.loc[hyp.index[:5], "hypothesis"] = ""                   # empty outputs
    refs = ref.sort_values("segment").assign(ref2=ref2)
    study = load_translations(hyp, refs, metrics="bleu,chrf,ter",
                              reference_col=["reference", "ref2"])
    streams = [refs.reference.tolist(), ref2]
    for metric, obj in (("bleu", BLEU()), ("chrf", CHRF()), ("ter", TER())):
        expected = {s: obj.corpus_score(g.sort_values("segment").hypothesis.tolist(),
                                        streams).score for s, g in hyp.groupby("system")}
        assert _max_diff(_corpus_scores(study, metric), expected) < 1e-9, metric
    assert "nrefs:2" in json.loads(study["translations"].attrs["sacrebleu"])["bleu"]
    # the same through plain-text files, references given as a list of files
    files = {}
    for s in pd.unique(hyp.system):                      # same system order as the table
        files[s] = tmp_path / f"{s}.txt"
        files[s].write_text("\n".join(hyp[hyp.system == s].sort_values("segment").hypothesis)
                            + "\n", encoding="utf-8")
    for k, stream in enumerate(streams):
        (tmp_path / f"ref{k}.txt").write_text("\n".join(stream) + "\n", encoding="utf-8")
    text = load_translations(files, [tmp_path / "ref0.txt", tmp_path / "ref1.txt"],
                             metrics="bleu,chrf,ter")
    np.testing.assert_array_equal(text["translations"].stats.values,
                                  study["translations"].stats.values)
    (tmp_path / "short.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"reference file .*short\.txt has 2 lines but "
                                             r"reference file .*ref0\.txt has 60"):
        load_translations(files, [tmp_path / "ref0.txt", tmp_path / "short.txt"])


def test_system_intervals_match_sacrebleu_bootstrap_ci(sb_paired, wmt):
    # sacrebleu's corpus_score(n_bootstrap=1000) reports half the width of the 2.5-97.5 %
    # percentile range of resampled corpus BLEU; multistat's per-system percentile interval
    # (10,000 resamples) must have the same width within Monte Carlo error (~5 % here)
    from multistat.comparison import system_scores
    study, _ = sb_paired
    hyp, ref = _subset(wmt, ["LIUM-NMT"])
    sb = BLEU().corpus_score(hyp.sort_values("segment").hypothesis.tolist(),
                             [ref.sort_values("segment").reference.tolist()],
                             n_bootstrap=1000)
    ours = system_scores(study, n_resamples=10_000, seed=0)
    row = ours[(ours.system == "LIUM-NMT") & (ours.metric == "bleu")].iloc[0]
    assert row.score == pytest.approx(sb.score, abs=1e-9)
    assert (row.ci_high - row.ci_low) / 2 == pytest.approx(sb._ci, rel=0.15)


def test_table_formats_and_unreadable_file(tmp_path):
    hyp, ref = _tiny()
    hyp.to_json(tmp_path / "h.jsonl", orient="records", lines=True)
    ref.to_csv(tmp_path / "r.csv", index=False)
    hyp.to_parquet(tmp_path / "h.parquet")
    a = load_translations(tmp_path / "h.jsonl", tmp_path / "r.csv", metrics="bleu")
    b = load_translations(tmp_path / "h.parquet", ref, metrics="bleu", dataset="x")
    assert list(b.children) == ["x"]
    np.testing.assert_array_equal(next(iter(a.children.values())).stats.values,
                                  b["x"].stats.values)
    (tmp_path / "bad.parquet").write_text("not parquet", encoding="utf-8")
    with pytest.raises(InputFileError, match=r"bad\.parquet: not a readable Parquet file"):
        load_translations(tmp_path / "bad.parquet", ref)


def test_tables_read_by_the_one_table_reader(tmp_path):
    # adapters read table files with multistat.io's reader: a tab-separated .txt keeps
    # the spaces inside its text cells, .bz2/.xz are decompressed, an empty hypothesis
    # stays "" (a translation), and a short line is an error naming file and line
    import bz2
    import lzma
    hyp, ref = _tiny()
    hyp.loc[3, "hypothesis"] = ""
    direct = load_translations(hyp, ref, metrics="bleu", dataset="d")
    hyp_text = hyp.to_csv(sep="\t", index=False)
    (tmp_path / "h.txt").write_text(hyp_text, encoding="utf-8")
    with bz2.open(tmp_path / "r.tsv.bz2", "wt", encoding="utf-8") as fh:
        fh.write(ref.to_csv(sep="\t", index=False))
    with lzma.open(tmp_path / "h.csv.xz", "wt", encoding="utf-8") as fh:
        fh.write(hyp.to_csv(index=False))
    for h in ("h.txt", "h.csv.xz"):
        study = load_translations(tmp_path / h, tmp_path / "r.tsv.bz2", metrics="bleu",
                                  dataset="d")
        np.testing.assert_array_equal(study["d"].stats.values, direct["d"].stats.values)
    (tmp_path / "short.tsv").write_text("system\tsegment\thypothesis\na\t0\n",
                                        encoding="utf-8")
    with pytest.raises(InputFileError, match=r"short\.tsv, line 2: malformed line: expected "
                                             r"3 fields separated by tabs, found 2"):
        load_translations(tmp_path / "short.tsv", ref, metrics="bleu")


def test_translation_progress_lines(tmp_path):
    # load_translations(progress=...) reports the statistics extraction (load-mt was silent
    # for minutes on TER): one final line per metric, counting distinct hypotheses
    hyp, ref = _tiny()
    lines = []
    study = load_translations(hyp, ref, metrics=["bleu", "ter"], progress=lines.append)
    assert [ln.split(":")[0] for ln in lines] == ["bleu", "ter"]
    # 4 hypotheses, all distinct (segment, text) pairs
    assert all(" 4 of 4 distinct hypotheses, " in ln for ln in lines)
    quiet = load_translations(hyp, ref, metrics=["bleu", "ter"])
    np.testing.assert_array_equal(study["translations"].stats.values,
                                  quiet["translations"].stats.values)
    with pytest.raises(ParameterTypeError, match="`progress` must be a callable"):
        load_translations(hyp, ref, metrics="bleu", progress="yes")
