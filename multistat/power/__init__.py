"""Power analysis: prospective (analytic) solvers, minimum detectable effects,
retrospective power curves and simulation power with Type-M/Type-S errors.

Analytic solvers (``power_*``) leave exactly one keyword ``None`` and return it as a
float; a solved sample size may be fractional -- round it up with ``math.ceil``. Their
names before 0.2 (``paired_t``, ``two_proportions``, ``mcnemar``, ``mcnemar_discordant``,
``sign_test``) still work in 0.2 and warn.
"""

from multistat.power.analytic import (
    GLUE_AGREEMENT_MODEL,
    SQUAD_AGREEMENT_MODEL,
    ExactErrors,
    LinearAgreementModel,
    mcnemar_exact_errors,
    mde_accuracy,
    mde_paired_t,
    power_mcnemar,
    power_mcnemar_discordant,
    power_paired_t,
    power_sign_test,
    power_two_proportions,
)
from multistat.power.analytic import DEPRECATED as _DEPRECATED
from multistat.power.clustered import (
    design_effect,
    mde_paired_t_cluster,
    power_paired_t_cluster,
)
from multistat.power.retrospective import default_sample_sizes, power_curve
from multistat.power.scenarios import (
    BLEU_B_ZERO,
    BLEU_P_ZERO,
    BLEU_TABLE3,
    LIKERT_PRESETS,
    LikertVariance,
    simulate_bleu,
    simulate_likert,
    simulate_mcnemar,
    simulate_preference,
)
from multistat.power.simulation import SimulationResult, registry_test, simulate_power

__all__ = [
    "GLUE_AGREEMENT_MODEL", "SQUAD_AGREEMENT_MODEL", "ExactErrors", "LinearAgreementModel",
    "power_mcnemar", "power_mcnemar_discordant", "mcnemar_exact_errors", "mde_accuracy",
    "mde_paired_t", "power_paired_t", "power_sign_test", "power_two_proportions",
    "design_effect", "mde_paired_t_cluster", "power_paired_t_cluster",
    "BLEU_B_ZERO", "BLEU_P_ZERO", "BLEU_TABLE3", "LIKERT_PRESETS", "LikertVariance",
    "simulate_bleu", "simulate_likert", "simulate_mcnemar", "simulate_preference",
    "SimulationResult", "registry_test", "simulate_power",
    "default_sample_sizes", "power_curve",
]


def __getattr__(name):
    # the power functions' names before 0.2, kept one release with a DeprecationWarning
    if name in _DEPRECATED:
        return _DEPRECATED[name]
    raise AttributeError(f"module 'multistat.power' has no attribute {name!r}")
