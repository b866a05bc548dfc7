"""The live progress line: counters summed over the run's processes, what the line says, and a
simulate run that draws it (stderr made to look like a terminal) counting every episode."""

from __future__ import annotations

import io
from pathlib import Path

import yaml

from marketarena import progress, simulate as sim
from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, with_usage

ROOT = Path(__file__).resolve().parents[1]


def test_counters_sum_the_slots_of_every_process():
    counters = progress.Counters(3)
    counters.add(0, progress.EPISODES, 2)
    counters.add(2, progress.EPISODES, 5)
    counters.set(1, {progress.CALLS: 7, progress.COST: 0.25})
    total = counters.total()
    assert total[progress.EPISODES] == 7 and total[progress.CALLS] == 7
    assert total[progress.COST] == 0.25


def test_the_line_names_calls_in_flight_tokens_dollars_and_cache_hits():
    total = [3, 1234, 5, 2_500_000, 12_000, 1.5, 40]
    line = progress._describe(total, llm=True)
    assert line == "5 in flight · 1,234 calls · 2.5M+12.0k tok · $1.50 · 40 cached"
    assert progress._describe(total, llm=False) == ""


def test_no_line_when_stderr_is_not_a_terminal():
    assert not progress.live(io.StringIO())


def test_a_run_with_a_terminal_counts_every_episode_on_its_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "live", lambda stream=None: True)
    seen = []
    real = progress.display

    def spy(instance, episodes, counters, llm, enabled=True):
        seen.append(counters)
        return real(instance, episodes, counters, llm, enabled)

    monkeypatch.setattr(sim.progress_line, "display", spy)
    block = yaml.safe_load((ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text())
    block["roster"] = [{"name": "myopic", "kind": "llm", "model": "fake"} if e["name"] == "myopic"
                       else e for e in block["roster"]]
    params = parse_params({"models": {"fake": {"model": "f", "base_url": "http://fake.invalid/v1",
                                               "api_key_env": None}},
                           "llm": {"cache_dir": str(tmp_path / "llm")}, "markets": {"crash": block}})
    fake = FakeEndpoint(responder=lambda body: with_usage(body, {"price": 2.5, "supply": 15}))
    summary = sim.simulate("crash", params, tmp_path, tmp_path / "eps", openai_factory=fake.factory)
    (counters,) = seen
    assert counters.total()[progress.EPISODES] == summary["played"] == 4
    err = capsys.readouterr().err
    assert "done in" not in err  # the live line replaces the plain lines
