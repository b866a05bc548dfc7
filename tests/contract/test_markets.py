"""The contract every market meets (``marketarena.testing.contract``, which says what each check
checks), over every registered market kind: a new market folder gets these tests for free.

One test per check of ``contract.CHECKS`` (``test_<check>``), each over the market kinds (the
truncated-input check over those whose tiny instance reads input files); each runs on a fresh
world of the kind's tiny instance, the personas and their embeddings built once per module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from marketarena.core.registry import market_names
from marketarena.testing import contract

KINDS = market_names()
#: the checks that concern only some kinds, and which
ONLY = {
    "a_truncated_input_file_is_refused_before_any_episode": [
        k for k in KINDS if contract.reads_inputs(k)
    ]
}


@pytest.fixture(scope="module")
def persona_world(tmp_path_factory) -> Path:
    """personas + embeddings once per module (supply_chain reads them)."""
    return contract.persona_world(tmp_path_factory.mktemp("world"))


def _test_of(name: str):
    @pytest.mark.parametrize("kind", ONLY.get(name, KINDS))
    def test(kind, persona_world, tmp_path):
        contract.CHECKS[name](kind, contract.world(kind, tmp_path, persona_world))

    test.__name__ = test.__qualname__ = f"test_{name}"
    test.__doc__ = contract.RULES[name]
    return test


for _name in contract.CHECKS:
    globals()[f"test_{_name}"] = _test_of(_name)
