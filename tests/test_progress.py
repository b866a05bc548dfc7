"""The live progress line: counters summed over the run's processes, what the line says, and a
simulate run that draws it (stderr made to look like a terminal) counting every episode."""

from __future__ import annotations

import io
from pathlib import Path

import yaml

from marketarena import progress
from marketarena import simulate as sim
from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, prompt_caching, with_usage

ROOT = Path(__file__).resolve().parents[1]


def test_counters_sum_the_slots_of_every_process():
    counters = progress.Counters(3)
    counters.add(0, progress.EPISODES, 2)
    counters.add(2, progress.EPISODES, 5)
    counters.set(1, {progress.CALLS: 7, progress.COST: 0.25})
    total = counters.total()
    assert total[progress.EPISODES] == 7 and total[progress.CALLS] == 7
    assert total[progress.COST] == 0.25


def test_the_line_names_calls_re_asks_invalid_tokens_dollars_and_cache_hits():
    total = [3, 1234, 5, 2_500_000, 12_000, 1.5, 40, 1250, 3, 0]
    line = progress._describe(total, llm=True)
    assert line == (
        "5 in flight · 1,234 calls (16 re-asked, 3 invalid) · 2.5M+12.0k tok · "
        "$1.50 · 40 cache hits"
    )
    assert progress._describe(total, llm=False) == ""


def test_the_line_shows_cached_prompt_tokens_and_the_budget_used_of_its_limit():
    total = [3, 10, 0, 20_000, 500, 0.004, 0, 10, 0, 15_000]
    line = progress._describe(total, llm=True, budget=(0.006, 0.02))
    assert "20.0k+500 tok (15.0k cached)" in line
    assert "$0.0040, budget 50% of $0.020" in line  # sub-cent dollars never read $0.00


def test_no_line_when_stderr_is_not_a_terminal():
    assert not progress.live(io.StringIO())


def test_a_run_with_a_terminal_counts_every_episode_on_its_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "live", lambda stream=None: True)
    seen = []
    real = progress.display

    def spy(instance, episodes, counters, llm, enabled=True, budget=None):
        seen.append(counters)
        return real(instance, episodes, counters, llm, enabled, budget)

    monkeypatch.setattr(progress, "display", spy)
    block = yaml.safe_load((ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text())
    block["roster"] = [
        {"name": "myopic", "kind": "llm", "model": "fake"} if e["name"] == "myopic" else e
        for e in block["roster"]
    ]
    params = parse_params(
        {
            "models": {
                "fake": {"model": "f", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"crash": block},
        }
    )
    fake = FakeEndpoint(
        responder=prompt_caching(
            lambda body: with_usage(body, {"price": 2.5, "supply": 15}),
            min_tokens=0,
            block_tokens=1,
        )
    )
    summary = sim.simulate("crash", params, tmp_path, tmp_path / "eps", openai_factory=fake.factory)
    (counters,) = seen
    total = counters.total()
    assert total[progress.EPISODES] == summary["played"] == 4
    # the last frame counts every call (the run log's), the cached prompt tokens among them
    assert total[progress.CALLS] == summary["llm"]["calls"] == fake.n_calls > 0
    assert 0 < total[progress.CACHED_PROMPT] == summary["llm"]["cached_prompt_tokens"]
    assert summary["llm"]["cached_prompt_tokens"] < summary["llm"]["prompt_tokens"]
    err = capsys.readouterr().err
    assert "done in" not in err  # the live line replaces the plain lines
    assert "{" not in err.splitlines()[-1]  # it ends on the summary, not on a dict
    assert f"LLM: {fake.n_calls} calls (0 re-asked, 0 invalid)" in err
    assert "served from the provider's prompt cache" in err


def test_the_summary_says_calls_re_asks_invalid_tokens_dollars_and_the_budget():
    summary = {
        "market": "double_auction",
        "played": 16,
        "skipped": 4,
        "wall_time_s": 2.8,
        "llm": {
            "calls": 80,
            "cached_calls": 0,
            "invalid_calls": 2,
            "attempts": 106,
            "prompt_tokens": 47_058,
            "cached_prompt_tokens": 30_000,
            "completion_tokens": 306,
            "cost_usd": 0.0801,
        },
        "budget": (0.0801, 0.5),
    }
    assert progress.summary_lines(summary) == [
        "double_auction: 16 episodes played, 4 already on disk in 2.8 s",
        "  LLM: 80 calls (26 re-asked, 2 invalid), 47,058 prompt tokens (30,000 served from the "
        "provider's prompt cache) + 306 completion, $0.080",
        "  budget: $0.080 of llm.max_cost_usd $0.50 spent (this instance, every run)",
    ]


def test_the_cli_ends_with_the_next_command(tmp_path):
    from typer.testing import CliRunner

    from marketarena.cli import app

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text())
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"markets": {"crash": block}, "execution": {"workers": 1}}))
    res = CliRunner().invoke(app, ["simulate", "crash", "--params", str(path)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1].startswith("next: `dvc repro`")
    assert "marketarena view" in res.output and "{'market'" not in res.output
