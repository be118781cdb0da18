"""Paired significance tests, one module per family, all in one registry.

Importing this package registers every test in
:data:`multistat.significance._base.REGISTRY`:

* ``"t"`` - :func:`~multistat.significance.parametric.paired_t`
* ``"sign"`` - :func:`~multistat.significance.rank.sign_test`
* ``"wilcoxon"`` - :func:`~multistat.significance.rank.wilcoxon`
* ``"mcnemar"`` - :func:`~multistat.significance.binary.mcnemar`
* bootstrap / permutation tests from :mod:`~multistat.significance.resampling`
"""

from multistat.significance import binary, parametric, rank
from multistat.significance._base import REGISTRY, TestResult, TestSpec, get_test, register
from multistat.significance.binary import mcnemar
from multistat.significance.parametric import paired_t
from multistat.significance.rank import sign_test, wilcoxon

import importlib.util as _util

if _util.find_spec("multistat.significance.resampling") is not None:  # lead's module;
    from multistat.significance import resampling  # noqa: F401  (guard goes once it exists)

__all__ = [
    "REGISTRY", "TestResult", "TestSpec", "get_test", "register",
    "paired_t", "sign_test", "wilcoxon", "mcnemar",
    "parametric", "rank", "binary",
]
