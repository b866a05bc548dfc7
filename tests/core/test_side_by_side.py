"""Episodes with LLM seats side by side (issue 25): the logs of a run with many episodes in flight
are byte-identical to a one-at-a-time run's, on several markets; the endpoint never sees more than
its ``max_concurrency`` requests at once, across two worker processes; an interrupted concurrent
run resumes to the same logs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.types import RunAborted
from marketarena.llm.fake import FakeEndpoint, LoopbackEndpoint, Status, schema_answer, with_usage
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import in_flight, simulate

ROOT = Path(__file__).resolve().parents[2]
LLM = {"name": "gpt", "kind": "llm", "model": "fake"}


def block_with_llm(kind: str) -> dict:
    """The market's tiny params with one LLM seat (an entrant in double_auction, else a roster
    entry replaced)."""
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )
    if kind == "double_auction":
        block["pool"] = [e["name"] for e in block["roster"]]
        block["roster"].append(LLM)
        block["entrant_games"] = 12  # a unit each
        block["runs"] = 2
    else:
        swap = {"crash": "myopic", "english_auction": "random", "cournot": "tit_for_tat"}[kind]
        block["roster"] = [
            {**LLM, "name": swap} if e["name"] == swap else e for e in block["roster"]
        ]
    return block


def llm_params(
    tmp_path: Path,
    kind: str,
    base_url: str = "http://fake.invalid/v1",
    concurrency: int = 8,
    **execution,
) -> dict:
    return {
        "models": {
            "fake": {
                "model": "fake-model",
                "base_url": base_url,
                "api_key_env": None,
                "max_tokens": 200,
                "max_concurrency": concurrency,
            }
        },
        "llm": {"cache_dir": str(tmp_path / "llm")},
        "execution": execution,
        "markets": {kind: block_with_llm(kind)},
    }


def slow_answer(body: dict):
    """``schema_answer`` after 20 ms, so that requests of episodes side by side overlap in the
    in-process fake endpoint even on a loaded machine (at 2 ms, an episode could finish its
    request before the next one reached the endpoint)."""
    return replace(schema_answer(body), delay_s=0.02)


def surviving_firm(body: dict):
    """A crash firm that stays in business (30 calls an episode, not one)."""
    return with_usage(body, {"price": 2.5, "supply": 15})


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


@pytest.mark.parametrize("kind", ["double_auction", "crash", "english_auction", "cournot"])
def test_many_episodes_in_flight_write_the_logs_of_one_at_a_time(tmp_path, kind):
    one = parse_params(llm_params(tmp_path / "one", kind, episodes_in_flight=1))
    many = parse_params(llm_params(tmp_path / "many", kind))
    assert in_flight(many, kind) == 16  # auto: twice the endpoint's max_concurrency
    fake_one, fake_many = FakeEndpoint(responder=slow_answer), FakeEndpoint(responder=slow_answer)
    paths = Paths(tmp_path)
    if kind == "cournot":  # its firms read the Nash and monopoly references
        run_reference(kind, one, paths)
    a = simulate(
        kind, one, paths.data, tmp_path / "a", progress=False, openai_factory=fake_one.factory
    )
    b = simulate(
        kind, many, paths.data, tmp_path / "b", progress=False, openai_factory=fake_many.factory
    )
    assert a["played"] == b["played"] > 1
    assert fake_one.max_in_flight == 1 < fake_many.max_in_flight <= 8  # side by side, within limit
    assert fake_one.n_calls == fake_many.n_calls > 0
    assert files(tmp_path / "a") == files(tmp_path / "b")
    if kind == "double_auction":  # the entrant's 12 games: a unit each (LLM_SHARD_EPISODES)
        units = sorted(p.name for p in (tmp_path / "b").iterdir() if p.name.startswith("x-"))
        assert [len(logs.read_meta(tmp_path / "b" / u)["episodes"]) for u in units] == [1] * 12


def test_units_written_in_rooms_made_while_they_wait_are_the_units_written_without(
    tmp_path, monkeypatch
):
    """Every unit still playing ``ROOM_AFTER_S`` after its start (here: at once) has its folders
    made by the writer while it waits (``logs.make_room``): the logs and run logs are those of a
    run without, and no blank file is left anywhere."""
    from marketarena.simulate import schedule

    made = []
    real = logs.make_room
    monkeypatch.setattr(schedule, "ROOM_AFTER_S", 0.0)
    monkeypatch.setattr(logs, "make_room", lambda *a: made.append(a[1].name) or real(*a))
    kind = "double_auction"
    paths = Paths(tmp_path)
    for name in ("with", "without"):
        if name == "without":
            monkeypatch.setattr(schedule, "ROOM_AFTER_S", 1e9)
        params = parse_params(llm_params(tmp_path / name, kind))
        fake = FakeEndpoint(responder=slow_answer)
        simulate(
            kind,
            params,
            paths.data,
            tmp_path / name / "eps",
            progress=False,
            openai_factory=fake.factory,
            run_dir=tmp_path / name / "runs",
        )
    entrant = {p.name for p in (tmp_path / "with" / "eps").iterdir() if p.name.startswith("x-")}
    assert len(entrant) == 12 and entrant <= set(made)  # the entrant's games, a unit each
    assert files(tmp_path / "with" / "eps") == files(tmp_path / "without" / "eps")
    runs = [
        sorted(p.relative_to(tmp_path / n / "runs") for p in (tmp_path / n / "runs").rglob("*"))
        for n in ("with", "without")
    ]
    assert runs[0] == runs[1] and runs[0]
    assert not [p for p in tmp_path.rglob(f"{logs.BLANK_PREFIX}*")]


def test_two_workers_never_pass_the_endpoints_max_concurrency(tmp_path):
    """Two worker processes over real HTTP, 3 requests at most, one count for both (``llm.slots``):
    with a fixed share each (1), 2 at most would ever be in flight; shared, the third slot is
    always wanted (each worker has two episodes side by side) and taken."""
    with LoopbackEndpoint(surviving_firm, delay_s=0.02) as endpoint:
        raw = llm_params(tmp_path, "crash", endpoint.base_url, concurrency=3, workers=2)
        raw["markets"]["crash"]["runs"] = 8
        summary = simulate("crash", parse_params(raw), tmp_path, tmp_path / "eps", progress=False)
        assert summary["workers"] == 2 and summary["played"] == 8
        assert endpoint.max_in_flight == 3
    # and the same logs as one worker playing one episode at a time, from the cache
    raw = llm_params(
        tmp_path, "crash", endpoint.base_url, concurrency=3, workers=1, episodes_in_flight=1
    )
    raw["markets"]["crash"]["runs"] = 8
    raw["llm"]["cache_only"] = True
    simulate("crash", parse_params(raw), tmp_path, tmp_path / "one", progress=False)
    assert files(tmp_path / "eps") == files(tmp_path / "one")


@pytest.mark.parametrize("order", [("wide", "narrow"), ("narrow", "wide")])
def test_models_sharing_an_endpoint_get_the_smallest_of_their_max_concurrency(tmp_path, order):
    """Two models on one endpoint, allowing 8 and 2 requests at once: one process never has more
    than 2 in flight, whichever model asks first (it had the first one's slots)."""
    raw = llm_params(tmp_path, "crash", episodes_in_flight=8)
    raw["models"] = {
        name: {**raw["models"]["fake"], "max_concurrency": n}
        for name, n in (("wide", 8), ("narrow", 2))
    }
    firms = {"myopic": order[0], "random": order[1]}  # the myopic firm asks first every day
    raw["markets"]["crash"]["roster"] = [
        {"name": e["name"], "kind": "llm", "model": firms[e["name"]]} if e["name"] in firms else e
        for e in raw["markets"]["crash"]["roster"]
    ]
    fake = FakeEndpoint(responder=slow_answer)
    simulate(
        "crash",
        parse_params(raw),
        tmp_path,
        tmp_path / "eps",
        progress=False,
        openai_factory=fake.factory,
    )
    assert fake.max_in_flight == 2


def test_an_interrupted_concurrent_run_keeps_finished_units_and_resumes_to_the_same_logs(tmp_path):
    kind = "double_auction"
    params = parse_params(llm_params(tmp_path, kind, concurrency=4))
    served = {"n": 0}

    def failing(body):  # the endpoint dies after 56 of the entrant's 72 answers
        served["n"] += 1
        return schema_answer(body) if served["n"] <= 56 else Status(400, "gone")

    with pytest.raises(RunAborted):
        simulate(
            kind,
            params,
            tmp_path,
            tmp_path / "eps",
            progress=False,
            openai_factory=FakeEndpoint(responder=failing).factory,
        )
    kept = {p.name for p in (tmp_path / "eps").iterdir() if not p.name.startswith(".")}
    # the units with LLM seats start first (8 games at a time), each entrant game a unit of its
    # own: the games finished before the endpoint died are kept, each whole
    assert any(name.startswith("x-") for name in kept)
    games_kept = sum(len(logs.read_meta(tmp_path / "eps" / u)["episodes"]) for u in kept)
    summary = simulate(
        kind,
        params,
        tmp_path,
        tmp_path / "eps",
        progress=False,
        openai_factory=FakeEndpoint(responder=schema_answer).factory,
    )
    assert summary["skipped"] == games_kept
    clean = parse_params(llm_params(tmp_path / "clean", kind, episodes_in_flight=1))
    simulate(
        kind,
        clean,
        tmp_path,
        tmp_path / "clean_eps",
        progress=False,
        openai_factory=FakeEndpoint(responder=schema_answer).factory,
    )
    assert files(tmp_path / "eps") == files(tmp_path / "clean_eps")


def test_a_unit_is_committed_only_once_its_answers_are_in_the_cache(tmp_path, monkeypatch):
    """Answers are stored by the client's writer thread, held while the market works on them
    (here for as long as nothing else is sent): the episode folder is renamed into place only
    once every answer of the episode is in the response cache, so a kept unit always replays.
    The last unit is committed after every episode has ended: by then every answer is stored."""
    from marketarena.llm import client as client_module

    monkeypatch.setattr(client_module, "CACHE_WRITE_HOLD_S", 60.0)
    raw = llm_params(tmp_path, "crash")
    cached_at_commit = []
    real_replace = logs.os.replace

    def replace_and_count(src, dst):
        if Path(dst).parent == tmp_path / "eps":
            cached_at_commit.append(sum(1 for _ in (tmp_path / "llm").rglob("*.json")))
        return real_replace(src, dst)

    monkeypatch.setattr(logs.os, "replace", replace_and_count)
    fake = FakeEndpoint(responder=surviving_firm)
    simulate(
        "crash",
        parse_params(raw),
        tmp_path,
        tmp_path / "eps",
        progress=False,
        openai_factory=fake.factory,
    )
    assert len(cached_at_commit) > 1 and cached_at_commit[-1] == fake.n_calls
    assert cached_at_commit == sorted(cached_at_commit)


def test_an_answer_that_cannot_be_stored_ends_the_run_and_no_unit_is_committed(
    tmp_path, monkeypatch
):
    from marketarena.llm.errors import CacheError
    from marketarena.llm.response_cache import ResponseCache

    real_put, puts = ResponseCache.put, {"n": 0}

    def put_until_the_disk_is_full(self, key, request, response):
        puts["n"] += 1
        if puts["n"] > 3:
            raise OSError(28, "No space left on device")
        return real_put(self, key, request, response)

    monkeypatch.setattr(ResponseCache, "put", put_until_the_disk_is_full)
    raw = llm_params(tmp_path, "crash")
    with pytest.raises(CacheError, match="llm.cache_dir.*No space left"):
        simulate(
            "crash",
            parse_params(raw),
            tmp_path,
            tmp_path / "eps",
            progress=False,
            openai_factory=FakeEndpoint(responder=surviving_firm).factory,
        )
    assert not [p for p in (tmp_path / "eps").iterdir() if not p.name.startswith(".")]
