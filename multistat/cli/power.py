"""``multistat power``: prospective solvers, minimum detectable effects, retrospective power
curves and the simulation scenarios of Card et al. (2020).

Mounted by :mod:`multistat.cli` as ``multistat power``. Every subcommand prints a readable
table, or with ``--json`` one JSON object holding every number. Leave exactly one of the
solver's quantities out and it is solved for; a solved ``n`` is also given rounded up
(``n_ceil``), the test-set size to use. For the exact discrete tests (``sign``,
``mcnemar --method exact``) ``n`` is the smallest size reaching the power and
``n_stays_above`` the size from which power never falls below it again.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import (
    DatasetCol,
    FormatOpt,
    InstanceCol,
    LowerOpt,
    MetricCol,
    MissingOpt,
    ScoreCol,
    SepOpt,
    SystemCol,
    SystemsOpt,
    guard_outputs,
    read_kwargs,
    seed_value,
    table_kind,
    write_table,
)
from multistat.cli._conventions import working
from multistat.errors import PowerParameterError, show

power_app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
    help="Power analysis: how big must my test set be? Analytic solvers (leave one "
         "quantity out to solve for it), minimum detectable effects, retrospective power "
         "curves and Card et al. (2020) simulation scenarios with Type-M/Type-S errors.")

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object with every "
                                                      "number instead of a table")]
AlphaOpt = Annotated[float, typer.Option("--alpha", help="significance level")]
AltOpt = Annotated[str, typer.Option("--alternative",
                                     help="{choices} (on a - b)")]
PowerOpt = Annotated[float | None, typer.Option(
    "--power", help="target power (leave out to compute the power)")]
NOpt = Annotated[float | None, typer.Option("--n", help="sample size (leave out to solve)")]


SeedOpt = Annotated[int, typer.Option("--seed", help="random seed, 0 to 2**64-1 (0 is a "
                                                     "seed)", callback=seed_value)]


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def _emit(title: str, values: dict, as_json: bool, solved: str | None = None) -> None:
    values = {k: _clean(v) for k, v in values.items()}
    if solved is not None:
        values = {"solved": solved, **values}
        if solved == "n" and values.get("n") is not None:
            values["n_ceil"] = math.ceil(values["n"] - 1e-9)
    if as_json:
        typer.echo(json.dumps(values, sort_keys=False))
        return
    typer.echo(title)
    width = max(len(k) for k in values)
    for k, v in values.items():
        if k == "solved":
            continue
        text = f"{v:.6g}" if isinstance(v, float) else str(v)
        mark = "   <- solved" if k == solved else ""
        typer.echo(f"  {k:<{width}}  {text}{mark}")


def _solve_report(func, title, as_json, **kw):
    unknown = [k for k, v in kw.items() if v is None]
    value = func(**kw)
    solved = unknown[0] if len(unknown) == 1 else None
    out = dict(kw)
    if solved is not None:
        out[solved] = value
    if solved == "n" and hasattr(value, "stays_above"):
        # exact discrete test: power is a saw-tooth in n (multistat.power._discrete)
        out["n"] = float(value.smallest)
        out["n_stays_above"] = value.stays_above
        out["power_at_n"] = value.power_smallest
        out["power_at_n_stays_above"] = value.power_stays_above
    _emit(title, out, as_json, solved=solved)


# ============================================================================ analytic
@power_app.command("paired-t")
def paired_t_cmd(
    n: NOpt = None,
    effect_size: Annotated[float | None, typer.Option(
        "--effect-size", help="standardized effect d = delta / sd")] = None,
    delta: Annotated[float | None, typer.Option(
        "--delta", help="mean difference (with --sd instead of --effect-size)")] = None,
    sd: Annotated[float | None, typer.Option(
        "--sd", help="standard deviation of the differences")] = None,
    power: PowerOpt = None, alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided",
    as_json: JsonOpt = False,
) -> None:
    """Paired t test (exact noncentral t): solve n, effect size or power."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import power_paired_t

    if delta is not None or sd is not None:
        if delta is None or sd is None or effect_size is not None:
            raise PowerParameterError("give --delta and --sd together, instead of "
                                      "--effect-size")
        if sd <= 0:
            raise PowerParameterError(f"`--sd` must be > 0; got {sd!r}")
        effect_size = delta / sd
    _solve_report(power_paired_t, "paired t test", as_json, n=n, effect_size=effect_size,
                  power=power, alpha=alpha, alternative=alternative)


