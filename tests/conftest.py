"""Shared fixtures of the test suite.

Real data are read from small slices shipped in ``tests/data/`` (each folder has its licence
and a SOURCE.md naming origin and cut); everything a test writes goes to pytest's
``tmp_path``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dask.callbacks
import numpy as np
import pytest
from _xdist_worker_exit import pytest_sessionfinish, pytest_unconfigure  # noqa: F401

#: the real data shipped with the tests (tests/data/README.md lists the folders)
TEST_DATA = Path(__file__).resolve().parent / "data"
MQM_ZHEN = TEST_DATA / "mqm-newstest2020" / "zhen.avg_seg_scores.tsv.gz"
REALSUMM = TEST_DATA / "realsumm" / "scores.csv.gz"
NLPSTATTEST = TEST_DATA / "nlpstattest-samples"
DATA_FILE = NLPSTATTEST / "data-file.txt"
BAD_FILE = NLPSTATTEST / "BAD.txt"
WMT17 = TEST_DATA / "wmt17-en-de"

#: read_scores options of the MQM newstest2020 zh-en file (space-separated, columns
#: ``system mqm_avg_score seg_id``). The scores are negated error penalties (<= 0), so
#: higher is better: the default direction, nothing to declare.
MQM_OPTIONS = {"format": "long", "sep": r"\s+", "score_col": "mqm_avg_score",
               "instance_col": "seg_id", "metric": "mqm"}
#: read_scores options of REALSumm: a system name is only unique within its summary type
REALSUMM_OPTIONS = {"system_col": ["summary_type", "system"], "instance_col": "doc_id"}


#: the test files that take longest, longest first (CPU seconds measured 2026-11-23: 199,
#: 124, 92, 48, 47, 44, 35, 33, 31; the whole suite ~910). Under pytest-xdist (``make
#: test``: two workers, ``--dist loadfile``, ``--no-loadscope-reorder``) they are handed out
#: first, so the two workers finish at about the same time instead of one running the DVC
#: pipeline alone at the end. A serial run keeps pytest's order.
LONGEST_FIRST = ("test_report_pipeline.py", "test_readme.py", "test_rank.py",
                 "test_atomic.py", "test_cli_fuzz.py", "test_report_browser.py",
                 "test_cli.py", "test_calibration.py", "test_distributed_faults.py")


def run_checked(args, cwd, *, timeout=300, env=None):
    """``args`` run in ``cwd`` with the venv's ``bin`` first on PATH (``multistat``,
    ``dvc``) and DVC's analytics off; asserts exit 0 and returns the CompletedProcess
    (the pipeline templates' tests: real DVC, real command line). ``env``: variables set
    on top (a value ``None`` removes the variable)."""
    import subprocess
    import sys

    bindir = Path(sys.executable).parent
    extra = dict(env or {})
    env = dict(os.environ, DVC_NO_ANALYTICS="1",
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.update({k: v for k, v in extra.items() if v is not None})
    for name in (k for k, v in extra.items() if v is None):
        env.pop(name, None)
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout, check=False)
    assert out.returncode == 0, f"{args}: {out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


#: files whose tests drive real outside machinery (DVC pipelines, a headless browser,
#: dask clusters, subprocesses killed at random moments, fuzzing) or long Monte Carlo
#: checks: marked ``slow``, so that ``pytest -m "not slow"`` (``make test-fast``) is the
#: fast lane; CI runs everything
SLOW_FILES = frozenset({
    "test_report_pipeline.py", "test_pipeline_human.py", "test_pipeline_metrics.py",
    "test_pipeline_mt.py", "test_pipeline_several.py", "test_pipeline_llm.py", "test_readme.py",
    "test_report_browser.py", "test_distributed_faults.py", "test_distributed_blas.py",
    "test_atomic.py", "test_write_faults.py", "test_io_atomic.py", "test_cli_fuzz.py",
    "test_io_fuzz.py", "test_calibration.py", "test_xdist_worker_exit.py",
    "test_first_call.py", "test_memory_copies.py", "test_rank_scale.py",
    "test_report_scale.py", "test_load_mt_cli.py", "test_common.py",
    "test_external_test.py", "test_report_dvc_guard.py", "test_self_contained.py",
    # the longest of the rest (over 10 s each on two cores): every test through every
    # interval end, the rank tests' exact enumerations, whole reports, the guides
    "test_rank.py", "test_interval_agreement.py", "test_inversion.py",
    "test_report_files.py", "test_report_decisions.py", "test_resampling.py",
    "test_guides.py", "test_packaging.py",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    order = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(order)))  # stable


def run_cli(argv, capsys, *, warnings_always=False):
    """``multistat.cli.main(argv)`` in-process: ``(exit status, stdout, stderr)``.

    Output captured before the call is discarded, so ``stdout``/``stderr`` are this run's
    only. ``warnings_always``: every warning is issued (none deduplicated by the
    ``__warningregistry__`` of an earlier example), as the property tests need.
    """
    import warnings

    from multistat.cli import main

    capsys.readouterr()
    with warnings.catch_warnings():
        if warnings_always:
            warnings.simplefilter("always")
        try:
            status = main([str(a) for a in argv])
        except SystemExit as exc:
            status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(status, err, *fragments):
    """Exit status 2 and exactly one stderr line ``multistat: error: ...`` holding every
    fragment, no traceback."""
    assert status == 2, (status, err)
    assert "Traceback" not in err, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("multistat: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


class ComputeCounter(dask.callbacks.Callback):
    """Counts dask graph executions (``compute``/``load``/``.values``) while active."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def small_dataset(name="toy", *, n_systems=4, n_instances=23, seed=0, nan_metric=True):
    """A seeded dataset node: ``n_systems`` x 3 metrics x ``n_instances``.

    Metric ``m2`` has three instances dropped (NaN for every system) when ``nan_metric``;
    ``m3`` is binary (0/1) and lower is better, so metadata round trips are exercised.
    """
    from multistat import cube

    rng = np.random.default_rng(seed)
    score = rng.normal(size=(n_systems, 3, n_instances)).round(3)
    score[:, 2] = rng.integers(0, 2, size=(n_systems, n_instances))
    if nan_metric:
        score[:, 1, [2, 5, 7]] = np.nan
    return cube.make_dataset(
        name, score, systems=[f"sys{i}" for i in range(n_systems)],
        metrics=["m1", "m2", "m3"], instances=[f"i{j:03d}" for j in range(n_instances)],
        higher_is_better=[True, True, False], kind=["mean", "mean", "binary"])


def labels_study(accuracies, *, n, seed, metrics=("accuracy",), dataset="labels"):
    """A 3-class classification study from ``load_labels``: every system predicts the
    seeded gold label with its accuracy (else the next class), so ``metrics`` are corpus
    metrics (accuracy, macro-F1) over ``n`` instances. ``accuracies``: ``[(system,
    accuracy), ...]``; seeded, the same draws in the same order for the same arguments."""
    import pandas as pd

    from multistat.adapters import load_labels

    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 3, n)
    rows = []
    for s, acc in accuracies:
        pred = np.where(rng.random(n) < acc, gold, (gold + 1) % 3)
        rows.append(pd.DataFrame({"system": s, "instance": np.arange(n), "gold": gold,
                                  "prediction": pred}))
    return load_labels(pd.concat(rows), metrics=tuple(metrics), dataset=dataset)


