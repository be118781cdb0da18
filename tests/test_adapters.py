"""Tests of multistat.adapters on the real WMT17 en-de data and on random labels.

References: sacrebleu's ``corpus_score`` (BLEU, CHRF, TER objects with the same options)
and scikit-learn's classification metrics (test-only). Known values from
``../shared/data/README.md``: BLEU 26.60 (LIUM-NMT), 22.67 (C-3MA), 26.33 (FBK).
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
from multistat.errors import (DataValidationError, InputFileError, ParameterError,
                              ParameterTypeError)

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU, CHRF, TER  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wmt17-en-de"
needs_wmt = pytest.mark.skipif(not (DATA / "hypotheses.tsv.gz").exists(),
                               reason="WMT17 data not available")


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


@needs_wmt
def test_wmt17_bleu_all_systems_equal_sacrebleu(wmt):
    study = load_translations(DATA / "hypotheses.tsv.gz", DATA / "references.tsv.gz",
                              metrics="bleu")
    assert list(study.children) == ["wmt17-en-de"]
    ds = study["wmt17-en-de"].to_dataset()
    assert ds.sizes["system"] == 16 and ds.sizes["instance"] == 3004
    assert ds.kind.values.tolist() == ["corpus"]
    ours = _corpus_scores(study, "bleu")
    # sacrebleu 2.x defaults: 13a tokenizer, exp smoothing
    assert _max_diff(ours, _sacrebleu_scores(BLEU(), *wmt)) < 1e-9
    # data README: 26.60 LIUM-NMT, 22.67 C-3MA, 26.33 FBK
    assert [round(ours[s], 2) for s in ("LIUM-NMT", "C-3MA", "FBK")] == [26.60, 22.67, 26.33]
    sig = json.loads(ds.attrs["sacrebleu"])["bleu"]
    assert "tok:13a" in sig and "smooth:exp" in sig


@needs_wmt
def test_wmt17_chrf_ter_all_systems_equal_sacrebleu(wmt):
    # all 16 systems; a slice of segments keeps TER (slow in sacrebleu) under ~10 s
    hyp, ref = _subset(wmt, n_segments=100)
    study = load_translations(hyp, ref, metrics=["chrf", "ter"])
    assert _max_diff(_corpus_scores(study, "chrf"), _sacrebleu_scores(CHRF(), hyp, ref)) < 1e-9
    assert _max_diff(_corpus_scores(study, "ter"), _sacrebleu_scores(TER(), hyp, ref)) < 1e-9
    ds = study["translations"].to_dataset()
    assert ds.higher_is_better.values.tolist() == [True, False]
    assert ds.sizes["stat"] == 18   # chrF's 18 statistics; TER's 2 zero-padded
    assert not ds.stats.values[:, 1, :, 2:].any()


@needs_wmt
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


@needs_wmt
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
