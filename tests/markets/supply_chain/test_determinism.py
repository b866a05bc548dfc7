"""Same params, same seed: byte-identical episode logs, whatever the embedding cache holds."""

from __future__ import annotations

import pytest

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_embed, run_personas
from marketarena.simulate import simulate

pytestmark = pytest.mark.slow


def test_two_runs_write_identical_files(tmp_path):
    params = parse_params(
        {
            "personas": {"per_tribe": 5},
            "embedding": {"cache_dir": str(tmp_path / "cache")},
            "markets": {
                "supply_chain": {
                    "runs": 2,
                    "steps": 3,
                    "beta": 5,
                    "roster": [
                        {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
                        {
                            "name": "rnd",
                            "kind": "baseline",
                            "strategy": "random",
                            "params": {"overspend_prob": 0.3},
                        },
                        {"name": "fol", "kind": "baseline", "strategy": "follower"},
                        {"name": "tgt", "kind": "baseline", "strategy": "targeter"},
                    ],
                }
            },
        }
    )
    paths = Paths(tmp_path)
    paths.data.mkdir()
    run_personas(params, paths)
    run_embed(params, paths)
    # first run: slogans not yet cached (computed one by one); second run: all from the cache
    simulate("supply_chain", params, paths.data, tmp_path / "a", progress=False)
    simulate("supply_chain", params, paths.data, tmp_path / "b", progress=False)
    files_a = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    files_b = sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()
    )
    assert files_a == files_b and len(files_a) == 2 * 15
    for rel in files_a:  # every file, meta.json included (run information is in the run log)
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
