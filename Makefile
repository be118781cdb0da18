# The two README commands: `make report` and `make test`. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.multistat-installed
export DVC_NO_ANALYTICS := 1
export MPLBACKEND := Agg
# OpenBLAS's Haswell kernels where the CPU runs them (multistat._blas.can_pin: x86-64 with
# AVX2 + FMA): products whose bits do not depend on their shape, so tables are
# bit-identical for every memory limit (multistat/_blas.py says why; the command line sets
# it itself). A value set in the environment is kept.
ifeq ($(origin OPENBLAS_CORETYPE),undefined)
ifeq ($(shell $(PYTHON) -c 'import sys; sys.path.insert(0, "."); from multistat._blas import can_pin; print(can_pin())' 2>/dev/null),True)
export OPENBLAS_CORETYPE := Haswell
endif
endif

.PHONY: test test-fast report install browser bench demo-data clean validate docs

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,dev,bench,docs]'
	touch $(STAMP)

install: $(STAMP)

# The HTML report test runs a real headless chromium. As root with apt-get (a fresh Debian
# machine, CI) it is installed here; otherwise make stops with one line saying what to
# install. MULTISTAT_SKIP_BROWSER=1 skips the browser test on purpose (pytest reports it).
browser:
	@if [ "$${MULTISTAT_SKIP_BROWSER:-}" = 1 ] || command -v chromium >/dev/null 2>&1 \
	    || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make: installing chromium (headless browser for the report test) with apt-get"; \
	  log=$$(mktemp); (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium) >$$log 2>&1 \
	    || { echo "make: apt-get install chromium failed, log: $$log"; exit 1; }; \
	else \
	  echo "make test needs chromium for the HTML report test: install it (e.g. sudo apt-get install chromium) or set MULTISTAT_SKIP_BROWSER=1"; \
	  exit 1; \
	fi

# Two worker processes (pytest-xdist), one test file per worker at a time (--dist loadfile):
# a file's module fixtures (one DVC project, one calibration run) are built once and its
# tests run in their order, as in a serial run. Files go out in collection order, the
# longest first (tests/conftest.py LONGEST_FIRST). TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2
test: $(STAMP) browser
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder

# The fast lane: every test not marked slow (tests/conftest.py SLOW_FILES), no browser
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile \
	  --no-loadscope-reorder -m "not slow"

report: $(STAMP)
	$(VENV)/bin/dvc config core.analytics false
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/dvc repro
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/dvc status

# Calibration suite (Type I error and interval coverage of every registered test; about
# 10-30 minutes on 2 cores): reports/validation/calibration.{parquet,md}
validate: $(STAMP)
	nice $(PY) -m validation.calibration --out reports/validation

demo-data: $(STAMP)
	$(VENV)/bin/multistat demo-data --out data

# The documentation site (docs/): warnings are errors, every one reported
# (-W --keep-going); the site is docs/_build/html/index.html.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache docs/_build docs/generated docs/api.rst