@pytest.fixture
def toy_study():
    """A two-dataset study with different systems and instances (seeded, in memory)."""
    from multistat import cube

    return cube.make_study([small_dataset("toy", n_systems=4, n_instances=23, seed=0),
                            small_dataset("other", n_systems=3, n_instances=11, seed=1,
                                          nan_metric=False)])


@pytest.fixture(scope="session")
def mqm_frame():
    """The validated long frame of MQM newstest2020 zh-en (read once per session)."""
    from multistat import read_scores

    return read_scores(MQM_ZHEN, **MQM_OPTIONS)


@pytest.fixture(scope="session")
def data_file_study():
    """The study of NLPStatTest's data-file.txt (2001 paired sentence-BLEU scores)."""
    from multistat import load

    return load(DATA_FILE)


def pytest_report_header(config):
    """Which BLAS kernels this run uses: the bit-identity tests and the guides' resampled
    numbers assume shape-independent products (``make test`` pins OpenBLAS's Haswell
    kernels, see multistat/_blas.py); a bare ``pytest`` on an AVX-512 host does not."""
    from threadpoolctl import threadpool_info

    from multistat._blas import shape_consistent

    arch = [f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    line = (f"multistat: BLAS {', '.join(arch) or 'unknown'}, "
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
            f"shape-independent products: {shape_consistent()}")
    if not shape_consistent():
        line += " -- run `make test` (it pins the kernels) for the bit-identity tests"
    return line


def popen_own_session(args, **kwargs):
    """``subprocess.Popen(args, **kwargs)`` in a session and process group of its own, for
    the children tests signal: neither a signal sent to the child's group nor one the child
    sends its own group (``os.kill(0, ...)``) can reach pytest's processes (issue 24.8,
    tests/test_xdist_worker_exit.py). The caller kills the child when done."""
    import subprocess

    proc = subprocess.Popen(args, start_new_session=True, **kwargs)
    assert os.getpgid(proc.pid) == proc.pid != os.getpgrp()
    return proc


def full_report(results, out_dir, *, study=None, sections=None, options=None, **keywords):
    """``write_report`` with the analysis stages run first (``multistat.stages.
    report_inputs``): the report ``multistat report --study`` writes, from Python."""
    from multistat.report import write_report
    from multistat.stages import report_inputs

    inputs = report_inputs(results, study=study, sections=sections, options=options)
    return write_report(results, out_dir, sections=inputs, study=study, options=options,
                        **keywords)
