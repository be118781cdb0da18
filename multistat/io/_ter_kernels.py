"""The numba kernel of :mod:`multistat.io._ter`: sacrebleu's TER search over integer words.

:func:`ter_edits` follows ``sacrebleu.metrics.lib_ter.translation_edit_rate`` step for step
(see :mod:`multistat.io._ter` for what is kept equal and what only changes the
bookkeeping). Apart from its driver so that ``import numba`` is paid only by a run that
extracts TER.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["ter_edits"]

_MAX_SHIFT_SIZE = 10
_MAX_SHIFT_DIST = 50
_BEAM_WIDTH = 25
_MAX_SHIFT_CANDIDATES = 1000
_INF = 10 ** 16          # sacrebleu's "infinite" distance, kept so that INF + 1 > INF alike

# operations of the edit-distance matrix (sacrebleu's ' ', 's', 'd', 'i', 'x')
_NOP, _SUB, _DEL, _INS, _UNDEF = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True)
def _rows(h, r, start, dist, ops, ratio, beam):
    """Rows ``start + 1 .. len(h)`` of the beam-limited edit-distance matrix of the words
    ``h`` against ``r`` (row ``start`` already filled), as sacrebleu's
    ``BeamEditDistance._edit_distance``: cells outside the beam stay infinite. The beam of
    a row depends only on the row and the lengths, which shifts keep, so the cells outside
    it are infinite from the allocation on and only the beam is reset here."""
    n_h = h.shape[0]
    n_r = r.shape[0]
    for i in range(start + 1, n_h + 1):
        pseudo_diag = math.floor(i * ratio)
        min_j = max(0, pseudo_diag - beam)
        max_j = min(n_r + 1, pseudo_diag + beam)
        if i == n_h:
            max_j = n_r + 1
        for j in range(min_j, max_j):
            dist[i, j] = _INF
            ops[i, j] = _UNDEF
        for j in range(min_j, max_j):
            if j == 0:
                dist[i, j] = dist[i - 1, j] + 1
                ops[i, j] = _DEL
            else:
                if h[i - 1] == r[j - 1]:
                    c, o = dist[i - 1, j - 1], _NOP
                else:
                    c, o = dist[i - 1, j - 1] + 1, _SUB
                if dist[i, j] > c:
                    dist[i, j] = c
                    ops[i, j] = o
                c = dist[i - 1, j] + 1
                if dist[i, j] > c:
                    dist[i, j] = c
                    ops[i, j] = _DEL
                c = dist[i, j - 1] + 1
                if dist[i, j] > c:
                    dist[i, j] = c
                    ops[i, j] = _INS
    return dist[n_h, n_r]


@njit(cache=True, nogil=True)
def _alignment(ops, n_h, n_r, align, ref_err, hyp_err):
    """sacrebleu's ``trace_to_alignment(_flip_trace(trace))`` from the operations matrix:
    ``align[ref position] = hyp position`` (-1 before the first hypothesis word) and the
    error flags of each hypothesis and reference position. Returns False on an undefined
    cell on the path (sacrebleu raises there)."""
    trace = np.empty(n_h + n_r, dtype=np.int64)
    t = 0
    i, j = n_h, n_r
    while i > 0 or j > 0:
        o = ops[i, j]
        trace[t] = o
        t += 1
        if o == _NOP or o == _SUB:
            i -= 1
            j -= 1
        elif o == _INS:
            j -= 1
        elif o == _DEL:
            i -= 1
        else:
            return False
    pos_h, pos_r = -1, -1
    for k in range(t - 1, -1, -1):
        o = trace[k]
        if o == _NOP or o == _SUB:
            pos_h += 1
            pos_r += 1
            align[pos_r] = pos_h
            e = 1 if o == _SUB else 0
            hyp_err[pos_h] = e
            ref_err[pos_r] = e
        elif o == _DEL:       # flipped: an insertion of a hypothesis word
            pos_h += 1
            hyp_err[pos_h] = 1
        else:                 # flipped: a deletion of a reference word
            pos_r += 1
            align[pos_r] = pos_h
            ref_err[pos_r] = 1
    return True


@njit(cache=True, nogil=True)
def _copy(out, at, words, a, b):
    """``out[at:] = words[a:b]`` with Python's clipping of ``a, b >= 0``; returns the end."""
    n = words.shape[0]
    a = min(a, n)
    b = min(b, n)
    for q in range(a, b):
        out[at] = words[q]
        at += 1
    return at


