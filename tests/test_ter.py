"""TER statistics from the compiled search (multistat.io._ter) equal sacrebleu's, segment by
segment: the number of edits and the (mean) reference length, on paragraph-length segments
of the WMT17 en-de slice (consecutive segments joined, as in benchmarks/ter_speed.py), with
two references, on synthetic word sequences that exercise ties, long shifts, the widened
beam of very unequal lengths and empty sides, and through load_translations.

Reference values: sacrebleu 2.x ``TER()._extract_corpus_statistics`` (its own tokenizer
and ``lib_ter.translation_edit_rate``) on the same inputs, computed in each test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("numba")
sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import TER
from sacrebleu.metrics.lib_ter import translation_edit_rate

from multistat import cube
from multistat.adapters import load_translations
from multistat.corpus import get_corpus_metric
from multistat.io._ter import ter_statistics

DATA = Path(__file__).resolve().parent / "data" / "wmt17-en-de"


def _paragraphs(lines, size):
    """Consecutive groups of ``size`` segments joined by a space (one paragraph each)."""
    return [" ".join(lines[i:i + size]) for i in range(0, len(lines), size)]


@pytest.fixture(scope="module")
def wmt():
    hyp = pd.read_csv(DATA / "hypotheses.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    ref = pd.read_csv(DATA / "references.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    outputs = {s: part.set_index("segment").loc[ref["segment"], "hypothesis"].tolist()
               for s, part in hyp.groupby("system", sort=False)}
    return outputs, ref["reference"].tolist()


def _sacrebleu_stats(hyps, refs):
    metric = TER(references=refs)
    return np.asarray(metric._extract_corpus_statistics(hyps, None), dtype=float), metric


def _check_paragraphs(outputs, refs, systems, n_segments, size):
    # the second reference is another system's output (a second translation)
    ref1 = _paragraphs(refs[:n_segments], size)
    ref2 = _paragraphs(outputs["online-F"][:n_segments], size)
    for system in systems:
        hyps = _paragraphs(outputs[system][:n_segments], size)
        want, metric = _sacrebleu_stats(hyps, [ref1, ref2])
        words = [metric._preprocess_segment(h).split() for h in hyps]
        got = ter_statistics(words, [c["ref_words"] for c in metric._ref_cache])
        np.testing.assert_array_equal(got, want)
        assert want[:, 1].mean() > 12 * size  # paragraph length: the shift cap binds


def test_paragraphs_with_two_references_equal_sacrebleu(wmt):
    _check_paragraphs(*wmt, ["LIUM-NMT"], 9, 3)


@pytest.mark.slow
def test_longer_paragraphs_of_more_systems_equal_sacrebleu(wmt):
    _check_paragraphs(*wmt, ["C-3MA", "FBK", "xmu"], 60, 6)


def test_random_word_sequences_equal_sacrebleu():
    rng = np.random.default_rng(7)
    n_checked = 0
    for trial in range(200):
        vocab = int(rng.integers(2, 8))   # small vocabularies: many equal-gain shifts
        n_r = int(rng.integers(0, 25))
        n_h = int(rng.integers(0, 25))
        if trial % 8 == 0:                 # reference 50+ times longer: widened beam
            n_h, n_r = int(rng.integers(0, 2)), int(rng.integers(51, 70))
        ref = [f"w{v}" for v in rng.integers(0, vocab, n_r)]
        if trial % 2 and n_r:              # a shuffled, edited copy: real shifts
            hyp = list(ref)
            for _ in range(3):
                a = int(rng.integers(0, len(hyp) + 1))
                b = int(rng.integers(a, min(len(hyp), a + 8) + 1))
                block = hyp[a:b]
                del hyp[a:b]
                at = min(int(rng.integers(0, len(hyp) + 1)), len(hyp))
                hyp[at:at] = block
            hyp = [w if rng.random() > 0.2 else f"w{rng.integers(0, vocab)}" for w in hyp]
        else:
            hyp = [f"w{v}" for v in rng.integers(0, vocab, n_h)]
        edits, ref_len = translation_edit_rate(hyp, ref)
        got = ter_statistics([hyp], [[ref]])
        assert (got[0, 0], got[0, 1]) == (edits, ref_len), (hyp, ref)
        n_checked += 1
    assert n_checked == 200


def test_load_translations_ter_on_paragraphs_equals_sacrebleu(wmt):
    outputs, refs = wmt
    systems = ["LIUM-NMT", "xmu"]
    ref = _paragraphs(refs[:12], 3)
    hyp = pd.DataFrame([(s, i, h) for s in systems
                        for i, h in enumerate(_paragraphs(outputs[s][:12], 3))],
                       columns=["system", "segment", "hypothesis"])
    study = load_translations(hyp, pd.DataFrame({"segment": range(len(ref)),
                                                 "reference": ref}), metrics="ter")
    ds = cube.datasets(study)["translations"]
    stats = ds["stats"].values[:, 0, :, :2]            # (system, segment, [edits, ref_len])
    cm = get_corpus_metric("ter")
    for k, s in enumerate(systems):
        hyps = hyp.loc[hyp["system"] == s, "hypothesis"].tolist()
        want, metric = _sacrebleu_stats(hyps, [ref])
        np.testing.assert_array_equal(stats[k], want)
        assert cm.score(stats[k], axis=-2) == pytest.approx(
            metric._compute_score_from_stats(want.sum(0)).score, rel=1e-12)
