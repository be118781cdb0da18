r"""Power, sample size and design effect of the clustered paired t test (``"t-cluster"``).

Instances in groups (questions sharing a passage, an image, a document) carry less
information than as many independent instances. With differences :math:`d_i` of
variance :math:`\sigma^2` and intra-group correlation :math:`\rho` (the ICC of the
differences), the mean difference over groups of sizes :math:`m_c`,
:math:`n = \sum_c m_c`, has variance

.. math:: \operatorname{Var}(\bar d) = \frac{\sigma^2}{n^2}\sum_c m_c\,(1 + (m_c - 1)\rho)
          = \frac{\sigma^2}{n}\,\mathrm{DE}, \qquad
          \mathrm{DE} = 1 + \Big(\frac{\sum_c m_c^2}{n} - 1\Big)\rho,

the design effect: :math:`1 + (m - 1)\rho` for equal groups of size :math:`m` (Kish
1965), and :math:`1 + ((1 + CV^2)\,\bar m - 1)\rho` in terms of the mean size and the
coefficient of variation of the sizes (Eldridge, Ashby & Kerry 2006; the same number:
:math:`\sum m_c^2 / n = \bar m (1 + CV^2)` with the population CV). The effective sample
size is :math:`n / \mathrm{DE}`.

The ``"t-cluster"`` test (CR1 factor, t on :math:`G - 1` df) is, for equal groups, the
one-sample t test on the :math:`G` group means, whose standardized effect is
:math:`d_z \sqrt{m / \mathrm{DE}}` (:math:`d_z = \delta / \sigma`). Its power is
therefore exactly the paired t test's (:func:`multistat.power.power_paired_t`) with
:math:`G` pairs and that effect: noncentral t with :math:`G - 1` df and noncentrality
:math:`d_z\sqrt{n / \mathrm{DE}}`. For unequal groups the same expression with the
general design effect and the mean size is the usual approximation (checked by
simulation in ``tests/test_power_cluster.py``).

References
----------
Kish, L. (1965). Survey Sampling. Wiley (the design effect).
Eldridge, S. M., Ashby, D., Kerry, S. (2006). Sample size for cluster randomized trials:
effect of coefficient of variation of cluster size and analysis method. International
Journal of Epidemiology 35(5), 1292-1300. doi:10.1093/ije/dyl129
Miller, E. (2024). Adding Error Bars to Evals. arXiv:2411.00640 (clustered standard
errors for evaluations). doi:10.48550/arXiv.2411.00640
"""

from __future__ import annotations

import math

import numpy as np

from multistat.errors import PowerParameterError
from multistat.power import _common as c
from multistat.power.analytic import power_paired_t

__all__ = ["design_effect", "mde_paired_t_cluster", "power_paired_t_cluster"]


def _sizes(cluster_size) -> tuple[float, float, int | None]:
    """``(mean size, sum m^2 / n, number of groups or None)`` from a size or sizes."""
    if np.ndim(cluster_size) == 0:
        m = c.real("cluster_size", cluster_size)
        if not m >= 1.0:
            raise PowerParameterError(f"`cluster_size` must be >= 1; got {cluster_size!r}")
        return m, m, None
    sizes = np.asarray(cluster_size, dtype=float)
    if sizes.ndim != 1 or sizes.size == 0:
        raise PowerParameterError(
            f"`cluster_size` must be a number or a 1-d sequence of group sizes; got shape "
            f"{sizes.shape}")
    if not np.all(np.isfinite(sizes) & (sizes >= 1)):
        raise PowerParameterError(
            "`cluster_size`: every group size must be a finite number >= 1; got "
            f"{sizes[~(np.isfinite(sizes) & (sizes >= 1))][:3].tolist()}")
    n = float(sizes.sum())
    return n / sizes.size, float((sizes * sizes).sum() / n), int(sizes.size)


def _icc(icc) -> float:
    icc = c.real("icc", icc)
    if not 0.0 <= icc <= 1.0:
        raise PowerParameterError(f"`icc` must be in [0, 1]; got {icc!r}")
    return icc


def _at_least_two(name: str, value) -> float:
    v = c.real(name, value)
    if not v >= 2.0:
        raise PowerParameterError(f"`{name}` must be >= 2 (the test has G - 1 degrees of "
                                  f"freedom); got {value!r}")
    return v


def design_effect(icc, cluster_size) -> float:
    r"""Design effect of groups of instances: the variance of a mean over grouped
    instances divided by its variance over as many independent ones.

    Parameters
    ----------
    icc : float in [0, 1]
        Intra-group correlation :math:`\rho` (of the paired differences, for a paired
        comparison).
    cluster_size : float or sequence of float
        The size :math:`m` of every group, or the sizes :math:`m_c` of the groups.

    Returns
    -------
    float
        :math:`1 + (m - 1)\rho` for equal groups; :math:`1 + (\sum_c m_c^2 / n - 1)\rho`
        for sizes :math:`m_c` with :math:`n = \sum_c m_c`.

    Examples
    --------
    >>> design_effect(0.3, 5)
    2.2
    >>> round(design_effect(0.3, [2, 8]), 6)  # sum m^2 / n = 68 / 10
    2.74
    """
    icc = _icc(icc)
    _, m2, _ = _sizes(cluster_size)
    return 1.0 + (m2 - 1.0) * icc


