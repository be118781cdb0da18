"""``multistat power`` command line (multistat.cli.power.power_app)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import multistat.power as P
from multistat.cli.power import power_app
from multistat.errors import InfeasibleError, PowerError

runner = CliRunner()


def _json(args):
    res = runner.invoke(power_app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_mcnemar_solve_n_json_and_table():
    out = _json(["mcnemar", "--delta", "0.02", "--agreement", "0.9", "--power", "0.8"])
    n = P.power_mcnemar(delta=0.02, agreement=0.9, power=0.8)
    assert out["solved"] == "n" and out["n"] == pytest.approx(n, rel=1e-12)
    assert out["n_ceil"] == math.ceil(n)
    table = runner.invoke(power_app, ["mcnemar", "--delta", "0.02", "--agreement", "0.9",
                                      "--power", "0.8"])
    assert table.exit_code == 0 and "<- solved" in table.output and "n_ceil" in table.output


def test_solvers_json():
    out = _json(["paired-t", "--delta", "1", "--sd", "4", "--power", "0.8"])
    assert out["n"] == pytest.approx(P.power_paired_t(effect_size=0.25, power=0.8), rel=1e-12)
    out = _json(["two-proportions", "--n", "147", "--p1", "0.945", "--power", "0.8"])
    assert out["solved"] == "p2" and out["p2"] == pytest.approx(
        P.power_two_proportions(n=147, p1=0.945, power=0.8), rel=1e-12)
    out = _json(["sign", "--p", "0.6", "--power", "0.8"])
    assert out["n"] == P.power_sign_test(p=0.6, power=0.8)
    out = _json(["mde", "--n", "1725", "--baseline", "0.92", "--agreement-model", "glue"])
    assert out["mde"] == pytest.approx(P.mde_accuracy(
        n=1725, baseline=0.92, agreement_model=P.GLUE_AGREEMENT_MODEL), rel=1e-12)
    out = _json(["mde", "--n", "100", "--sd", "2"])
    assert out["mde"] == pytest.approx(P.mde_paired_t(n=100, sd=2.0), rel=1e-12)


def test_simulation_commands_json():
    out = _json(["mcnemar-sim", "--n", "500", "--delta", "0.02", "--agreement", "0.9",
                 "--n-simulations", "2000"])
    ref = P.simulate_mcnemar(n=500, delta=0.02, agreement=0.9, n_simulations=2000)
    for key in ("power", "power_se", "type_m", "type_m_se", "type_s", "type_s_se",
                "mean_significant_effect", "exact_power", "exact_type_m"):
        assert key in out
    assert out["power"] == ref.power
    out = _json(["bleu-sim", "--n-simulations", "50", "--n-permutations", "100"])
    assert out["scenario"] == "bleu" and out["param_p_zero"] == 0.13
    out = _json(["likert-sim", "--n-simulations", "100"])
    assert out["param_preset"] == "high" and out["param_sigma"] == 0.26  # Table 16
    out = _json(["preference-sim", "--n", "50", "--p-a", "0.7", "--n-simulations", "500"])
    assert 0 <= out["power"] <= 1


def test_curve_command_with_a_score_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 80
    frame = pd.DataFrame({
        "system": ["A"] * n + ["B"] * n,
        "instance": list(range(n)) * 2,
        "score": np.r_[rng.normal(0.6, 0.2, n), rng.normal(0.5, 0.2, n)],
    })
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    out_file = tmp_path / "curve.csv"
    out = _json(["curve", str(path), "--a", "A", "--b", "B", "--delta", "0.05",
                 "--n-simulations", "200", "--out", str(out_file)])
    assert [r["n"] for r in out["curve"]] == [16, 32, 48, 64, 80]
    written = pd.read_csv(out_file)
    assert written["power"].tolist() == [r["power"] for r in out["curve"]]
    res = runner.invoke(power_app, ["curve", "--method", "normal", "--sd", "1", "--delta",
                                    "0.3", "--sample-sizes", "20,50"])
    assert res.exit_code == 0 and "MC s.e." in res.output


def test_cli_errors_are_multistat_errors():
    res = runner.invoke(power_app, ["mcnemar", "--n", "100", "--delta", "0.2",
                                    "--agreement", "0.9"])
    assert isinstance(res.exception, PowerError)
    assert "cannot exceed the discordant share" in str(res.exception)
    res = runner.invoke(power_app, ["mde", "--n", "147", "--baseline", "0.945",
                                    "--agreement-model", "glue"])
    assert isinstance(res.exception, InfeasibleError)
    res = runner.invoke(power_app, ["mde", "--n", "147", "--baseline", "0.945",
                                    "--agreement-model", "a,b"])
    assert isinstance(res.exception, PowerError)
    assert "--agreement-model" in str(res.exception)
