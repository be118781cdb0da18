"""Rebuild ``ted_mqm.csv.gz`` from the MQM error annotations shipped with the tests
(``tests/data/mqm-ted-ende/ratings.tsv.gz``: google/wmt-mqm-human-evaluation, TED talks
English-German, Apache-2.0, see that folder's SOURCE.md and LICENSE).

One row per system x segment x rater: the MQM score, minus the weighted error count of
that rater's annotations of that segment (Major 5, Minor 1, minor Fluency/Punctuation
0.1; Freitag et al. 2021), so 0 is a perfect segment and higher is better.

Run from this folder:  python make_scores.py
"""

import csv
from pathlib import Path

import pandas as pd

SOURCE = Path(__file__).resolve().parents[2] / "tests" / "data" / "mqm-ted-ende" / \
    "ratings.tsv.gz"

errors = pd.read_csv(SOURCE, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
weight = errors["severity"].map({"Major": 5.0, "Minor": 1.0, "No-error": 0.0})
weight[(errors["severity"] == "Minor") & (errors["category"] == "Fluency/Punctuation")] = 0.1
scores = (errors.assign(mqm=-weight)
          .groupby(["system", "doc", "seg_id", "rater"], as_index=False)["mqm"].sum())
scores["segment"] = scores["doc"] + "/" + scores["seg_id"].astype(str)
scores[["system", "segment", "rater", "mqm"]].to_csv(
    Path(__file__).with_name("ted_mqm.csv.gz"), index=False)
