"""sacrebleu's TER statistics, compiled: the same edits and reference length per segment.

:func:`ter_statistics` returns, for each hypothesis, ``[edits, mean reference length]``
exactly as ``sacrebleu.metrics.TER._compute_segment_statistics`` does (the smallest
number of edits over the references, the mean reference length), from the words that
sacrebleu's own tokenizer produced. The search is the one of ``sacrebleu.metrics.lib_ter``
step for step -- the beam-limited edit distance (beam 25 around the length-scaled
diagonal; ties to substitution/match, then deletion, then insertion), Tercom's shift
candidates (at most 10 words, at most 50 positions apart, filtered by the alignment),
their ranking (gain, then length, then the earliest start, then the earliest target),
the cap of 1,000 evaluated candidates per hypothesis and reference -- so every statistic
is equal, not close. Only the bookkeeping differs: words are integers, each candidate's
edit distance restarts from the row of the current hypothesis where the shifted words
first differ (sacrebleu keeps a prefix cache of at most 10,000 rows, which paragraph-length
segments exhaust after a few dozen candidates, after which every candidate is computed
from the first word), and the loops are compiled by numba.

Without numba (the ``fast`` extra) :func:`kernels` is None and
:mod:`multistat._translations` uses sacrebleu's own extraction.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kernels", "ter_statistics"]


def kernels():
    """The compiled module :mod:`multistat.io._ter_kernels` when numba is installed, else
    None (the caller then uses sacrebleu's own pure-Python search)."""
    try:
        # heavy: numba (about 2 s and 100 MiB), only for a TER extraction
        from multistat.io import _ter_kernels
    except ImportError:
        return None
    return _ter_kernels


def ter_statistics(hyp_words, ref_words, compiled=None) -> np.ndarray:
    """TER statistics ``(n, 2)``: edits and mean reference length per hypothesis.

    Parameters
    ----------
    hyp_words : list of list of str
        The tokenized words of each hypothesis (sacrebleu's ``TER._preprocess_segment``
        then ``str.split``).
    ref_words : list of list of list of str
        For each hypothesis, the tokenized words of each of its references.
    compiled : module, optional
        :func:`kernels` (looked up when not given).

    Returns
    -------
    numpy.ndarray
        ``float64`` array ``(n, 2)``: ``[edits, ref_len]`` as sacrebleu's TER computes them.

    Examples
    --------
    >>> ter_statistics([["a", "b", "c"]], [[["c", "a", "b"], ["a", "b", "c", "d"]]])
    array([[1. , 3.5]])
    """
    k = compiled if compiled is not None else kernels()
    if k is None:
        raise ImportError("the compiled TER search needs numba (the `fast` extra)")
    vocab: dict[str, int] = {}
    out = np.empty((len(hyp_words), 2), dtype=np.float64)
    for s, (hyp, refs) in enumerate(zip(hyp_words, ref_words)):
        h = np.fromiter((vocab.setdefault(w, len(vocab)) for w in hyp), dtype=np.int64,
                        count=len(hyp))
        best, total = int(1e16), 0
        for ref in refs:
            r = np.fromiter((vocab.setdefault(w, len(vocab)) for w in ref), dtype=np.int64,
                            count=len(ref))
            edits = len(hyp) if len(ref) == 0 else int(k.ter_edits(h, r))
            total += len(ref)
            best = min(best, edits)
        out[s, 0] = best
        out[s, 1] = total / len(refs)
    return out