@njit(cache=True, nogil=True)
def _perform_shift(words, start, length, target, out):
    """sacrebleu's ``_perform_shift`` (same slices, including the shift within itself)."""
    if target < start:
        at = _copy(out, 0, words, 0, target)
        at = _copy(out, at, words, start, start + length)
        at = _copy(out, at, words, target, start)
        at = _copy(out, at, words, start + length, words.shape[0])
    elif target > start + length:
        at = _copy(out, 0, words, 0, start)
        at = _copy(out, at, words, start + length, target)
        at = _copy(out, at, words, start, start + length)
        at = _copy(out, at, words, target, words.shape[0])
    else:
        at = _copy(out, 0, words, 0, start)
        at = _copy(out, at, words, start + length, length + target)
        at = _copy(out, at, words, start, start + length)
        at = _copy(out, at, words, length + target, words.shape[0])
    return at


@njit(cache=True, nogil=True)
def ter_edits(hyp, ref):
    """Edits (shifts + edit distance after the shifts) of the integer words ``hyp``
    against ``ref`` (non-empty) as sacrebleu's ``translation_edit_rate``; -1 where
    sacrebleu would raise (an undefined cell on the traceback)."""
    n_h = hyp.shape[0]
    n_r = ref.shape[0]
    ratio = n_r / n_h if n_h > 0 else 1.0
    beam = _BEAM_WIDTH
    if _BEAM_WIDTH < ratio / 2:
        beam = math.ceil(ratio / 2 + _BEAM_WIDTH)
    base = np.full((n_h + 1, n_r + 1), _INF, dtype=np.int64)
    base_ops = np.full((n_h + 1, n_r + 1), _UNDEF, dtype=np.int8)
    cand = np.full((n_h + 1, n_r + 1), _INF, dtype=np.int64)
    cand_ops = np.full((n_h + 1, n_r + 1), _UNDEF, dtype=np.int8)
    for j in range(n_r + 1):
        base[0, j] = j
        base_ops[0, j] = _INS
    words = hyp.copy()
    shifted = np.empty(n_h, dtype=np.int64)
    best_words = np.empty(n_h, dtype=np.int64)
    align = np.empty(n_r, dtype=np.int64)
    ref_err = np.zeros(n_r, dtype=np.int64)
    hyp_err = np.zeros(n_h, dtype=np.int64)
    checked = 0
    shifts = 0
    first = 0              # rows of `base` before this one hold the current words
    while True:
        pre = _rows(words, ref, first, base, base_ops, ratio, beam)
        if not _alignment(base_ops, n_h, n_r, align, ref_err, hyp_err):
            return -1
        found = False
        b_score, b_len, b_start, b_idx = 0, 0, 0, 0
        stop = False
        for start_h in range(n_h):
            if stop:
                break
            for start_r in range(n_r):
                if stop:
                    break
                if abs(start_r - start_h) > _MAX_SHIFT_DIST:
                    continue
                length = 0
                while (words[start_h + length] == ref[start_r + length]
                       and length < _MAX_SHIFT_SIZE):
                    length += 1
                    # -- one (start_h, start_r, length) of sacrebleu's _find_shifted_pairs
                    herr = 0
                    for q in range(start_h, start_h + length):
                        herr += hyp_err[q]
                    rerr = 0
                    for q in range(start_r, start_r + length):
                        rerr += ref_err[q]
                    a0 = align[start_r]
                    if herr != 0 and rerr != 0 and not (start_h <= a0 < start_h + length):
                        prev_idx = -1
                        for offset in range(-1, length):
                            if start_r + offset == -1:
                                idx = 0
                            elif start_r + offset < n_r:
                                idx = align[start_r + offset] + 1
                            else:
                                break
                            if idx == prev_idx:
                                continue
                            prev_idx = idx
                            _perform_shift(words, start_h, length, idx, shifted)
                            same = min(start_h, idx)   # rows 0..same are the current ones
                            for j in range(n_r + 1):
                                cand[same, j] = base[same, j]
                            score = pre - _rows(shifted, ref, same, cand, cand_ops, ratio,
                                                beam)
                            checked += 1
                            better = not found
                            if found:
                                if score != b_score:
                                    better = score > b_score
                                elif length != b_len:
                                    better = length > b_len
                                elif start_h != b_start:
                                    better = start_h < b_start
                                else:
                                    better = idx < b_idx
                            if better:
                                found = True
                                b_score, b_len, b_start, b_idx = score, length, start_h, idx
                                best_words[:] = shifted
                        if checked >= _MAX_SHIFT_CANDIDATES:
                            stop = True
                            break
                    # -- end of one triple
                    if n_h == start_h + length or n_r == start_r + length:
                        break
        if checked >= _MAX_SHIFT_CANDIDATES:
            break
        if not found or b_score <= 0:
            break
        shifts += 1
        first = min(b_start, b_idx)
        words[:] = best_words
    return shifts + pre
