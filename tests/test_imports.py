"""What importing a cheap module costs: reading params (``marketarena.config``) and model specs
(``marketarena.llm.spec``) must not import the heavy libraries a stage that only parses its params
never uses. Each import runs in a fresh interpreter (this one has imported everything already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: what a cheap import must leave unimported: the frames (pandas), the statistics (scipy), the
#: HTTP client (aiohttp, imported on the first request) and the compiled kernels (numba)
HEAVY = ("pandas", "scipy", "aiohttp", "numba")

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({m.partition(".")[0] for m in sys.modules})))
"""


def imported_by(*modules: str) -> set[str]:
    """The top-level packages in ``sys.modules`` of a fresh interpreter after importing
    ``modules`` (this checkout's ``lib`` first on its path)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "lib"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *modules],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "modules", [("marketarena.config", "marketarena.llm.spec"), ("marketarena.llm",)]
)
def test_reading_params_imports_no_heavy_library(modules):
    assert imported_by(*modules) & set(HEAVY) == set()


def test_the_llm_package_still_hands_out_its_names():
    """``from marketarena.llm import X`` imports X's module when X is first asked for."""
    from marketarena import llm
    from marketarena.llm.client import LLMClient
    from marketarena.llm.ledger import SpendLedger

    assert llm.LLMClient is LLMClient and llm.SpendLedger is SpendLedger
    assert all(getattr(llm, name) is not None for name in llm.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        llm.no_such_name  # noqa: B018
