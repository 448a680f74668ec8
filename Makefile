# hpuprof: every set-up step for a fresh machine lives here.
#   make demo   - the main job: an emulated Gaudi workload, profiled and analysed
#   make test   - ruff, mypy and the whole test suite (browser tests included)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch 2.13.0 is pinned for this CPU-only environment (a local wheel): an unpinned torch
# would pull several GB of CUDA packages. pyproject.toml states the supported range.
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: demo test lint typecheck pytest bare fuzz samples bench calibrate soak browser clean

# pip's own output goes to a log, shown only when an install fails: `make demo` prints the
# demo and nothing else (pip -q still warns about this machine's index set-up and backtracking).
QUIET = > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }
DEMO_STAMP := $(VENV)/.demo-installed
DEMO_EXTRAS := torch,dashboard
TORCHVISION := torchvision==0.28.0
ALL_EXTRAS := torch,dashboard,lightning,clients,distributed,test,dev

# The demo's set-up: the emulated workload (torch) and the dashboard it points to, nothing more.
$(DEMO_STAMP): pyproject.toml constraints.txt setup.py hpuprof/trace/_kineto_scan.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setting up $(VENV) for the demo (torch, dashboard; pip's log: $(VENV)/pip.log)"
	@$(PIP_INSTALL) -e '.[$(DEMO_EXTRAS)]' $(QUIET)
	@touch $@

# Everything `make test` needs: every extra, and HTA.
$(STAMP): pyproject.toml constraints.txt setup.py hpuprof/trace/_kineto_scan.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "setting up $(VENV) with every extra (pip's log: $(VENV)/pip.log)"
	@$(PIP_INSTALL) -e '.[$(ALL_EXTRAS)]' $(QUIET)
	@# HTA 0.5.0, the oracle of the agreement tests: its wheel pins jupyterlab & co. that it
	@# never imports, so install it without them and add the few modules it does import.
	@$(PIP_INSTALL) --no-deps holistictraceanalysis==0.5.0 ijson networkx psutil pydot pyparsing pyyaml $(QUIET)
	@# PyPI's torchvision (the release of this torch; a CUDA build) for emulated runs only, set
	@# aside where hpusim finds it (runtime/hpusim/torchvision_ops.py): in site-packages it
	@# would not import outside emulation, and clients that probe for it would then fail.
	@$(PIP_INSTALL) --no-deps --upgrade --target $(VENV)/hpusim-torchvision $(TORCHVISION) $(QUIET)
	@touch $@ $(DEMO_STAMP)

browser:
	@test -x /usr/bin/chromium || { \
	  echo "installing Debian chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(DEMO_STAMP)
	@$(VENV)/bin/hpuprof demo -o runs/demo
	@echo "Dashboard of this run: $(VENV)/bin/hpuprof dashboard runs/demo   then open http://127.0.0.1:8050/ (Ctrl-C stops it)"

lint: $(STAMP)
	$(VENV)/bin/ruff check hpuprof runtime/hpusim dashboards/hpudash tests bench tools
	$(VENV)/bin/ruff format --check hpuprof runtime/hpusim dashboards/hpudash tests bench tools

typecheck: $(STAMP)
	$(VENV)/bin/mypy hpuprof runtime/hpusim dashboards/hpudash

pytest: $(STAMP) browser
	$(PY) -m pytest -n 2 --dist loadgroup --timeout 600

# A bare install (`pip install .`, no extras) in its own venv: its dependencies once (again
# when pyproject.toml changes), the package itself from the current tree every time.
BARE := .venv-bare
$(BARE)/.deps: pyproject.toml constraints.txt
	rm -rf $(BARE) && $(PYTHON) -m venv $(BARE)
	$(BARE)/bin/python -m pip install --disable-pip-version-check -q -c constraints.txt .
	touch $@

bare: $(BARE)/.deps
	$(BARE)/bin/python -m pip install --disable-pip-version-check -q --no-deps --force-reinstall .
	$(BARE)/bin/python tests/bare/check_bare_install.py

# The long fuzz run of issue 13 (10,000 mutants, 2 at a time; `make test` runs a few hundred,
# each loaded mutant analysed; here every 4th loaded mutant is, ~1,500).
FUZZ_ARGS ?=
fuzz: $(STAMP)
	$(PY) -m tests.fuzz --count 10000 --jobs 2 --analyze-every 4 $(FUZZ_ARGS)

test: lint typecheck pytest bare

samples: $(STAMP)
	$(PY) sample_traces/make_samples.py

bench: $(STAMP)
	$(PY) bench/run_all.py

# the device model against published Gaudi 2 / Gaudi 3 results (docs/device-model.md), 5-9 min on 2 shared cores
calibrate: $(STAMP)
	$(PY) bench/calibration/run.py --json bench/calibration/results.json --update-docs

# Crash trials at length: 200 of each ending (exception, os._exit, SIGINT/SIGTERM/SIGKILL) per
# backend, instead of the 20 that `make test` runs.
soak: $(STAMP)
	HPUPROF_KILL_TRIALS=200 $(PY) -m pytest tests/capture/test_kill_trials.py -p no:cacheprovider --timeout 7200

clean:
	rm -rf $(VENV) $(BARE) .mypy_cache .ruff_cache .pytest_cache