def power_paired_t_cluster(*, n_clusters=None, cluster_size, icc, effect_size=None,
                           power=None, alpha=0.05, alternative="two-sided"):
    r"""Power of the clustered paired t test (``"t-cluster"``), or the one quantity of
    ``n_clusters``, ``effect_size``, ``power``, ``alpha`` left ``None``.

    Parameters
    ----------
    n_clusters : float or None
        Number of groups :math:`G` (ignored -- taken as the number of sizes -- when
        ``cluster_size`` is a sequence; it may then be left ``None`` only if another
        quantity is solved).
    cluster_size : float or sequence of float
        Instances per group :math:`m`, or each group's size.
    icc : float in [0, 1]
        Intra-group correlation of the paired differences.
    effect_size : float or None
        Standardized effect :math:`d_z = \delta / \sigma`, with :math:`\sigma` the sd of
        the instance-level differences (within plus between groups).
    power, alpha : float in (0, 1) or None
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    float
        The quantity left ``None``; a solved ``n_clusters`` is fractional (use
        ``math.ceil``).

    Notes
    -----
    Power is that of the t test on the :math:`G` group means: noncentral t with
    :math:`G - 1` df and noncentrality :math:`d_z \sqrt{G \bar m / \mathrm{DE}}`,
    :math:`\mathrm{DE}` from :func:`design_effect` (exact for equal groups and normal
    differences). See :mod:`multistat.power.clustered`.

    Examples
    --------
    >>> round(power_paired_t_cluster(n_clusters=40, cluster_size=5, icc=0.3,
    ...                              effect_size=0.2), 4)
    0.4602
    >>> import math  # groups of 5 at ICC 0.3 for 80% power at d_z = 0.2
    >>> math.ceil(power_paired_t_cluster(cluster_size=5, icc=0.3, effect_size=0.2, power=0.8))
    89
    """
    alternative = c.alternative(alternative)
    m, m2, G_sizes = _sizes(cluster_size)
    icc = _icc(icc)
    if G_sizes is not None:
        if n_clusters is not None and float(n_clusters) != G_sizes:
            raise PowerParameterError(
                f"`n_clusters` = {n_clusters!r} disagrees with the {G_sizes} group sizes "
                "given in `cluster_size`; give one or the other")
        if n_clusters is None and effect_size is not None and power is not None and \
                alpha is not None:
            raise PowerParameterError(
                "`cluster_size` lists every group's size, so the number of groups is "
                "fixed; give the sizes of one group (a number) to solve for `n_clusters`")
        n_clusters = G_sizes
    unknown = c.one_unknown(n_clusters=n_clusters, effect_size=effect_size, power=power,
                            alpha=alpha)
    n_clusters, = c.given(n_clusters=(n_clusters, _at_least_two))
    de = 1.0 + (m2 - 1.0) * icc
    per_group = math.sqrt(m / de)  # d_z of the group means per unit d_z of instances
    if unknown == "effect_size":
        return power_paired_t(n=n_clusters, effect_size=None, power=power, alpha=alpha,
                        alternative=alternative) / per_group
    eff = c.real("effect_size", effect_size) * per_group
    if unknown == "n_clusters":
        return power_paired_t(n=None, effect_size=eff, power=power, alpha=alpha,
                        alternative=alternative)
    return power_paired_t(n=n_clusters, effect_size=eff, power=power, alpha=alpha,
                    alternative=alternative)


def mde_paired_t_cluster(*, n_clusters=None, cluster_size, icc, sd=None, power=0.8,
                         alpha=0.05, alternative="two-sided") -> float:
    r"""Minimum detectable mean difference of the clustered paired t test.

    Parameters
    ----------
    n_clusters, cluster_size, icc, power, alpha, alternative
        As :func:`power_paired_t_cluster`.
    sd : float or None
        Standard deviation of the instance-level differences; when given the result is
        in metric units, else it is the standardized :math:`d_z`.

    Returns
    -------
    float
        :math:`d_z` (or :math:`d_z \cdot` ``sd``) detected with probability ``power``.

    Examples
    --------
    >>> round(mde_paired_t_cluster(n_clusters=40, cluster_size=5, icc=0.3), 4)
    0.3013
    >>> round(mde_paired_t_cluster(n_clusters=40, cluster_size=5, icc=0.0), 4)  # no ICC
    0.2031
    """
    d = power_paired_t_cluster(n_clusters=n_clusters, cluster_size=cluster_size, icc=icc,
                         effect_size=None, power=power, alpha=alpha,
                         alternative=alternative)
    return d if sd is None else d * c.positive("sd", sd)
