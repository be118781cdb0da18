"""Across studies and metrics: meta-analysis of effects from several studies
(:mod:`.pooling`: fixed and random effects, meta-regression) and metric meta-evaluation
(:mod:`.evaluation`: how well automatic metrics agree with human judgements, and which
metrics differ significantly).

The public functions are reached as ``multistat.meta_analysis``,
``multistat.meta_regression``, ``multistat.metric_correlation``,
``multistat.compare_metrics`` and ``multistat.meta_evaluate``.
"""
