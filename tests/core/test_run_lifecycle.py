"""Issue 27: a run ends as a whole, however it ends, and its money is never forgotten.

Real processes throughout: ``marketarena simulate`` in a subprocess against a loopback
OpenAI-compatible endpoint (``llm.fake.LoopbackEndpoint``) whose answers we control:

- kill -9 with requests in flight (the endpoint hangs): the next open of the spend ledger charges
  every request the endpoint received at its bound, across repeated kills, and a last run with the
  limit just above that stops within it;
- the parent of a two-worker run ended by SIGKILL, SIGTERM or SIGINT: no process the run started
  outlives it (``docs/reliability.md``);
- a resume while a process of an earlier run still holds the instance: refused in one line;
- a worker killed from outside (the OOM killer): the run ends in one ``error:`` line, no
  traceback, no process left, and resumes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from marketarena.llm.cost import Bound
from marketarena.llm.fake import LoopbackEndpoint, Reply
from marketarena.llm.ledger import SpendLedger, read_ledger
from marketarena.llm.mock import _schema_of, random_instance
from marketarena.llm.spec import ModelSpec
from marketarena.simulate import spend_ledger_path
from tests.processes import alive, children, python, wait_for

ROOT = Path(__file__).resolve().parents[2]
PRICE = 50.0  # USD per million tokens, in and out: a request's bound is a few cents


def tiny(kind: str) -> dict:
    return yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )


def write_params(
    tmp_path: Path,
    base_url: str,
    *,
    llm_seats: int,
    workers: int = 1,
    runs: int = 4,
    limit: float | None = 1000.0,
    timeout_s: float = 60.0,
) -> Path:
    market = tiny("english_auction")
    market["runs"] = runs
    market["roster"] = market["roster"][:1] + [
        {"name": f"llm{i}", "kind": "llm", "model": "loop"} for i in range(llm_seats)
    ]
    params = {
        "models": {
            "loop": {
                "model": "loopback",
                "base_url": base_url,
                "api_key_env": None,
                "max_tokens": 300,
                "timeout_s": timeout_s,
                "max_retries": 0,
                "price_in_per_mtok": PRICE,
                "price_out_per_mtok": PRICE,
            }
        },
        # the guard under kills: a run over its cap starts anyway (stop_on_estimate)
        "llm": {
            "cache_dir": str(tmp_path / "cache"),
            "max_cost_usd": limit,
            "stop_on_estimate": False,
        },
        "markets": {"english_auction": market},
        "execution": {"workers": workers},
    }
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


class Endpoint:
    """A loopback endpoint that records every request body, answers with random schema-valid
    JSON, or hangs while ``hang`` is set."""

    def __init__(self, delay_s: float = 0.0):
        self.bodies: list[dict] = []
        self.hang = threading.Event()
        self.delay_s = delay_s
        self.rng = np.random.default_rng(0)
        self.server = LoopbackEndpoint(self.answer)

    def answer(self, body: dict) -> Reply:
        self.bodies.append(body)
        if self.hang.is_set():
            time.sleep(3600)  # never answers (a daemon thread)
        time.sleep(self.delay_s)
        content = random_instance(_schema_of(body.get("response_format")), self.rng)
        return Reply(content, prompt_tokens=100, completion_tokens=50)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.close()


def start(params: Path) -> subprocess.Popen:
    """``marketarena simulate english_auction`` in its own session (signals reach only it)."""
    return python(
        "-m",
        "marketarena.cli",
        "simulate",
        "english_auction",
        "--params",
        str(params),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def bound_of(body: dict, spec: ModelSpec) -> float:
    return Bound.of(spec, body["messages"], body.get("response_format")).usd


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_with_requests_in_flight_charges_them_and_the_limit_holds(tmp_path):
    with Endpoint() as endpoint:
        params = write_params(tmp_path, endpoint.server.base_url, llm_seats=3)
        spec = ModelSpec(alias="loop", **yaml.safe_load(params.read_text())["models"]["loop"])
        ledger = spend_ledger_path(tmp_path / "data", "english_auction")
        endpoint.hang.set()
        for _kill in range(3):
            seen = len(endpoint.bodies)
            run = start(params)
            wait_for(
                lambda seen=seen: len(endpoint.bodies) >= seen + 3, what="3 requests in flight"
            )
            time.sleep(0.2)  # anything else the run was about to send
            run.send_signal(signal.SIGKILL)
            run.wait()
            in_flight = read_ledger(ledger)["reserved"]
            assert len(in_flight) == len(endpoint.bodies) - seen  # left behind by the dead run
            state = SpendLedger(ledger).read()  # opened again: the owner is gone
            charged = sum(bound_of(b, spec) for b in endpoint.bodies)
            assert state["reserved"] == {}
            assert state["spent_usd"] == pytest.approx(charged)  # every request, at its bound
            assert state["settled_in_flight"]["calls"] == len(endpoint.bodies)

        # the limit just above what is spent: a resumed run charges within it, then stops
        endpoint.hang.clear()
        spent = state["spent_usd"]
        limit = spent + 2.5 * max(bound_of(b, spec) for b in endpoint.bodies)
        params = write_params(tmp_path, endpoint.server.base_url, llm_seats=3, limit=limit)
        run = start(params)
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 1
        [line] = error_lines(stderr)
        assert "max_cost_usd" in line and "raise llm.max_cost_usd" in line
        final = SpendLedger(ledger).read()
        assert spent < final["spent_usd"] <= limit and final["reserved"] == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc")
@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda sig: sig.name
)
def test_no_process_of_a_run_outlives_its_parent(tmp_path, sig):
    # LLM seats on an endpoint: two workers whatever the machine's cores
    with Endpoint(delay_s=0.02) as endpoint:
        params = write_params(tmp_path, endpoint.server.base_url, llm_seats=1, workers=2, runs=4)
        run = start(params)
        wait_for(
            lambda: len(children(run.pid)) >= 2 and len(endpoint.bodies) >= 4,
            what="two workers asking the endpoint",
        )
        started = children(run.pid)
        run.send_signal(sig)  # SIGINT: the pool is stopped; the others: the kernel kills them
        run.communicate(timeout=30)
        wait_for(
            lambda: not any(alive(p) for p in started),
            timeout_s=30,
            what=f"the run's processes {sorted(p for p in started if alive(p))} to end",
        )
        # and the next run resumes: the episodes written so far are kept, the rest are played
        resumed = start(params)
        stdout, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr[-2000:]
        from marketarena.core.reader import EpisodeReader

        assert len(EpisodeReader(tmp_path / "data" / "episodes" / "english_auction")) == 4
        assert "next: `dvc repro`" in stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/locks")
def test_a_resume_while_a_process_of_the_old_run_lives_refuses_in_one_line(tmp_path):
    with Endpoint() as endpoint:
        params = write_params(tmp_path, endpoint.server.base_url, llm_seats=1)
        live = tmp_path / "data" / "episodes" / ".english_auction.live"
        live.parent.mkdir(parents=True)
        # what a worker of a run whose parent died would hold (without PR_SET_PDEATHSIG)
        orphan = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_SH); "
                    "print('held', flush=True); time.sleep(600)"
                ),
                str(live),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert orphan.stdout.readline().strip() == "held"
            run = start(params)
            _, stderr = run.communicate(timeout=120)
            assert run.returncode == 1
            [line] = error_lines(stderr)
            assert f"still alive (pid {orphan.pid})" in line and "kill <pid>" in line
            assert not (tmp_path / "data" / "episodes" / "english_auction").exists()
        finally:
            orphan.kill()
            orphan.wait()
        run = start(params)
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr[-2000:]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_killed_from_outside_ends_the_run_in_one_line(tmp_path):
    with Endpoint(delay_s=0.02) as endpoint:
        params = write_params(tmp_path, endpoint.server.base_url, llm_seats=1, workers=2, runs=4)
        run = start(params)
        wait_for(
            lambda: len(children(run.pid)) >= 2 and len(endpoint.bodies) >= 4,
            what="two workers asking the endpoint",
        )
        workers = sorted(
            p
            for p in children(run.pid)  # forked or spawned, not the tracker
            if "resource_tracker" not in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
        )
        started = children(run.pid)
        os.kill(workers[0], signal.SIGKILL)  # what the OOM killer does
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 1
        [line] = error_lines(stderr)
        assert "a worker process died" in line and "run again" in line
        wait_for(lambda: not any(alive(p) for p in started), timeout_s=30, what="the other worker")
        resumed = start(params)
        _, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr[-2000:]
