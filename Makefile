# Two entry points of the README's quick start:
#   make reproduce   set up the environment and run the full reproduction (snakemake --cores 8)
#   make test        set up the environment, run the linters, build the docs and run the
#                    test suite (what CI runs)
#   make test-cluster  the smoke workflow on a one-node SLURM that it stands up and tears
#                    down (root, Debian: workflow/cluster/local-slurm.sh)
# and, after a reproduction, make report-html (PROFILE=workflow/profiles/smoke after
# make smoke): the HTML report and a PNG of what a browser shows of it. Not in CI (long):
#   make wheel       the release build (python -m build: sdist, then the wheel from it, in
#                    isolated environments) into dist/, then make test-release on it
#   make test-release  every way to install from source, in fresh environments, and the
#                    release wheel's checks
#   make test-oldest the suite on the lowest Python and the declared floors
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= 8

.PHONY: reproduce test test-cluster test-oldest wheel smoke lint docs bench bench-compare \
	clean-results clean-kernels report-html

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[workflow,test,bench,docs]'
	touch $@

reproduce: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake --cores $(CORES)

# Whether the full profile still makes the traces and optima it made (issue 59): the
# cheapest run of each dataset (SDCA-GAP, one thread; on NER theta = 0.8 and 1) and the
# optima that tests/reproduction/digests/full.json names (OCR's and NER's), built under
# results/ as make reproduce builds them (a run whose code changed runs again), then
# every trace column but the timings, and each optimum, compared with that file's
# digests; a difference names the first run and column, with its row and both values
# (exit 1). About 15 minutes on two idle cores. Rules and tolerances:
# docs/reproduction/report.md; make test checks the smoke profile the same way.
DIGESTS := tests/reproduction/digests

.PHONY: reproduce-check
reproduce-check: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake --cores $(CORES) $$($(BIN)/python -m \
		crfsdca.reproduction.digests targets --digests $(DIGESTS)/full.json --results results)
	$(BIN)/python -m crfsdca.reproduction.digests check --digests $(DIGESTS)/full.json \
		--results results

# CRFsuite's own sources (python-crfsuite's sdist has its frontend): the tests build its
# `crfsuite` program and tag with models written here.
CRFSUITE_SDIST := $(VENV)/sdist/python_crfsuite-0.9.12.tar.gz

$(CRFSUITE_SDIST):
	$(BIN)/python -m pip download --quiet --no-deps --no-binary python-crfsuite \
		--dest $(VENV)/sdist python-crfsuite==0.9.12

# Two pytest workers (pytest-xdist), each test file whole on one of them (its module
# fixtures built once): 12 minutes instead of 21 on a cold 2-core machine.
test: lint docs $(CRFSUITE_SDIST)
	PATH=$(abspath $(BIN)):$$PATH CRFSUITE_SDIST=$(abspath $(CRFSUITE_SDIST)) \
		$(BIN)/python -m pytest -q -m "not cluster and not release" -n 2 --dist loadfile

# The suite on the lowest supported Python (pyproject's requires-python) with every
# requirement at its declared floor (tests/oldest_versions.py: what it leaves out and
# why), in $(OLDEST); numba's cache of that numba goes there too, not into src/.
OLDEST        := $(VENV)/oldest
OLDEST_VERSION = $(shell $(BIN)/python tests/oldest_versions.py python 2>/dev/null)
OLDEST_PYTHON ?= $(or $(lastword $(wildcard $(HOME)/.pyenv/versions/$(OLDEST_VERSION).*/bin/python3)),\
	$(shell command -v python$(OLDEST_VERSION)))

