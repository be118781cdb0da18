"""Write this folder from the WMT17 en-de tables (tests/data/wmt17-en-de's format, all 16
systems): ``python make_slice.py HYPOTHESES.tsv.gz REFERENCES.tsv.gz OUT_DIR``.

WMT24's layout (wmt-conference/wmt24-news-systems, ``txt-ts/``), filled with licensed
WMT17 text; see SOURCE.md for every choice. Deterministic: the same inputs give the same
bytes."""

from __future__ import annotations

import gzip
import json
import sys
import uuid
from pathlib import Path

import pandas as pd

PAIR = "en-de"
N_SEGMENTS = 600
PSEUDO_REFERENCE = "online-B"          # its output becomes reference B (not a system)
SHORT = 20                             # reference A words: <= SHORT -> domain "short"
CANARY = f"CANARY GUID {uuid.uuid5(uuid.NAMESPACE_URL, 'multistat/tests/wmt24-layout')}"
HYBRIDS = [("uedin-nmt", "KIT"), ("LIUM-NMT", "SYSTRAN"), ("FBK", "C-3MA")]


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                filename="") as fh:
        fh.write(data)


def _truncate(text: str) -> str:
    words = text.split(" ")
    return " ".join(words[:-1]) if len(words) > 1 else text


def main(hyp_path: str, ref_path: str, out: str) -> None:
    hyp = pd.read_csv(hyp_path, sep="\t", keep_default_na=False)
    ref = pd.read_csv(ref_path, sep="\t", keep_default_na=False)
    hyp = hyp[hyp["segment"] < N_SEGMENTS]
    ref = ref[ref["segment"] < N_SEGMENTS].sort_values("segment")
    outputs = {s: g.sort_values("segment")["hypothesis"].tolist()
               for s, g in hyp.groupby("system", sort=False)}
    ref_a = ref["reference"].tolist()
    ref_b = outputs.pop(PSEUDO_REFERENCE)
    for a, b in HYBRIDS:
        outputs[f"hybrid-{a}-{b}"] = [outputs[a][i] if i % 2 == 0 else outputs[b][i]
                                      for i in range(N_SEGMENTS)]
    outputs["xmu-lowercased"] = [t.lower() for t in outputs["xmu"]]
    outputs["online-A-truncated"] = [_truncate(t) for t in outputs["online-A"]]
    outputs["LIUM-NMT-copy"] = list(outputs["LIUM-NMT"])
    root = Path(out)
    domains = ["short" if len(r.split()) <= SHORT else "long" for r in ref_a]
    docs = [f"newstest2017-{PAIR}.{i}" for i in range(N_SEGMENTS)]
    _write(root / "references" / f"{PAIR}.refA.txt.gz", [CANARY, *ref_a])
    _write(root / "references" / f"{PAIR}.refB.txt.gz", [CANARY, *ref_b])
    _write(root / "documents" / f"{PAIR}.docs.gz",
           ["canary\tcanary", *(f"{d}\t{doc}" for d, doc in zip(domains, docs))])
    _write(root / "metadata" / f"{PAIR}.jsonl.gz",
           [json.dumps({"domain": "canary", "docid": "canary"}),
            *(json.dumps({"domain": d, "docid": doc}) for d, doc in zip(domains, docs))])
    for system, lines in sorted(outputs.items()):
        _write(root / "system-outputs" / PAIR / f"{system}.txt.gz", [CANARY, *lines])


if __name__ == "__main__":
    main(*sys.argv[1:4])