@power_app.command("t-cluster")
def t_cluster_cmd(
    n_clusters: Annotated[float | None, typer.Option(
        "--n-clusters", help="number of groups (passages, documents); leave out to "
                             "solve")] = None,
    cluster_size: Annotated[float, typer.Option(
        "--cluster-size", help="instances per group")] = 1.0,
    icc: Annotated[float, typer.Option(
        "--icc", help="intra-group correlation of the paired differences, in [0, 1]")] =
    0.0,
    effect_size: Annotated[float | None, typer.Option(
        "--effect-size", help="standardized effect d = delta / sd of the differences")] =
    None,
    power: PowerOpt = None, alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided",
    as_json: JsonOpt = False,
) -> None:
    """Clustered paired t test (t-cluster): solve the number of groups, the effect size
    or the power, with the design effect 1 + (m - 1) ICC."""
    # lazily: the power package only when the command runs
    from multistat.power import design_effect, power_paired_t_cluster

    unknown = [k for k, v in (("n_clusters", n_clusters), ("effect_size", effect_size),
                              ("power", power)) if v is None]
    value = power_paired_t_cluster(n_clusters=n_clusters, cluster_size=cluster_size, icc=icc,
                             effect_size=effect_size, power=power, alpha=alpha,
                             alternative=alternative)
    out = {"n_clusters": n_clusters, "cluster_size": cluster_size, "icc": icc,
           "effect_size": effect_size, "power": power, "alpha": alpha,
           "alternative": alternative}
    solved = unknown[0] if len(unknown) == 1 else None
    if solved is not None:
        out[solved] = value
    if solved == "n_clusters":
        out["n_clusters_ceil"] = math.ceil(value - 1e-9)
    out["design_effect"] = design_effect(icc, cluster_size)
    _emit("clustered paired t test", out, as_json, solved=solved)


@power_app.command("two-proportions")
def two_proportions_cmd(
    n: Annotated[float | None, typer.Option("--n", help="items per group")] = None,
    p1: Annotated[float | None, typer.Option("--p1", help="baseline proportion")] = None,
    p2: Annotated[float | None, typer.Option("--p2", help="new proportion")] = None,
    power: PowerOpt = None, alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided",
    method: Annotated[str, typer.Option(
        "--method", help="{choices} (pooled: R power.prop.test; arcsine: Cohen's h)")
    ] = "pooled",
    as_json: JsonOpt = False,
) -> None:
    """Two independent proportions (unpaired accuracies; R power.prop.test)."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import power_two_proportions

    _solve_report(power_two_proportions, "two proportions", as_json, n=n, p1=p1, p2=p2,
                  power=power, alpha=alpha, alternative=alternative, method=method)


@power_app.command("mcnemar")
def mcnemar_cmd(
    n: NOpt = None,
    delta: Annotated[float | None, typer.Option(
        "--delta", help="accuracy difference acc(a) - acc(b)")] = None,
    agreement: Annotated[float | None, typer.Option(
        "--agreement", help="share of items where both are right or both wrong")] = None,
    power: PowerOpt = None, alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided",
    method: Annotated[str, typer.Option("--method", help="{choices} (normal: Connett)")] =
        "normal",
    as_json: JsonOpt = False,
) -> None:
    """McNemar's test for two classifiers on one test set."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import power_mcnemar

    _solve_report(power_mcnemar, f"McNemar ({method})", as_json, n=n, delta=delta,
                  agreement=agreement, power=power, alpha=alpha, method=method,
                  alternative=alternative)