$(OLDEST)/.installed: pyproject.toml tests/oldest_versions.py | $(BIN)/.installed
	@test -n "$(OLDEST_PYTHON)" || { echo "make test-oldest: no Python $(OLDEST_VERSION)" \
		"found (pyenv install $(OLDEST_VERSION), or set OLDEST_PYTHON)"; exit 2; }
	rm -rf $(OLDEST) && $(OLDEST_PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python -m pip install --quiet $$($(BIN)/python tests/oldest_versions.py)
	$(OLDEST)/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(OLDEST)/bin/python -m pip check
	touch $@

test-oldest: $(OLDEST)/.installed $(CRFSUITE_SDIST)
	PATH=$(abspath $(OLDEST)/bin):$$PATH CRFSUITE_SDIST=$(abspath $(CRFSUITE_SDIST)) \
		NUMBA_CACHE_DIR=$(abspath $(OLDEST))/numba-cache \
		$(OLDEST)/bin/python -m pytest -q -p no:cacheprovider -m "not cluster and not release" \
		-n 2 --dist loadfile $$($(BIN)/python tests/oldest_versions.py ignore)

# The release build: sdist and wheel in dist/ as `python -m build` makes them (each in an
# isolated environment with pyproject's build requirements; the wheel carries the
# kernels of this processor and of every level of its architecture, several minutes on
# two cores), then make test-release on that wheel.
wheel: $(BIN)/.installed
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	CRFSDCA_WHEEL=$$(ls $(abspath dist)/crfsdca-*.whl) $(MAKE) test-release

# Every way users install from source, each in a fresh virtual environment of a Python
# with nothing installed (pip wheel ., pip install ., pip install git+file://, an sdist of
# python -m build --sdist installed by pip, python -m build: tests/integration/
# test_wheel.py and test_install_from_source.py), and the release wheel's checks in fresh
# environments (tests/integration/test_release.py: dist/'s wheel under make wheel, else a
# wheel it builds with every level). Needs the package index; 30 minutes or more on two cores.
RELEASE_TESTS := tests/integration/test_wheel.py tests/integration/test_install_from_source.py \
	tests/integration/test_release.py

.PHONY: test-release
test-release: $(BIN)/.installed
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=0 \
		$(RELEASE_TESTS)

# numba's cache keys each kernel by its own file only: a kernel that calls one of another
# file keeps that one's old code after an edit of that file alone. After editing kernels,
# drop the compiled ones (they compile again on first use).
clean-kernels:
	find src -path '*/__pycache__/*' \( -name '*.nbi' -o -name '*.nbc' \) -delete

# The smoke profile through workflow/profiles/slurm on a real (one-node) SLURM, compared
# with a local smoke run; prints sacct's table of the jobs. Needs root (apt-get, daemons).
test-cluster: $(BIN)/.installed
	workflow/cluster/local-slurm.sh $(BIN)/python -m pytest -v -s -m cluster tests/integration/test_cluster.py

smoke: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake --cores 2 --profile workflow/profiles/smoke

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests $(wildcard benchmarks)
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/snakemake --lint

# The documentation site (mkdocs.yml, docs/): warnings are errors; the site goes under
# .venv so that it is never committed. NO_MKDOCS_2_WARNING quiets Material's banner.
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(VENV)/site

# The benchmark suite (benchmarks/suite/, pytest-benchmark; 18 minutes on a 2-core machine
# that other jobs loaded, less alone):
# each run stored with its machine and commit under benchmarks/results/<machine>/, then
# README.md's current numbers written from the newest run (the site's come from it when
# it is built). bench-compare: whether a run is slower than another (default: this
# machine's two newest; BASE and HEAD name runs by commit, revision or file).
BENCH_RESULTS = benchmarks/results/$(shell $(BIN)/python benchmarks/suite/machine.py)

bench: $(BIN)/.installed $(CRFSUITE_SDIST)
	CRFSUITE_SDIST=$(abspath $(CRFSUITE_SDIST)) $(BIN)/python -m pytest benchmarks/suite \
		-p no:cacheprovider --benchmark-autosave --benchmark-storage=file://$(BENCH_RESULTS)
	$(BIN)/python benchmarks/suite/publish.py

bench-compare: $(BIN)/.installed
	$(BIN)/python benchmarks/suite/compare.py $(BASE) $(HEAD)

# The HTML report (snakemake --report) and a screenshot of it in headless Chromium, so
# that one can see what a reader sees; installs Debian's chromium (apt-get) if missing.
PROFILE ?=
REPORT  ?= $(if $(PROFILE),results/smoke,results)/report.html
CHROMIUM_FLAGS := --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --hide-scrollbars \
	--window-size=1400,1100 --virtual-time-budget=20000 --log-level=3

report-html: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake $(if $(PROFILE),--profile $(PROFILE)) \
		--report $(REPORT)
	command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	profile=$$(mktemp -d) && chromium $(CHROMIUM_FLAGS) --user-data-dir=$$profile \
		--screenshot=$(abspath $(REPORT:.html=.png)) file://$(abspath $(REPORT)); \
		status=$$?; rm -rf $$profile; exit $$status
	@echo "open $(REPORT) in a browser; $(REPORT:.html=.png) shows its first screen"

# The readers of the files users share, fuzzed (tests/fuzz: CRFsuite's data and model files,
# crfsdca's HDF5 model and .dual, the config's templates, tag's input): FUZZ_INPUTS mutated
# inputs on two workers (about 90 minutes on an idle 2-core machine); what goes wrong is
# kept under .venv/fuzz/findings, .venv/fuzz/summary.json says what ran. make test runs a
# short budget of it (tests/integration/test_fuzz.py).
FUZZ_INPUTS ?= 1000000
.PHONY: fuzz
fuzz: $(BIN)/.installed
	PYTHONPATH=tests $(BIN)/python -m fuzz --inputs $(FUZZ_INPUTS) --jobs 2 --out $(VENV)/fuzz
