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

.PHONY: demo test lint typecheck pytest samples bench soak browser clean

$(STAMP): pyproject.toml constraints.txt setup.py hpuprof/trace/_kineto_scan.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e '.[torch,dashboard,lightning,clients,test,dev]'
	# HTA 0.5.0, the oracle of the agreement tests: its wheel pins jupyterlab & co. that it
	# never imports, so install it without them and add the few modules it does import.
	$(PIP_INSTALL) --no-deps holistictraceanalysis==0.5.0 ijson networkx psutil pydot pyparsing pyyaml
	touch $(STAMP)

browser:
	@test -x /usr/bin/chromium || { \
	  echo "installing Debian chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP)
	$(VENV)/bin/hpuprof demo -o runs/demo
	@echo "Dashboard of this run: $(VENV)/bin/hpuprof dashboard runs/demo   then open http://127.0.0.1:8050/ (Ctrl-C stops it)"

lint: $(STAMP)
	$(VENV)/bin/ruff check hpuprof runtime/hpusim dashboards/hpudash tests bench tools
	$(VENV)/bin/ruff format --check hpuprof runtime/hpusim dashboards/hpudash tests bench tools

typecheck: $(STAMP)
	$(VENV)/bin/mypy hpuprof runtime/hpusim dashboards/hpudash

pytest: $(STAMP) browser
	$(PY) -m pytest -n 2 --timeout 600

test: lint typecheck pytest

samples: $(STAMP)
	$(PY) sample_traces/make_samples.py

bench: $(STAMP)
	$(PY) bench/run_all.py

# Crash trials at length: 200 of each ending (exception, os._exit, SIGINT/SIGTERM/SIGKILL) per
# backend, instead of the 20 that `make test` runs.
soak: $(STAMP)
	HPUPROF_KILL_TRIALS=200 $(PY) -m pytest tests/capture/test_kill_trials.py -p no:cacheprovider --timeout 7200

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