@power_app.command("sign")
def sign_cmd(
    n: NOpt = None,
    p: Annotated[float | None, typer.Option(
        "--p", help="P(a better than b | not tied)")] = None,
    power: PowerOpt = None, alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided",
    as_json: JsonOpt = False,
) -> None:
    """Exact sign (binomial) test, e.g. head-to-head preferences."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import power_sign_test

    _solve_report(power_sign_test, "sign test (exact binomial)", as_json,
                  n=None if n is None else int(n), p=p, power=power, alpha=alpha,
                  alternative=alternative)


@power_app.command("mde")
def mde_cmd(
    n: Annotated[float, typer.Option("--n", help="test-set size")],
    baseline: Annotated[float | None, typer.Option(
        "--baseline", help="baseline (SOTA) accuracy")] = None,
    agreement: Annotated[float | None, typer.Option(
        "--agreement", help="fixed expected agreement P_a")] = None,
    agreement_model: Annotated[str | None, typer.Option(
        "--agreement-model", help="{choices} (Card et al. Tables 5/6) or "
                                  "'c0,c_baseline,c_delta' for P_a = c0 + c_b b + c_d delta")]
        = None,
    power: Annotated[float, typer.Option("--power", help="target power")] = 0.8,
    alpha: AlphaOpt = 0.05,
    method: Annotated[str, typer.Option("--method", help="{choices}")] = "normal",
    sd: Annotated[float | None, typer.Option(
        "--sd", help="paired t instead of McNemar: sd of the differences (MDE in metric "
                     "units)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Minimum detectable effect: accuracy improvement (McNemar) or mean difference (t)."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import LinearAgreementModel, mde_accuracy, mde_paired_t
    from multistat.power.analytic import AGREEMENT_MODELS  # loaded with the line above

    if sd is not None:
        value = mde_paired_t(n=n, sd=sd, power=power, alpha=alpha)
        _emit("minimum detectable mean difference (paired t)",
              {"n": n, "sd": sd, "power": power, "alpha": alpha, "mde": value,
               "mde_standardized": value / sd}, as_json)
        return
    model = None
    if agreement_model is not None:
        if agreement_model.lower() in AGREEMENT_MODELS:
            model = AGREEMENT_MODELS[agreement_model.lower()]
        else:
            try:
                model = LinearAgreementModel(*[float(t) for t in agreement_model.split(",")])
            except (TypeError, ValueError):
                raise PowerParameterError(
                    f"`--agreement-model` must be {', '.join(AGREEMENT_MODELS)} or three "
                    f"comma-separated numbers; got {agreement_model!r}") from None
    value = mde_accuracy(n=n, baseline=baseline, agreement=agreement, agreement_model=model,
                         power=power, alpha=alpha, method=method)
    used = agreement if model is None or baseline is None else float(model(baseline, value))
    _emit("minimum detectable accuracy improvement (McNemar)",
          {"n": n, "baseline": baseline, "agreement": used,
           "agreement_model": agreement_model, "power": power, "alpha": alpha,
           "method": method, "mde": value}, as_json)


# ======================================================================== curves
@power_app.command("curve")
def curve_cmd(
    scores: Annotated[Path | None, typer.Argument(
        help="score file or saved study (as `multistat load` reads, with the same "
             "reading flags); omit with --method normal --sd --sample-sizes")] = None,
    a: Annotated[str | None, typer.Option("--a", help="system a")] = None,
    b: Annotated[str | None, typer.Option("--b", help="system b")] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="metric (default: "
                                                                    "the first)")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="dataset (default: "
                                                                     "the first)")] = None,
    # typer's required option: a default of ... (the parameters around it have defaults)
    delta: Annotated[float, typer.Option("--delta", help="hypothesised true difference "
                                                         "a - b (metric units)")
                     ] = ...,  # type: ignore[assignment]
    method: Annotated[str, typer.Option("--method", help="{choices} (bootstrap: shifted "
                                                         "to delta)")] = "bootstrap",
    test: Annotated[str, typer.Option("--test", help="registered test name")] = "t",
    sample_sizes: Annotated[str | None, typer.Option(
        "--sample-sizes", help="comma-separated grid (default: n_points evenly spaced)")]
        = None,
    n_points: Annotated[int, typer.Option("--n-points", help="grid points")] = 5,
    sd: Annotated[float | None, typer.Option("--sd", help="sd for --method normal")]
        = None,
    n_simulations: Annotated[int, typer.Option("--n-simulations")] = 1000,
    alpha: AlphaOpt = 0.05, alternative: AltOpt = "two-sided", seed: SeedOpt = 0,
    out: Annotated[Path | None, typer.Option(
        "--out", help="also write the curve table: .parquet (with run metadata), .csv or "
                      ".jsonl; columns dataset, metric, system_a, system_b, delta, n, "
                      "power, power_se")] = None,
    as_json: JsonOpt = False,
    format: FormatOpt = None, system_col: SystemCol = None, metric_col: MetricCol = None,
    instance_col: InstanceCol = None, score_col: ScoreCol = None,
    dataset_col: DatasetCol = None, lower_is_better: LowerOpt = None,
    missing: MissingOpt = "raise", sep: SepOpt = None, systems: SystemsOpt = None,
) -> None:
    """Retrospective power curve (NLPStatTest Algorithms 3/4) for a registered test.

    A score file is read as `multistat load` reads it (--format, --system-col, --sep,
    ...); --dataset and --metric then choose which dataset and metric to use."""
    # lazily: `multistat --help` does not load it (startup time)
    from multistat import __version__

    # heavy: numpy, lazily
    from multistat._validation import check_real

    # heavy: pyarrow, pandas, lazily
    from multistat.power import power_curve

    delta = check_real("--delta", delta)
    if out is not None:
        guard_outputs([scores], {"--out": out})
        table_kind(out)
    x = y = None
    name = m = None
    if scores is not None:
        # heavy: pyarrow, xarray, lazily
        from multistat import cube

        kw = read_kwargs(format, system_col, metric_col, instance_col, score_col,
                         dataset_col, None, None, lower_is_better, missing, sep, systems)
        given = {k: v for k, v in kw.items()
                 if v not in (None, ()) and not (k == "missing" and v == "raise")}
        study = cube.load(scores, **given)
        dss = cube.datasets(study)
        name = dataset if dataset is not None else next(iter(dss))
        if name not in dss:
            raise PowerParameterError(f"`--dataset` {show(name)} is not in the study; it "
                                      f"has {show(list(dss))}")
        ds = dss[name]
        metrics = [str(v) for v in ds.metric.values]
        m = metric if metric is not None else metrics[0]
        if m not in metrics:
            raise PowerParameterError(f"`--metric` {show(m)} is not in dataset "
                                      f"{show(name)}; it has {show(metrics)}")
        system_names = [str(v) for v in ds.system.values]
        for flag, sysname in (("--a", a), ("--b", b)):
            if sysname is None or sysname not in system_names:
                raise PowerParameterError(f"`{flag}` must name a system of "
                                          f"{show(system_names)}; got {show(sysname)}")
        x = ds.score.sel(system=a, metric=m).values
        y = ds.score.sel(system=b, metric=m).values
    sizes = None
    if sample_sizes:
        try:
            sizes = [int(t) for t in sample_sizes.split(",")]
        except ValueError:
            raise PowerParameterError(f"`--sample-sizes` must be comma-separated integers; "
                                      f"got {show(sample_sizes)}") from None
    with working("power curve"):  # the simulations: elapsed seconds on stderr
        frame = power_curve(x, y, delta=delta, method=method, test=test,
                            sample_sizes=sizes, n_points=n_points,
                            n_simulations=n_simulations, alpha=alpha,
                            alternative=alternative, seed=seed, sd=sd)
    if out is not None:
        labelled = frame.copy()
        for col, value in (("system_b", b), ("system_a", a), ("metric", m),
                           ("dataset", name)):
            if col not in labelled.columns:
                labelled.insert(0, col, value)
        if "delta" not in labelled.columns:
            labelled.insert(4, "delta", delta)
        meta = {"stage": "power-curve", "multistat_version": __version__,
                "input": None if scores is None else str(scores), "dataset": name,
                "metric": m, "system_a": a, "system_b": b, "delta": delta, "test": test,
                "method": method, "alpha": alpha, "alternative": alternative, "seed": seed,
                "n_simulations": n_simulations, "sd": sd,
                "sample_sizes": [int(v) for v in frame["n"]]}
        write_table(labelled, out, metadata=meta)
    if as_json:
        typer.echo(json.dumps({"test": test, "method": method, "delta": delta,
                               "alpha": alpha, "alternative": alternative, "seed": seed,
                               "n_simulations": n_simulations,
                               "curve": [{k: _clean(v) for k, v in r.items()}
                                         for r in frame[["n", "power", "power_se"]]
                                         .to_dict("records")]}))
        return
    what = "" if name is None else f" {name} / {m}: {a} vs {b};"
    typer.echo(f"power curve:{what} test={test}, method={method}, delta={delta:g}, "
               f"alpha={alpha:g}, {n_simulations} simulations per size")
    typer.echo(f"  {'n':>8}  {'power':>7}  {'MC s.e.':>7}")
    for r in frame.itertuples():
        typer.echo(f"  {r.n:>8d}  {r.power:>7.3f}  {r.power_se:>7.3f}")


# ===================================================================== simulations
def _emit_sim(title, result, as_json):
    d = result.to_dict()
    _emit(title, d, as_json)


@power_app.command("mcnemar-sim")
def mcnemar_sim_cmd(
    n: Annotated[int, typer.Option("--n", help="test-set size")],
    delta: Annotated[float, typer.Option("--delta", help="accuracy difference")],
    agreement: Annotated[float, typer.Option("--agreement", help="agreement P_a")],
    n_simulations: Annotated[int, typer.Option("--n-simulations")] = 10_000,
    alpha: AlphaOpt = 0.05, seed: SeedOpt = 0, as_json: JsonOpt = False,
) -> None:
    """Card et al. section 3 / appendix C: McNemar power, Type-M, Type-S by simulation."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import mcnemar_exact_errors, simulate_mcnemar

    with working("power mcnemar-sim"):  # the simulations: elapsed seconds on stderr
        r = simulate_mcnemar(n=n, delta=delta, agreement=agreement,
                             n_simulations=n_simulations, alpha=alpha, seed=seed)
    d = r.to_dict()
    ex = mcnemar_exact_errors(n=n, delta=delta, agreement=agreement, alpha=alpha)
    d.update({"exact_power": ex.power, "exact_type_m": ex.type_m, "exact_type_s": ex.type_s})
    _emit("McNemar simulation (exact test)", d, as_json)


