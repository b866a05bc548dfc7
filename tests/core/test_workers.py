"""Episodes in worker processes (issue 13): logs byte-identical to a one-worker run, resume
after an interruption, and one budget for all workers of an LLM run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import marketarena
from marketarena.config import ParamsError, parse_params
from marketarena.core.types import RunAborted
from marketarena.llm.fake import LoopbackEndpoint, schema_answer
from marketarena.llm.ledger import read_ledger
from marketarena.simulate import simulate, spend_ledger_path, worker_count
from marketarena.simulate.limits import even_window, in_flight, worker_share

ROOT = Path(__file__).resolve().parents[2]


def tiny(kind: str, **execution) -> dict:
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )
    return {"markets": {kind: block}, "execution": execution}


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, meta.json included (run information is in the run log)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    }


@pytest.mark.parametrize("kind", ["english_auction", "crash"])
def test_two_workers_write_the_same_logs_as_one(tmp_path, kind):
    one = parse_params(tiny(kind, workers=1))
    two = parse_params(tiny(kind, workers=2))
    s1 = simulate(kind, one, tmp_path / "a", progress=False)
    s2 = simulate(kind, two, tmp_path / "b", progress=False)
    assert s1["workers"] == 1 and s2["workers"] == 2 and s1["played"] == s2["played"] >= 2
    a, b = files(tmp_path / "a" / "episodes" / kind), files(tmp_path / "b" / "episodes" / kind)
    assert a.keys() == b.keys() and len(a) > 0
    assert [k for k in a if a[k] != b[k]] == []


def test_a_run_interrupted_in_workers_resumes_and_keeps_finished_episodes(tmp_path):
    params = parse_params(tiny("english_auction", workers=2))
    simulate("english_auction", params, tmp_path, progress=False)
    out = tmp_path / "episodes" / "english_auction"
    episodes = sorted(p for p in out.iterdir() if p.is_dir())
    before = {p.name: (p / "meta.json").stat().st_mtime_ns for p in episodes}
    shutil.rmtree(episodes[1])  # as if the run had stopped before this one was written
    summary = simulate("english_auction", params, tmp_path, progress=False)
    assert summary["played"] == 1 and summary["skipped"] == len(episodes) - 1
    after = {
        p.name: (p / "meta.json").stat().st_mtime_ns for p in sorted(out.iterdir()) if p.is_dir()
    }
    assert {k: v for k, v in after.items() if k != episodes[1].name} == {
        k: v for k, v in before.items() if k != episodes[1].name
    }


def llm_params(tmp_path, workers, limit):
    p = tiny("english_auction", workers=workers)
    p["models"] = {
        "mock": {
            "model": "mock",
            "provider": "mock",
            "max_concurrency": 4,
            "price_in_per_mtok": 20.0,
            "price_out_per_mtok": 20.0,
            "max_tokens": 100,
            "mock": {"policy": "scripted", "answers": [{"reasoning": "", "bid": None}]},
        }
    }
    # the budget's guard itself: a run over its cap starts anyway (else the estimate stops it
    # before the first call: tests/core/test_preflight.py)
    p["llm"] = {
        "cache_dir": str(tmp_path / "cache"),
        "max_cost_usd": limit,
        "stop_on_estimate": False,
    }
    p["markets"]["english_auction"]["roster"].append({"name": "m", "kind": "llm", "model": "mock"})
    return parse_params(p)


def test_the_budget_holds_for_all_workers_together(tmp_path):
    params = llm_params(tmp_path, workers=2, limit=0.5)
    assert worker_count(params, "english_auction", 4) == 2
    with pytest.raises(RunAborted, match="BudgetExceeded|budget"):
        simulate("english_auction", params, tmp_path, progress=False)
    ledger = read_ledger(spend_ledger_path(tmp_path, "english_auction"))
    assert 0 < ledger["spent_usd"] <= 0.5 and ledger["reserved"] == {}


def test_workers_never_exceed_an_endpoints_concurrency(tmp_path):
    params = llm_params(tmp_path, workers=8, limit=None)
    one = params.model_copy(
        update={"models": {"mock": params.models["mock"].model_copy(update={"max_concurrency": 1})}}
    )
    assert worker_count(params, "english_auction", 10, cores=16) == 4
    assert worker_count(one, "english_auction", 10, cores=16) == 1


def with_remote_llm(p: dict, max_concurrency: int) -> dict:
    """``p`` (english_auction's params) with an LLM bidder on a remote endpoint."""
    p["models"] = {
        "remote": {
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
            "max_concurrency": max_concurrency,
        }
    }
    p["markets"]["english_auction"]["roster"].append(
        {"name": "r", "kind": "llm", "model": "remote"}
    )
    return p


def test_workers_are_capped_at_what_helps():
    """The audit's ``workers: 1000000`` started one process per episode (8 on 2 cores, 26x slower)."""
    scripted = parse_params(tiny("english_auction", workers=1_000_000))
    assert worker_count(scripted, "english_auction", 8, cores=2) == 2  # the cores
    assert worker_count(scripted, "english_auction", 1, cores=2) == 1  # the units
    auto = parse_params(tiny("english_auction"))
    assert worker_count(auto, "english_auction", 100, cores=3) == 3
    # seats waiting on a real endpoint: still the cores (the waits are filled by episodes side by
    # side in each worker's event loop), and no more than its max_concurrency
    p = with_remote_llm(tiny("english_auction", workers=1_000_000), 6)
    remote = parse_params(p)
    assert worker_count(remote, "english_auction", 100, cores=2) == 2
    assert worker_count(remote, "english_auction", 100, cores=16) == 6
    assert worker_count(remote, "english_auction", 4, cores=16) == 4


def test_a_workers_window_holds_at_most_its_even_share_of_the_episodes():
    """BAZAAR's 40 entrant games on two workers whose windows hold 64 each split 36 to 4 when
    one worker pulled faster: capped at its even share, each takes 20; a window smaller than
    the share, or set by hand below it, is kept."""
    p = with_remote_llm(tiny("english_auction"), 64)
    share = worker_share(parse_params(p), "english_auction", 2)
    assert in_flight(share, "english_auction") == 64  # twice a worker's 32
    window = lambda params, episodes: in_flight(  # noqa: E731
        even_window(params, "english_auction", 2, episodes), "english_auction"
    )
    assert window(share, 40) == 20 and window(share, 41) == 21 and window(share, 1) == 1
    assert window(share, 1000) == 64
    p["execution"] = {"episodes_in_flight": 8}
    assert window(worker_share(parse_params(p), "english_auction", 2), 40) == 8


@pytest.mark.parametrize("workers", [True, "2", 2.0, 0, -1, "two"])
def test_workers_are_strict_integers(workers):
    with pytest.raises(ParamsError, match="execution.workers"):
        parse_params(tiny("english_auction", workers=workers))


def test_workers_pull_units_from_one_queue_and_a_drained_queue_keeps_their_end_marks():
    """Local workers take units one at a time (``_pulled``) until their end mark; after a
    worker's ``RunAborted`` the main process empties the queue (``_drain``) so that the others
    take no new unit, and every worker still finds an end mark."""
    import multiprocessing
    import queue as queue_module

    from marketarena.simulate import workers

    units = multiprocessing.get_context("spawn").Queue()
    for k in range(5):
        units.put((k, f"unit-{k}", []))
    for _ in range(2):
        units.put(None)
    try:
        first = workers._pulled(units)
        assert [next(first)[0], next(first)[0]] == [0, 1]  # one at a time, in plan order
        workers._drain(units)  # units 2-4 are gone; both end marks stay
        assert list(first) == []  # this worker meets its end mark
        assert list(workers._pulled(units)) == []  # and so does the other
        with pytest.raises(queue_module.Empty):
            units.get(timeout=0.2)
    finally:
        units.cancel_join_thread()
        units.close()


def test_two_workers_pull_every_unit_once(tmp_path):
    """With more units than workers, every planned episode is played exactly once."""
    params = parse_params(tiny("crash", workers=2))
    summary = simulate("crash", params, tmp_path, progress=False)
    planned = summary["planned"]
    folders = [p for p in (tmp_path / "episodes" / "crash").iterdir() if p.is_dir()]
    assert summary["played"] == planned == len(folders) > 2


def test_a_simulation_refuses_a_numpy_imported_before_marketarena(tmp_path):
    """numpy reads its CPU path when it is loaded: imported before marketarena pinned it, it runs
    its AVX-512 loops on a CPU that has them, and crash's logs then differed in the last bits from
    a worker's (this test's sibling above failed so under pytest's collection order). The
    simulation says so instead of writing them; imported after, it runs."""
    code = (
        "import sys, numpy, yaml\n"
        "import marketarena\n"
        "from marketarena.config import parse_params\n"
        "from marketarena.simulate import simulate\n"
        f"block = yaml.safe_load(open({str(ROOT / 'lib/marketarena/markets/crash/tiny_params.yaml')!r}))\n"
        "simulate('crash', parse_params({'markets': {'crash': block}, "
        "'execution': {'workers': 1}}), sys.argv[1], progress=False)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in marketarena.PINNED_CPU_PATH}
    env["PYTHONPATH"] = str(ROOT / "lib")
    unpinned = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    avx512 = (
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import numpy; print(numpy._core._multiarray_umath.__cpu_features__['X86_V4'])",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        ).stdout.strip()
        == "True"
    )
    if not marketarena.pin_cpu_path() or not avx512:
        assert unpinned.returncode == 0, unpinned.stderr  # nothing to disable: nothing refused
        pytest.skip("no AVX-512 here: numpy's path is the same imported first or not")
    assert unpinned.returncode != 0 and "imported before marketarena" in unpinned.stderr
    assert not (tmp_path / "a" / "episodes").exists()
    pinned = subprocess.run(
        [
            sys.executable,
            "-c",
            code.replace(
                "import sys, numpy, yaml\nimport marketarena\n",
                "import marketarena\nimport sys, numpy, yaml\n",
            ),
            str(tmp_path / "b"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pinned.returncode == 0, pinned.stderr


FORKED_OR_SPAWNED = """
import json, sys, threading
import yaml
import marketarena
from marketarena.config import parse_params
from marketarena.simulate import simulate
from marketarena.simulate.workers import start_method
params = parse_params(yaml.safe_load(open(sys.argv[1])))
if sys.argv[3] == "thread":  # a caller running a thread of its own (a notebook's kernel)
    threading.Thread(target=threading.Event().wait, daemon=True).start()
method = start_method()
summary = simulate("english_auction", params, sys.argv[2], progress=False)
print(json.dumps({"method": method, "workers": summary["workers"], "played": summary["played"]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork on Linux only")
def test_forked_and_spawned_workers_write_the_same_logs(tmp_path):
    """A run from a single-threaded main process forks its workers (they start with its modules
    instead of re-importing them); one whose caller runs a thread spawns them. Both write the same
    bytes, LLM seats included (answers seeded by the request, each run with its own cache)."""
    server = LoopbackEndpoint(schema_answer)
    runs, before = {}, 0
    try:
        for how in ("plain", "thread"):
            block = tiny("english_auction")["markets"]["english_auction"]
            block["roster"] = block["roster"][:2] + [
                {"name": "llm", "kind": "llm", "model": "loop"}
            ]
            raw = {
                "models": {
                    "loop": {
                        "model": "loopback",
                        "base_url": server.base_url,
                        "api_key_env": None,
                        "max_tokens": 300,
                    }
                },
                "llm": {"cache_dir": str(tmp_path / how / "cache")},
                "markets": {"english_auction": block},
                "execution": {"workers": 2},
            }
            path = tmp_path / f"{how}.yaml"
            path.write_text(yaml.safe_dump(raw))
            done = subprocess.run(
                [sys.executable, "-c", FORKED_OR_SPAWNED, str(path), str(tmp_path / how), how],
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, "PYTHONPATH": str(ROOT / "lib")},
            )
            assert done.returncode == 0, done.stderr
            runs[how] = json.loads(done.stdout.strip().splitlines()[-1])
            runs[how]["requests"], before = server.n_calls - before, server.n_calls
    finally:
        server.close()
    assert runs["plain"]["method"] == "fork" and runs["thread"]["method"] == "spawn"
    assert runs["plain"]["workers"] == runs["thread"]["workers"] == 2
    assert runs["plain"]["played"] == runs["thread"]["played"] >= 2
    assert runs["plain"]["requests"] == runs["thread"]["requests"] > 0
    a = files(tmp_path / "plain" / "episodes" / "english_auction")
    b = files(tmp_path / "thread" / "episodes" / "english_auction")
    assert a.keys() == b.keys() and any(k.endswith("llm_calls.parquet") for k in a)
    assert [k for k in a if a[k] != b[k]] == []


def test_a_worker_takes_a_unit_only_when_it_has_room_to_start_it(monkeypatch):
    """``_play_side_by_side`` pulls the next unit from the run's queue once a place in its window
    is free, not before: a unit held while the window is full was one the other worker could have
    started (crash's benchmark: one LLM episode held from 1.5 s to 9.2 s ran alone at the end)."""
    import asyncio
    from types import SimpleNamespace

    from marketarena.simulate import schedule

    release = {k: asyncio.Event() for k in range(3)}
    taken, finished = [], []

    async def play_one(run, spec, seed):
        await release[spec].wait()
        return spec

    monkeypatch.setattr(schedule, "_play_one", play_one)
    monkeypatch.setattr(schedule, "_finish_unit", lambda *a: finished.append(a[3]))

    def queue():
        for k in range(3):
            taken.append(k)
            yield k, SimpleNamespace(episodes=[SimpleNamespace(seed=k)]), [k]

    async def main():
        run = asyncio.create_task(
            schedule._play_side_by_side(
                SimpleNamespace(llm=None, parent_pid=None), queue(), window=1
            )
        )
        await asyncio.sleep(0.05)
        assert taken == [0]  # the window is full: unit 1 stays in the queue
        release[0].set()
        await asyncio.sleep(0.05)
        assert taken == [0, 1] and finished == [[0]]
        release[1].set()
        release[2].set()
        await asyncio.wait_for(run, 5)

    asyncio.run(main())
    assert taken == [0, 1, 2] and finished == [[0], [1], [2]]


def test_units_with_llm_seats_are_handed_out_first_each_kind_in_plan_order():
    """``_numbered``: the units of an LLM run that wait on the endpoint start first; each keeps
    its index among the units to play."""
    from types import SimpleNamespace

    from marketarena.simulate import schedule

    def unit(llm):  # a unit is of one kind (``logs.plan_units``): its episodes' flag says which
        return SimpleNamespace(episodes=(SimpleNamespace(llm=llm),) * 2), []

    todo = [unit(False), unit(True), unit(False), unit(True)]
    assert [k for k, _, _ in schedule._numbered(todo)] == [1, 3, 0, 2]
    assert [k for k, _, _ in schedule._numbered(todo[:1] + todo[2:3])] == [0, 1]


def test_the_budget_stop_reads_the_same_with_one_worker_or_two(tmp_path):
    """The audit: two workers said `BudgetExceeded: budget ...`, one worker `budget ...`."""
    said = []
    for workers in (1, 2):
        params = llm_params(tmp_path / str(workers), workers=workers, limit=0.5)
        with pytest.raises(RunAborted) as info:
            simulate("english_auction", params, tmp_path / str(workers), progress=False)
        said.append(str(info.value))
    assert [s.split(" reached")[0] for s in said] == ["budget max_cost_usd=0.5000"] * 2, said
