"""Human judgements: ratings by several raters (:mod:`.ratings`: standardisation and
variance components of the crossed mixed model), agreement between raters
(:mod:`.agreement`: Krippendorff's alpha) and pairwise preferences (:mod:`.preferences`:
Bradley-Terry scores and paired preference tests).

The public functions are reached as ``multistat.standardize``,
``multistat.variance_components``, ``multistat.krippendorff_alpha``,
``multistat.bradley_terry`` and ``multistat.preference_test``.
"""
