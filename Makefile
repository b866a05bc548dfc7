# The two commands a newcomer needs:
#   make run    creates .venv, installs marketarena, runs the DVC pipeline (dvc repro)
#   make test   creates .venv, installs marketarena with test extras, runs the whole test suite
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# DVC must not phone home: the machines reach only package registries.
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MPLBACKEND := Agg

.PHONY: run test install bench clean

install: $(STAMP)

# torch first, pinned to the CPU build that lies on these machines' disk (pip's find-links),
# so that sentence-transformers does not pull a multi-GB CUDA build from PyPI.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

test: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_supply_chain.py

clean:
	rm -rf data reports .dvc/cache .dvc/tmp
