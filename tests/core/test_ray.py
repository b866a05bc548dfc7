"""The Ray backend against a real Ray head on loopback (issue 13): `ray start --head` in a
subprocess, a small simulate through it, every log compared byte for byte with a local run.

Runs in CI (`make test` installs the `ray` extra); it is not skipped when Ray is missing, it fails.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from marketarena.config import parse_params
from marketarena.core.types import RunAborted
from marketarena.simulate import simulate

from .test_workers import files, tiny

RAY = Path(sys.executable).parent / "ray"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    port = free_port()
    start = [
        str(RAY),
        "start",
        "--head",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--num-cpus=2",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    proc = subprocess.run(start, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, timeout=120)


@pytest.mark.parametrize("kind", ["english_auction", "crash"])
def test_a_run_on_a_ray_head_writes_the_same_logs_as_a_local_run(tmp_path, ray_head, kind):
    local = simulate(kind, parse_params(tiny(kind, workers=1)), tmp_path / "local", progress=False)
    on_ray = simulate(
        kind,
        parse_params(tiny(kind, workers="auto", ray_address=ray_head)),
        tmp_path / "ray",
        progress=False,
    )
    assert on_ray["backend"] == "ray" and on_ray["workers"] == 2
    assert on_ray["played"] == local["played"] >= 2
    a, b = (
        files(tmp_path / "local" / "episodes" / kind),
        files(tmp_path / "ray" / "episodes" / kind),
    )
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    # and a second run through Ray resumes: nothing left to play
    again = simulate(
        kind, parse_params(tiny(kind, ray_address=ray_head)), tmp_path / "ray", progress=False
    )
    assert again["played"] == 0 and again["skipped"] == local["played"]


def test_a_wrong_address_says_which_param(tmp_path):
    params = parse_params(tiny("english_auction", ray_address=f"127.0.0.1:{free_port()}"))
    with pytest.raises(RunAborted, match="execution.ray_address"):
        simulate("english_auction", params, tmp_path, progress=False)


def test_shards_played_on_a_ray_head_are_the_local_shards(tmp_path, ray_head):
    from .test_shards import da, play

    _, local = play(tmp_path / "local", da(2))
    summary, remote = play(tmp_path / "ray", da(2, workers="auto", ray_address=ray_head))
    assert summary["backend"] == "ray" and summary["workers"] == 2 and summary["played"] == 7
    a, b = files(local), files(remote)
    assert len(a) == 4 * 10 and a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []


def test_a_stopping_rule_on_a_ray_head_takes_the_local_decisions(tmp_path, ray_head):
    """cournot with an LLM player (the mock provider) and ``stop``: its field on the Ray head,
    its batches after; the same stop as a local run, and the same logs byte for byte."""
    import yaml

    from marketarena.pipeline import Paths, run_reference

    def params(name: str, **execution):
        block = yaml.safe_load(
            (
                Path(__file__).resolve().parents[2] / "lib/marketarena/markets/"
                "cournot/tiny_params.yaml"
            ).read_text()
        )
        block["roster"].append({"name": "gpt", "kind": "llm", "model": "m"})
        block.update(
            runs=12,
            rounds=4,
            stop={"batch": 2, "min_games": 2, "rank_width": 1, "boot": 50, "passes": 5},
        )
        return parse_params(
            {
                "models": {"m": {"model": "mock", "provider": "mock"}},
                "llm": {"cache_dir": str(tmp_path / name / "llm")},
                "markets": {"cournot": block},
                "execution": execution,
            }
        )

    runs = {}
    for name, execution in (
        ("local", {"workers": 1}),
        ("ray", {"workers": "auto", "ray_address": ray_head}),
    ):
        p = params(name, **execution)
        run_reference("cournot", p, Paths(tmp_path / name))
        runs[name] = simulate(
            "cournot", p, Paths(tmp_path / name).data, tmp_path / name / "eps", progress=False
        )
    assert runs["ray"]["backend"] == "ray"
    assert runs["ray"]["stopped"] == runs["local"]["stopped"] and runs["local"]["stopped"]
    assert runs["ray"]["stop_lines"] == runs["local"]["stop_lines"]
    a, b = files(tmp_path / "local" / "eps"), files(tmp_path / "ray" / "eps")
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