@power_app.command("bleu-sim")
def bleu_sim_cmd(
    n: Annotated[int, typer.Option("--n", help="test sentences")] = 2000,
    delta: Annotated[float, typer.Option("--delta", help="BLEU difference")] = 1.0,
    p_zero: Annotated[float, typer.Option("--p-zero", help="share of zero swap effects")]
        = 0.13,
    b_zero: Annotated[float, typer.Option("--b-zero", help="Laplace scale x N")] = 25.8,
    n_simulations: Annotated[int, typer.Option("--n-simulations")] = 500,
    n_permutations: Annotated[int, typer.Option("--n-permutations")] = 1000,
    alpha: AlphaOpt = 0.05, seed: SeedOpt = 0, as_json: JsonOpt = False,
) -> None:
    """Card et al. section 4: corpus BLEU, Delta-Laplace process, randomization test."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import simulate_bleu

    with working("power bleu-sim"):  # the simulations: elapsed seconds on stderr
        r = simulate_bleu(n=n, delta=delta, p_zero=p_zero, b_zero=b_zero,
                          n_simulations=n_simulations, n_permutations=n_permutations,
                          alpha=alpha, seed=seed)
    _emit_sim("BLEU simulation (Delta-Laplace, randomization test)", r, as_json)


@power_app.command("likert-sim")
def likert_sim_cmd(
    n_items: Annotated[int, typer.Option("--n-items")] = 100,
    n_workers: Annotated[int, typer.Option("--n-workers")] = 3,
    effect: Annotated[float, typer.Option(
        "--effect", help="system coefficient (systems coded -1/+1; means differ by 2x)")]
        = 0.1,
    preset: Annotated[str, typer.Option("--preset", help="{choices}: variance (Card et "
                                                         "al. Table 16)")] = "high",
    method: Annotated[str, typer.Option("--method", help="{choices} (anova: fast, "
                                                         "vectorized; mixedlm: "
                                                         "statsmodels, slow)")]
        = "anova",
    n_simulations: Annotated[int | None, typer.Option(
        "--n-simulations", help="default 2000 (anova) / 10 (mixedlm)")] = None,
    pilot: Annotated[Path | None, typer.Option(
        "--pilot", help="a study with ratings by rater (.nc from `multistat load "
                        "--rater-col`): plan from its variance components instead of a "
                        "preset")] = None,
    pilot_dataset: Annotated[str | None, typer.Option(
        "--pilot-dataset", help="the pilot's dataset (if it has several)")] = None,
    pilot_metric: Annotated[str | None, typer.Option(
        "--pilot-metric", help="the pilot's metric (if it has several)")] = None,
    alpha: AlphaOpt = 0.05, seed: SeedOpt = 0, as_json: JsonOpt = False,
) -> None:
    """Card et al. section 5: Likert ratings, crossed worker/item effects, mixed model.

    With --pilot, the five standard deviations come from a pilot study's ratings
    (multistat.variance_components: REML per pair of its systems, pooled), in the units
    of its ratings; give --effect in those units."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import simulate_likert

    variance = None
    if pilot is not None:
        # heavy: pyarrow, xarray, lazily
        from multistat.cube import load

        # heavy: pyarrow, xarray, lazily
        from multistat.human.ratings import variance_components

        vc = variance_components(load(pilot), dataset=pilot_dataset, metric=pilot_metric)
        variance = vc.variance
        if not as_json:
            typer.echo(f"pilot {pilot}: dataset {vc.dataset!r}, metric {vc.metric!r}, "
                       f"{vc.n_raters} raters x {vc.n_items} items, {vc.n_ratings} ratings; "
                       "SDs " + ", ".join(f"{k} {getattr(variance, k):.4g}" for k in (
                           "worker_intercept", "worker_slope", "item_intercept",
                           "item_slope", "sigma")))
    with working("power likert-sim"):  # the simulations: elapsed seconds on stderr
        r = simulate_likert(n_items=n_items, n_workers=n_workers, effect=effect,
                            preset=preset, variance=variance, method=method,
                            n_simulations=n_simulations, alpha=alpha, seed=seed)
    _emit_sim("Likert simulation (mixed model)", r, as_json)


