# The two README commands: `make report` and `make test`. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.multistat-installed
export DVC_NO_ANALYTICS := 1
export MPLBACKEND := Agg

.PHONY: test report install bench demo-data clean validate

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[pipeline,bench,dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

report: $(STAMP)
	$(VENV)/bin/dvc config core.analytics false
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/dvc repro
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/dvc status

# Calibration suite (Type I error and interval coverage of every registered test; about
# 10-30 minutes on 2 cores): reports/validation/calibration.{parquet,md}
validate: $(STAMP)
	nice $(PY) -m multistat.calibration --out reports/validation

demo-data: $(STAMP)
	$(VENV)/bin/multistat demo-data --out data

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache
