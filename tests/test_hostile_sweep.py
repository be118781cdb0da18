"""A representative subset of validation/hostile_sweep.py: generated hostile inputs to
the ratings, preference, meta-analysis, meta-evaluation and LLM-log commands end in one
clean error line (exit 2) or a correct output, never in a traceback, a written output
after a failure, or a silent acceptance. The whole sweep (243 cases):
``python -m validation.hostile_sweep``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from validation import hostile_sweep  # noqa: E402

#: one or two cases of every kind of fault, in every family
PICKED = [
    "agreement: valid", "components: valid", "agreement: drop column rater",
    "agreement: whitespace twin in rater", "components: text in score",
    "agreement: tiny score (1e-300 scale)", "components: one rater",
    "agreement: ratio level with negative ratings", "components: all ratings equal",
    "preferences: valid", "preferences: drop column winner",
    "preferences: zero-width space in model_a", "preferences: winner 'draw'",
    "preferences: a system against itself", "preferences: empty file",
    "preferences: control character in model_b",
    "meta: valid", "meta: text in se", "meta: inf in estimate", "meta: drop column se",
    "meta: duplicated first row", "meta: huge se (1e300 scale)", "meta: binary garbage",
    "meta-evaluate: valid", "meta-evaluate: drop column metric",
    "meta-evaluate: human metric absent", "meta-evaluate: only the human metric",
    "meta-evaluate: whitespace twin in system", "meta-evaluate: huge score (1e300 scale)",
    "load eee: valid", "load eee: sample_id true", "load eee: score text",
    "load eee: duplicate sample", "load eee: model name with trailing space",
    "load eee: a truncated last line",
]


def _cases():
    by_name = {c.name: c for c in hostile_sweep.cases()}
    missing = [n for n in PICKED if n not in by_name]
    assert not missing, missing
    return [by_name[n] for n in PICKED]


@pytest.mark.slow
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.name)
def test_hostile_case(case, tmp_path):
    result = hostile_sweep.run_case(case, tmp_path / "case")
    assert result["kind"] in ("clean-error", "correct"), result
