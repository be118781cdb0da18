"""Paired significance tests, one module per family, all in one registry.

Importing this package registers every test in
:data:`multistat.significance._base.REGISTRY`:

* ``"t"`` - :func:`~multistat.significance.parametric.paired_t`
* ``"sign"`` - :func:`~multistat.significance.rank.sign_test`
* ``"wilcoxon"`` - :func:`~multistat.significance.rank.wilcoxon`
* ``"mcnemar"`` - :func:`~multistat.significance.binary.mcnemar`
* ``"t-cluster"`` - :func:`~multistat.significance.clustered_t.paired_t_cluster`
* bootstrap / permutation tests from :mod:`~multistat.significance.resampling`
"""

from multistat.significance import binary, parametric, rank, resampling
from multistat.significance._base import (
    REGISTRY,
    TestResult,
    TestSpec,
    get_test,
    register,
    unregister,
)
from multistat.significance._batch import BatchResult, Context, Slab
from multistat.significance.binary import mcnemar
from multistat.significance.clustered_t import paired_t_cluster
from multistat.significance.parametric import paired_t
from multistat.significance.rank import sign_test, wilcoxon

__all__ = [
    "REGISTRY",
    "BatchResult",
    "Context",
    "Slab",
    "TestResult",
    "TestSpec",
    "binary",
    "get_test",
    "mcnemar",
    "paired_t",
    "paired_t_cluster",
    "parametric",
    "rank",
    "register",
    "resampling",
    "sign_test",
    "unregister",
    "wilcoxon",
]

# Almost Stochastic Order over runs lives in multistat.significance.aso; it
# registers itself as "aso" here so that compare(tests=("aso", ...)) finds it
from multistat.significance.aso import _register as _register_aso

_register_aso()

# the mixed-effects model of human ratings by rater, registered as "mixed"
from multistat.significance.mixed import _register as _register_mixed  # noqa: E402

_register_mixed()

# unpaired tests of each system's own scores, for incomplete designs
from multistat.significance.unpaired import _register as _register_unpaired  # noqa: E402

_register_unpaired()

# the paired t test with a cluster-robust standard error, registered as "t-cluster"
from multistat.significance.clustered_t import _register as _register_clustered  # noqa: E402

_register_clustered()