power_app.command("likert", help="Alias of likert-sim: Likert power, from a preset or "
                                 "from a pilot (--pilot).")(likert_sim_cmd)


@power_app.command("preference-sim")
def preference_sim_cmd(
    n: Annotated[int, typer.Option("--n", help="number of judgements")],
    p_a: Annotated[float, typer.Option("--p-a", help="P(prefer a)")],
    p_tie: Annotated[float, typer.Option("--p-tie", help="P(no preference)")] = 0.0,
    n_simulations: Annotated[int, typer.Option("--n-simulations")] = 10_000,
    alpha: AlphaOpt = 0.05, seed: SeedOpt = 0, as_json: JsonOpt = False,
    n_raters: Annotated[int, typer.Option(
        "--raters", help="raters per item (then --n counts items)")] = 1,
    item_sd: Annotated[float, typer.Option(
        "--item-sd", help="SD of item effects on the logit of P(a | no tie)")] = 0.0,
    rater_sd: Annotated[float, typer.Option(
        "--rater-sd", help="SD of rater effects on the logit of P(a | no tie)")] = 0.0,
) -> None:
    """Head-to-head preferences: the exact binomial test, or with several raters per
    item (or item/rater effects) the sign-flip test over items of preference_test."""
    # heavy: pyarrow, pandas, lazily
    from multistat.power import simulate_preference

    with working("power preference-sim"):  # the simulations: elapsed seconds on stderr
        r = simulate_preference(n=n, p_a=p_a, p_tie=p_tie, n_simulations=n_simulations,
                                alpha=alpha, seed=seed, n_raters=n_raters,
                                item_sd=item_sd, rater_sd=rater_sd)
    rated = n_raters > 1 or item_sd > 0 or rater_sd > 0
    _emit_sim("preference simulation (" + ("sign-flip test over items" if rated else
                                           "binomial test") + ")", r, as_json)
