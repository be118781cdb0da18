"""The embedded demo study (``multistat demo-data``), generated with a fixed seed.

Ten systems, three metrics and two test sets with *known* true differences:

* ``sent_bleu`` — a skewed, bounded sentence-BLEU-like score in [0, 100] (one decimal,
  so ties occur; ~8 % exact zeros), higher is better;
* ``likert`` — a 1..5 human rating (discrete, many ties), higher is better;
* ``correct`` — binary correct/incorrect (McNemar territory), higher is better.

Every score is a function of a per-system quality ``q`` (:data:`QUALITY`) and a
per-instance difficulty shared by all systems (so the systems' scores are positively
correlated, as in real evaluations: pairing matters). ``sys-a``/``sys-b`` and
``sys-d``/``sys-e`` and ``sys-g``/``sys-h`` are equal in truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from multistat.io import write_parquet

QUALITY = {"sys-a": 0.0, "sys-b": 0.0, "sys-c": 0.05, "sys-d": 0.1, "sys-e": 0.1,
           "sys-f": 0.2, "sys-g": 0.3, "sys-h": 0.3, "sys-i": 0.5, "sys-j": 0.6}
DATASETS = {"newstest": 600, "tedtalks": 150}
SEED = 20261122


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def demo_frame(seed: int = SEED) -> pd.DataFrame:
    """The demo study as a long frame ``dataset, system, metric, instance, score``."""
    rng = np.random.default_rng(seed)
    rows = []
    for dataset, n in DATASETS.items():
        difficulty = rng.normal(0.0, 1.0, n)
        zero = rng.random(n) < 0.06  # instances every system fails on
        for system, q in QUALITY.items():
            mu = _sigmoid(-0.6 + q + 0.9 * difficulty + rng.normal(0, 0.3, n))
            bleu = 100 * rng.beta(4 * mu, 4 * (1 - mu))
            bleu = np.where(zero | (rng.random(n) < 0.02), 0.0, np.round(bleu, 1))
            likert = np.clip(np.round(3.0 + 1.2 * (q + 0.6 * difficulty)
                                      + rng.normal(0, 0.8, n)), 1, 5)
            correct = (rng.random(n) < _sigmoid(0.4 + 1.5 * q + difficulty)).astype(float)
            for metric, values in (("sent_bleu", bleu), ("likert", likert),
                                   ("correct", correct)):
                rows.append(pd.DataFrame({
                    "dataset": dataset, "system": system, "metric": metric,
                    "instance": [f"{dataset}-{i:04d}" for i in range(n)], "score": values}))
    return pd.concat(rows, ignore_index=True)


def demo_pairs(seed: int = SEED, n: int = 100) -> dict[str, np.ndarray]:
    """Two-column samples in the NLPStatTest format: ``{name: (n, 2) array}``.

    ``normal`` and ``beta`` families; ``h0-equal`` (A and B identically distributed),
    ``h1-greater`` (A better by 0.5 sd for normal, 0.1 for beta), ``h1-less``.
    """
    rng = np.random.default_rng([seed, 2])
    out = {}
    for family in ("normal", "beta"):
        for case, shift in (("h0-equal", 0.0), ("h1-greater", 1.0), ("h1-less", -1.0)):
            if family == "normal":
                base = rng.normal(30, 5, n)
                a = base + rng.normal(2.5 * shift, 5, n)
                b = base + rng.normal(0, 5, n)
            else:
                a = rng.beta(2 + shift, 5, n)
                b = rng.beta(2, 5, n)
            out[f"data-{case}-{family}"] = np.column_stack([np.round(a, 4), np.round(b, 4)])
    return out


def write_demo(out_dir, seed: int = SEED) -> list[Path]:
    """Write ``demo.parquet`` and the two-column samples under ``out_dir``."""

    out_dir = Path(out_dir)
    (out_dir / "pairs").mkdir(parents=True, exist_ok=True)
    frame = demo_frame(seed)
    path = out_dir / "demo.parquet"
    write_parquet(frame, path, metadata={"generator": "multistat demo-data", "seed": seed,
                                         "true_quality": QUALITY})
    written = [path]
    for name, data in demo_pairs(seed).items():
        p = out_dir / "pairs" / f"{name}.txt"
        np.savetxt(p, data, fmt="%.4f", delimiter=" ")
        written.append(p)
    return written
