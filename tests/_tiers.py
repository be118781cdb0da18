"""A leaderboard-size study for the report tests: ``k`` systems in ``tiers`` separated
tiers (each tier 0.05 below the one above it, noise sd 0.1 per instance around a shared
per-instance difficulty), with names as long and alike as shared-task submissions
("team.run-012-contrastive-ensemble")."""

from __future__ import annotations

import numpy as np
import pandas as pd

import multistat as ms

TEAMS = ("uedin", "facebook-ai", "microsoft-research-asia", "online-B", "nict", "tencent",
         "huawei-tsc", "baidu", "charles-u", "kyoto")


def names(k: int) -> list[str]:
    return [f"{TEAMS[i % len(TEAMS)]}.run-{i:03d}" + ("-contrastive-ensemble" if i % 7 == 0
                                                       else "") for i in range(k)]


def tiered_study(k: int, *, n: int = 300, tiers: int = 10, seed: int = 1):
    rng = np.random.default_rng(seed)
    tier = np.arange(k) * tiers // k
    difficulty = rng.normal(0, 1, n)
    score = (0.6 - 0.05 * tier[:, None] + 0.01 * rng.normal(size=(k, 1))
             + 0.1 * difficulty[None] + 0.1 * rng.normal(size=(k, n)))
    frame = pd.DataFrame({"dataset": "newstest2024", "system": np.repeat(names(k), n),
                          "metric": "chrF", "instance": np.tile(np.arange(n), k),
                          "score": score.ravel()})
    return ms.from_frame(frame)
