"""Write the example input of this template: scores.csv.gz (seeded, synthetic).

Three test sets (newstest: 12 documents x 10 sentences, ted: 9 talks x 10, flores: 10
documents x 10), four systems, three training seeds each; a sentence score is
system effect + document effect + sentence noise + a per-seed offset. Run
``python make_scores.py`` to regenerate it (the same bytes for the same numpy).
"""

import numpy as np
import pandas as pd

rng = np.random.default_rng(11)
effects = {"ours": 1.2, "big": 0.8, "base": 0.5, "old": 0.0}
rows = []
for dataset, n_docs in (("newstest", 12), ("ted", 9), ("flores", 10)):
    doc = rng.normal(0, 3, n_docs)
    sentence = rng.normal(0, 6, (n_docs, 10))
    for system, eff in effects.items():
        for seed in range(3):
            offset = rng.normal(0, 0.4)
            noise = rng.normal(0, 2, (n_docs, 10))
            score = 30 + eff + offset + doc[:, None] + sentence + noise
            for d in range(n_docs):
                for s in range(10):
                    rows.append((dataset, system, seed, f"{dataset}-d{d:02d}-s{s}",
                                 f"{dataset}-d{d:02d}", "bleu", round(score[d, s], 2)))
frame = pd.DataFrame(rows, columns=["dataset", "system", "seed", "instance", "doc",
                                    "metric", "score"])
frame.to_csv("scores.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
