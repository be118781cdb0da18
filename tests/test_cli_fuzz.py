"""Property test of the command line (issue 13.2): whatever values the main options of
``compare``, ``units``, ``analyze`` and ``power`` get, the outcome is exit status 0, or
exit status 2 with one line ``multistat: error: ...`` — never a traceback, never an
internal error (exit 1), never a numpy repr or an overlong echo."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multistat import cube

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
SYSTEMS = ["s0", "s1", "s2"]


@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    """3 systems x 2 metrics (one binary) x 12 instances, saved as a study."""
    rng = np.random.default_rng(5)
    score = rng.normal(size=(3, 2, 12)).round(3)
    score[:, 1] = rng.integers(0, 2, size=(3, 12))
    ds = cube.make_dataset("toy", score, systems=SYSTEMS, metrics=["m1", "acc"],
                           instances=[f"i{j}" for j in range(12)],
                           higher_is_better=[True, True], kind=["mean", "binary"])
    return cube.save(cube.make_study([ds]), tmp_path_factory.mktemp("fuzz") / "toy.nc")


def number_text():
    """Numbers as a user types them: ordinary, extreme, NaN, infinities, or not a number."""
    floats = st.floats(allow_nan=True, allow_infinity=True).map(repr)
    return st.one_of(floats, st.integers(-10**30, 10**30).map(str),
                     st.sampled_from(["0", "1", "0.05", "-0", "1e-320", "1e308", "nan",
                                      "-inf", "inf", "NaN", "", " ", "abc", "0x10", "1,5"]))


def names(choices):
    """A comma-separated list drawn from valid names and junk (empty, blank, path-like,
    very long, control characters)."""
    junk = st.sampled_from(["", " ", ",", ";", "..", "/etc/passwd", "x" * 300, "a\tb",
                            "np.str_('x')", "\x00"])
    item = st.one_of(st.sampled_from(choices), junk, st.text(max_size=12))
    return st.lists(item, max_size=4).map(",".join)


def check_outcome(status, err):
    assert status in (0, 2), (status, err)
    lines = [ln for ln in err.strip("\n").split("\n") if ln]
    assert "Traceback" not in err, err
    if status == 2:
        errors = [ln for ln in lines if ln.startswith("multistat: error: ")]
        assert len(errors) == 1, err
        # anything else on stderr is a one-line warning or the (empty-argument) help
        others = [ln for ln in lines if ln not in errors]
        assert all(ln.startswith("multistat: warning: ") for ln in others), err
        line = errors[0]
        assert len(line) <= 700, line
        assert not re.search(r"\bnp\.[a-z_]+[0-9]*\(", line.replace("np.str_('x')", "")), line


def run(argv, capsys):
    return run_cli(argv, capsys, warnings_always=True)  # the CLI prints each as one line


@st.composite
def options(draw, valid: dict, hostile: dict, max_hostile: int = 2) -> list:
    """Options where most values are valid and up to ``max_hostile`` are hostile, so each
    example reaches the computation or fails on the values it was given."""
    bad = draw(st.sets(st.sampled_from(sorted(hostile)), max_size=max_hostile))
    argv = []
    for flag in sorted(set(valid) | set(hostile)):
        if flag in bad:
            argv += [flag, draw(hostile[flag])]
        elif flag in valid and draw(st.booleans()):
            argv += [flag, draw(valid[flag])]
    return argv


def unit_float(lo=1e-3, hi=0.999):
    return st.floats(min_value=lo, max_value=hi).map(repr)


SEED_HOSTILE = st.one_of(st.integers(-5, 2**70).map(str), number_text())

compare_options = options(
    valid={"--tests": st.sampled_from(["t", "t,sign", "bootstrap", "permutation",
                                       "wilcoxon,bootstrap", "t,wilcoxon,sign"]),
           "--alpha": unit_float(1e-3, 0.5),
           "--null-value": st.floats(-1, 1).map(repr),
           "--seed": st.integers(0, 2**64 - 1).map(str),
           "--n-resamples": st.integers(1, 300).map(str),
           "--pairs": st.sampled_from(["all", "baseline:s0", "s0,s1", "s0,s1;s2,s0"]),
           "--metrics": st.sampled_from(["m1", "m1,acc"]),
           "--statistic": st.sampled_from(["mean", "median"]),
           "--alternative": st.sampled_from(["two-sided", "less", "greater"]),
           "--correction": st.sampled_from(["holm", "none", "bonferroni", "fdr_bh"]),
           "--ci-method": st.sampled_from(["bca", "percentile", "studentized"]),
           "--power": st.floats(-2, 2).map(repr),
           "--equivalence-margin": st.floats(0.01, 1).map(repr)},
    hostile={"--tests": names(["t", "wilcoxon", "sign", "bootstrap", "permutation",
                               "mcnemar"]),
             "--alpha": number_text(), "--null-value": number_text(),
             "--seed": SEED_HOSTILE,
             "--n-resamples": st.one_of(st.integers(-10**20, 10**20).map(str),
                                        number_text()),
             "--pairs": st.one_of(st.sampled_from(["baseline:zz", "s0,s0", "s0;s1",
                                                   "baseline:", "a,b,c", ""]),
                                  st.text(max_size=10)),
             "--metrics": names(["m1", "acc"]),
             "--statistic": st.sampled_from(["mode", ""]),
             "--alternative": st.sampled_from(["bigger", ""]),
             "--correction": st.sampled_from(["magic", ""]),
             "--ci-method": st.sampled_from(["x", ""]),
             "--power": number_text(), "--equivalence-margin": number_text()})


@SETTINGS
@given(argv=compare_options)
def test_compare_options(study_file, tmp_path, capsys, argv):
    status, _, err = run(["compare", study_file, "-o", tmp_path / "r.parquet",
                          "--no-progress", "--no-effect-sizes", "--max-cost", "1e7", *argv],
                         capsys)
    check_outcome(status, err)


units_options = options(
    valid={"--size": st.integers(1, 6).map(str),
           "--statistic": st.sampled_from(["mean", "median"]),
           "--seed": st.integers(0, 2**64 - 1).map(str),
           "--remainder": st.sampled_from(["spread", "drop"])},
    hostile={"--size": st.one_of(st.integers(-3, 10**20).map(str), number_text()),
             "--statistic": st.sampled_from(["max", ""]), "--seed": SEED_HOSTILE,
             "--remainder": st.sampled_from(["pad", ""])})


@SETTINGS
@given(argv=units_options)
def test_units_options(study_file, tmp_path, capsys, argv):
    check_outcome(*run(["units", study_file, "-o", tmp_path / "u.nc", *argv], capsys)[::2])


analyze_options = options(
    valid={"--alpha": unit_float(1e-3, 0.5),
           "--pairs": st.sampled_from(["all", "baseline:s1", "s0,s2"])},
    hostile={"--alpha": number_text(), "--pairs": st.sampled_from(["x", "", "s0,zz"])})


@SETTINGS
@given(argv=analyze_options,
       out=st.sampled_from(["a.parquet", "a.csv", "a.jsonl", "a.txt", "a"]))
def test_analyze_options(study_file, tmp_path, capsys, argv, out):
    check_outcome(*run(["analyze", study_file, "-o", tmp_path / out, *argv], capsys)[::2])


@st.composite
def solver(draw, command, quantities: dict, extra_valid=None, extra_hostile=None):
    """A power solver call: one quantity left out (solved for), the others valid or, up
    to two of them, hostile."""
    unknown = draw(st.sampled_from(sorted(quantities)))
    given_ = {k: v for k, v in quantities.items() if k != unknown}
    argv = draw(options(valid={**given_, **(extra_valid or {})},
                        hostile={**{k: number_text() for k in given_},
                                 **(extra_hostile or {})}))
    present = set(argv[::2])
    for flag, strategy in given_.items():  # a quantity not given would be a 2nd unknown
        if flag not in present:
            argv += [flag, draw(strategy)]
    return ["power", command, *argv]


power_argv = st.one_of(
    solver("paired-t", {"--n": st.integers(2, 5000).map(str),
                        "--effect-size": st.floats(0.01, 3).map(repr),
                        "--power": unit_float(0.06, 0.99)},
           {"--alpha": unit_float(1e-3, 0.2)}, {"--alpha": number_text()}),
    solver("mcnemar", {"--n": st.integers(2, 5000).map(str),
                       "--delta": st.floats(0.001, 0.2).map(repr),
                       "--power": unit_float(0.06, 0.99)},
           {"--agreement": unit_float(0.5, 0.79)}, {"--agreement": number_text()}),
    solver("two-proportions", {"--n": st.integers(2, 5000).map(str),
                               "--p1": unit_float(0.05, 0.5), "--p2": unit_float(0.55, 0.95),
                               "--power": unit_float(0.06, 0.99)}),
    solver("sign", {"--n": st.integers(1, 3000).map(str), "--p": unit_float(0.55, 0.95),
                    "--power": unit_float(0.06, 0.95)}),
    solver("t-cluster", {"--n-clusters": st.integers(2, 500).map(str),
                         "--effect-size": st.floats(0.01, 3).map(repr),
                         "--power": unit_float(0.06, 0.99)},
           {"--cluster-size": st.integers(1, 50).map(str), "--icc": unit_float(0.0, 1.0)},
           {"--cluster-size": number_text(), "--icc": number_text()}),
    options(valid={"--baseline": unit_float(0.5, 0.9), "--power": unit_float(0.1, 0.95),
                   "--sd": st.floats(0.01, 10).map(repr)},
            hostile={"--baseline": number_text(), "--power": number_text(),
                     "--sd": number_text(), "--agreement": number_text()}
            ).map(lambda a: ["power", "mde", "--n", "500", "--agreement", "0.8", *a]),
    options(valid={"--sample-sizes": st.sampled_from(["10,20", "5,50"]),
                   "--n-simulations": st.sampled_from(["10", "50"]),
                   "--seed": st.integers(0, 2**64 - 1).map(str)},
            hostile={"--delta": number_text(), "--sd": number_text(),
                     "--sample-sizes": st.sampled_from(["0", "-5,10", "x", "", "10,1e9"]),
                     "--n-simulations": st.sampled_from(["0", "-1", "nan"]),
                     "--seed": SEED_HOSTILE}
            ).map(lambda a: ["power", "curve", "--method", "normal", "--delta", "0.1",
                             "--sd", "1", *a]),
)


@SETTINGS
@given(argv=power_argv, as_json=st.booleans())
def test_power_options(capsys, argv, as_json):
    status, out, err = run([*argv, *(["--json"] if as_json else [])], capsys)
    check_outcome(status, err)
    if status == 0 and as_json:
        import json

        values = json.loads(out.strip().splitlines()[-1])  # valid JSON: no NaN/Infinity
        assert all(not (isinstance(v, float) and not math.isfinite(v))
                   for v in values.values())
