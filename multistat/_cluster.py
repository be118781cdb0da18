"""The cluster bootstrap and cluster permutation: resample whole groups of instances.

Instances of one document (talk, dialogue) are not independent; an iid bootstrap over
sentences understates the uncertainty of a mean. ``compare(..., cluster="group")``
draws the resampling plans over the G *groups* (the same generators, keyed by
``(seed, dataset, kind, block)``, as an iid plan over G instances) and expands them to the
instances:

* bootstrap: group ``g`` drawn ``c_g`` times gives each of its instances the count
  ``c_g``; the resampled mean is ``sum_i c_g(i) x_i / sum_i c_g(i)`` (a ratio: resampled
  groups differ in size), so each row is rescaled to sum to ``n`` and the engine's
  kernels (``plan @ x / n``) need no change;
* permutation: one sign per group, shared by its instances (whole groups flipped).

With singleton groups in instance order the expansion is the identity and the plans, and
every result, equal the iid ones bit for bit. The exact enumeration of a permutation test
runs over the ``2**G`` group sign vectors.

Reference: A. C. Davison and D. V. Hinkley (1997), Bootstrap Methods and their
Application, section 3.8 (resampling clusters). Field (2007), "Bootstrapping clustered
data", JRSS B 69(3), 369-390, https://doi.org/10.1111/j.1467-9868.2007.00593.x
"""

from __future__ import annotations

import numpy as np

from multistat.errors import DataValidationError

GROUP = "group"


def group_codes(labels) -> np.ndarray:
    """Integer code per instance, groups numbered by first appearance (so singleton
    groups in instance order give ``arange(n)``)."""
    labels = np.asarray(labels).astype(str)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def dataset_codes(ds, name: str) -> np.ndarray:
    """Group codes of a dataset's instances (in their current order), or a clear error."""
    if GROUP not in ds.coords or ds[GROUP].dims != ("instance",):
        raise DataValidationError(
            f"cluster='group': dataset {name!r} has no 'group' coordinate on its instances; "
            "read the scores with read_scores(..., group_col=...) (multistat load "
            "--group-col)")
    return group_codes(ds[GROUP].values)


class Clustered:
    """A kernel applied to a group-level plan expanded to the instances (picklable)."""

    def __init__(self, kernel, codes: np.ndarray, kind: str):
        self.kernel = kernel
        self.codes = np.asarray(codes, dtype=np.intp)
        self.kind = kind

    def expand(self, plan: np.ndarray) -> np.ndarray:
        full = plan[:, self.codes]
        if self.kind == "bootstrap":
            n = len(self.codes)
            total = full.sum(1, keepdims=True)
            full = full * (n / total)  # rows sum to n: the resampled mean is a ratio
        return full

    def __call__(self, plan: np.ndarray, data):
        return self.kernel(self.expand(plan), data)


def plan_args(kind: str, kernel, clusters, n: int):
    """``(kernel, n_plan)`` for :func:`multistat.engine.resample`: unchanged without
    clusters, else the expanding kernel and the number of groups."""
    if clusters is None:
        return kernel, n
    codes = np.asarray(clusters, dtype=np.intp)
    return Clustered(kernel, codes, kind), int(codes.max()) + 1


def jackknife_mean_groups(d: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Delete-one-group jackknife of the mean of ``d`` ``(..., n)`` -> ``(..., G)``: the
    mean of the instances outside group g (for the BCa acceleration)."""
    codes = np.asarray(clusters, dtype=np.intp)
    G = int(codes.max()) + 1
    onehot = np.zeros((len(codes), G))
    onehot[np.arange(len(codes)), codes] = 1.0
    sums = d @ onehot  # (..., G)
    sizes = onehot.sum(0)
    return (d.sum(-1, keepdims=True) - sums) / (len(codes) - sizes)
