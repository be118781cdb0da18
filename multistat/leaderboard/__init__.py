"""Leaderboards: rank many systems at once (:mod:`.ranking`: ranks, rank intervals and
significance clusters from one family of pairwise decisions) and look across several test
sets (:mod:`.across`: Friedman/Nemenyi and replicability counts).

The public functions are reached as ``multistat.rank``, ``multistat.friedman`` and
``multistat.replicability``; this package only groups their modules.
"""
