"""TER on paragraph-length segments: multistat's compiled search against sacrebleu's own.

Data: the WMT17 en-de slice shipped in ``tests/data/wmt17-en-de`` (10 systems x 600
segments, sacrebleu's test fixture; its SOURCE.md). Paragraphs are built by joining
``--size`` consecutive segments (in segment order) with a space, for the hypotheses and the
reference alike: 600 segments give ``600 / size`` paragraphs per system (size 10: 60
paragraphs of about 230 reference words, the length of WMT24's paragraph-level test sets).

Both sides get the same strings. sacrebleu: ``TER(references=[refs])`` then
``_extract_corpus_statistics(hyps, None)`` per system (the statistics its
``corpus_score`` sums; the reference cache built once, outside the timing). multistat:
``load_translations(..., metrics="ter")`` for all systems at once (reading, tokenizing,
the compiled search and the study; numba's compilation is paid once in a warm-up call on
other text, as a second run of the command would find it in numba's on-disk cache). The
statistics are compared segment by segment (``edits``, ``ref_len``): they must be equal.
sacrebleu is timed on ``--systems`` systems (default 2: about 3-4 minutes on paragraphs of
10) and its per-system time reported; multistat's search alone
(:func:`multistat.io._ter.ter_statistics`, sacrebleu's tokenizer included) is timed on the
same systems, and the ratio is sacrebleu's time over it; ``load_translations`` on all
systems (divided by their number) is reported beside it. Run::

    .venv/bin/python benchmarks/ter_speed.py                  # paragraphs of 10 segments
    .venv/bin/python benchmarks/ter_speed.py --segments 300 --systems 1   # a quicker run
    .venv/bin/python benchmarks/ter_speed.py --size 1         # sentence-level, for reference
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import ROOT, TEST_DATA, machine, table

DATA = TEST_DATA / "wmt17-en-de"


def paragraphs(lines, size):
    """Consecutive groups of ``size`` segments joined by a space."""
    return [" ".join(lines[i:i + size]) for i in range(0, len(lines), size)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=10, help="segments per paragraph")
    ap.add_argument("--segments", type=int, default=600,
                    help="first segments of the slice used (600: all)")
    ap.add_argument("--systems", type=int, default=2,
                    help="systems sacrebleu is timed on (multistat always does all 10)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" /
                    "ter_speed.md")
    args = ap.parse_args()

    from sacrebleu.metrics import TER

    from multistat import cube
    from multistat.adapters import load_translations
    from multistat.io._ter import ter_statistics

    hyp = pd.read_csv(DATA / "hypotheses.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    ref = pd.read_csv(DATA / "references.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    ref = ref.iloc[:args.segments]
    refs = paragraphs(ref["reference"].tolist(), args.size)
    outputs = {s: paragraphs(part.set_index("segment").loc[ref["segment"], "hypothesis"]
                             .tolist(), args.size)
               for s, part in hyp.groupby("system", sort=False)}
    systems = list(outputs)
    table_h = pd.DataFrame([(s, i, h) for s in systems for i, h in enumerate(outputs[s])],
                           columns=["system", "segment", "hypothesis"])
    table_r = pd.DataFrame({"segment": range(len(refs)), "reference": refs})

    # warm-up on other text: numba's compile (or cache load) is not the search
    ter_statistics([["a", "b", "c"]], [[["c", "a", "b"]]])
    t = time.perf_counter()
    study = load_translations(table_h, table_r, metrics="ter")
    t_ms = time.perf_counter() - t
    ds = cube.datasets(study)["translations"]
    ours = ds["stats"].values[:, 0, :, :2]

    metric = TER(references=[refs])
    ref_words = [c["ref_words"] for c in metric._ref_cache]
    t_sb, t_same, equal, n_words = [], [], True, []
    for k, s in enumerate(systems[:args.systems]):
        t = time.perf_counter()
        want = np.asarray(metric._extract_corpus_statistics(outputs[s], None), dtype=float)
        t_sb.append(time.perf_counter() - t)
        # multistat's search on the same system alone (sacrebleu's tokenizer included)
        t = time.perf_counter()
        mine = ter_statistics([metric._preprocess_segment(h).split() for h in outputs[s]],
                              ref_words)
        t_same.append(time.perf_counter() - t)
        equal &= bool(np.array_equal(want, ours[k])) and bool(np.array_equal(want, mine))
        n_words.append(want[:, 1].mean())
    per_sb = float(np.mean(t_sb))
    per_same = float(np.mean(t_same))
    per_ms = t_ms / len(systems)
    rows = [{"paragraph": f"{args.size} segments", "paragraphs": len(refs),
             "ref words (mean)": round(float(np.mean(n_words)), 1),
             "sacrebleu s/system": round(per_sb, 2),
             "multistat s/system (same)": round(per_same, 3),
             "ratio (same systems)": round(per_sb / per_same, 1),
             "load_translations s/system (all)": round(per_ms, 3),
             "statistics equal": equal}]
    cols = list(rows[0])
    text = (f"# TER on paragraph-length segments (benchmarks/ter_speed.py)\n\n"
            f"{machine()}\n\nsacrebleu timed on {args.systems} of {len(systems)} systems; "
            f"multistat on all {len(systems)} ({t_ms:.2f} s).\n\n{table(rows, cols)}\n")
    print(text)
    if not equal:
        raise SystemExit("the statistics differ from sacrebleu's")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
