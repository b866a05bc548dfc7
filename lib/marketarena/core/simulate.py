"""Play a market's planned episodes into ``data/episodes/<market>/``, resuming where a run stopped.

Planning: episode ``r`` (0 <= r < runs) gets id ``ep-<r:04d>`` and seed
``SeedSequence([market seed, r]).generate_state(1)[0]``, so adding runs never changes earlier ones.
Its fingerprint hashes the market's params, the resolved model specs behind its LLM seats
(everything that changes an answer or its logged cost: model name, endpoint, sampling, schema mode,
re-asks, prices), the run index and seed, the simulator's code and the content of every input file,
so a finished episode is reused only if it would be reproduced exactly; everything else is swept
away and replayed (see ``core.logs``). ``runs`` is left out of the fingerprint: raising it from 10
to 20 plays ten new episodes and keeps the first ten.

Order of work: input files are checked and loaded first (a truncated embeddings file fails there),
and only then is the episodes folder touched, so a corrupt input never deletes finished episodes.

Episodes run one after another in one event loop (so that an LLM client and its connections live
for the whole run); each is written the moment it finishes, so an interruption loses at most the
episode in flight.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from marketarena.config import Params
from marketarena.core import logs
from marketarena.core.registry import get_plugin
from marketarena.core.runner import run_episode
from marketarena.core.types import InputError

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: the code an episode depends on: change any of it and finished episodes are replayed
SIMULATOR_CODE = ("core", "agents", "llm", "config.py", "embeddings.py", "personas.py")


def package_version() -> str:
    try:
        return version("marketarena")
    except PackageNotFoundError:
        return "0+unknown"


def code_hash(market: str) -> str:
    paths = [PACKAGE_ROOT / p for p in SIMULATOR_CODE] + [PACKAGE_ROOT / "markets" / market,
                                                          PACKAGE_ROOT / "markets" / "_shared"]
    return logs.hash_files([p for p in paths if p.exists()])


def episode_seed(base_seed: int, run: int) -> int:
    return int(np.random.SeedSequence([base_seed, run]).generate_state(1)[0])


#: model-spec fields that cannot change an answer or what is logged about it
NON_ANSWER_FIELDS = frozenset({"timeout_s", "max_concurrency", "max_retries", "api_key_env"})


def model_fingerprints(market: str, params: Params) -> dict[str, dict]:
    """The resolved spec of every model alias the market's LLM seats use, minus the fields that
    cannot change an answer (timeouts, concurrency, retries, the key's variable name)."""
    return {alias: {k: v for k, v in params.models[alias].model_dump(mode="json").items()
                    if k not in NON_ANSWER_FIELDS}
            for alias in sorted(llm_aliases(market, params))}


def plan(market: str, params: Params, input_files: list[Path]) -> list[logs.PlannedEpisode]:
    mp = params.markets[market]
    common = logs.sha256_text(logs.canonical_json({
        "market": market,
        "params": mp.model_dump(mode="json", exclude={"runs"}),  # episode r needs no siblings
        "models": model_fingerprints(market, params),
        "shared": get_plugin(market).shared_params(params),
        "code": code_hash(market),
        "inputs": logs.hash_files(input_files) if input_files else "",
    }))
    planned = []
    for run in range(mp.runs):
        seed = episode_seed(mp.seed, run)
        fp = logs.sha256_text(f"{common}:{run}:{seed}")
        planned.append(logs.PlannedEpisode(f"ep-{run:04d}", run, seed, fp))
    return planned


def check_input(path: Path) -> None:
    """Read an input file whole, so a truncated or corrupt one fails here (Parquet, JSON)."""
    if path.suffix == ".parquet":
        pq.read_table(path)
    elif path.suffix == ".json":
        json.loads(path.read_text(encoding="utf-8"))
    else:
        path.read_bytes()


def llm_aliases(market: str, params: Params) -> set[str]:
    return {e.model for e in getattr(params.markets[market], "roster", []) if e.kind == "llm"}


def simulate(market: str, params: Params, data_dir: Path, out_dir: Path | None = None,
             progress: bool = True, openai_factory=None) -> dict:
    """Run every planned episode of ``market`` not already finished; returns a small summary.

    With LLM seats, one :class:`~marketarena.agents.llm_agent.LLMRuntime` serves the whole run
    (``openai_factory`` plugs in a fake endpoint for tests). A :class:`RunAborted` (endpoint
    unreachable, budget spent, replay cache miss) ends the run after closing the client; every
    episode finished before it is on disk and the next run resumes from there.
    """
    plugin = get_plugin(market)
    out_dir = out_dir or data_dir / "episodes" / market
    inputs = plugin.input_files(data_dir)
    missing_inputs = [str(p) for p in inputs if not p.exists()]
    if missing_inputs:
        raise InputError(f"{market}: missing input files {missing_inputs}; run the "
                                f"personas and embed stages first (dvc repro)")
    try:  # load and check every input before touching a single episode
        for path in inputs:
            check_input(path)
        resources = plugin.load_resources(params, data_dir)
    except Exception as exc:
        raise InputError(f"{market}: cannot load its input files "
                         f"({', '.join(map(str, inputs)) or 'none'}): {type(exc).__name__}: {exc}; "
                         "no episode was touched") from exc
    planned = plan(market, params, inputs)
    todo = logs.prepare(out_dir, planned)
    summary = {"market": market, "planned": len(planned), "skipped": len(planned) - len(todo),
               "played": 0, "wall_time_s": 0.0}
    if not todo:
        return summary
    llm = None
    aliases = llm_aliases(market, params)
    if aliases:
        from marketarena.agents.llm_agent import LLMRuntime

        llm = LLMRuntime(params, openai_factory=openai_factory)
        if not params.llm.cache_only:
            llm.check_keys(aliases)  # a missing key variable stops before any episode
    started = time.perf_counter()
    asyncio.run(_play_all(plugin, params, resources, out_dir, planned, todo, summary, progress, llm))
    summary["wall_time_s"] = round(time.perf_counter() - started, 3)
    return summary


def usage_by_model(llm_calls: pd.DataFrame) -> dict[str, dict[str, float | int]]:
    """An episode's LLM usage summed per model alias, from its ``llm_calls`` log (for
    ``meta.json["run"]["llm"]``), in the fields of the client's run totals (``UsageTotals``)."""
    out: dict[str, dict[str, float | int]] = {}
    for model, g in llm_calls.groupby("model", sort=True):
        out[str(model)] = {"calls": int(len(g)), "cached_calls": int(g["cached"].sum()),
                           "invalid_calls": int((~g["valid"].astype(bool)).sum()),
                           "attempts": int(g["attempts"].sum()), "retries": int(g["retries"].sum()),
                           "prompt_tokens": int(g["prompt_tokens"].sum()),
                           "completion_tokens": int(g["completion_tokens"].sum()),
                           "cost_usd": float(g["cost_usd"].sum())}
    return out


async def _play_all(plugin, params, resources, out_dir, planned, todo, summary, progress,
                    llm) -> None:
    try:
        await _play_episodes(plugin, params, resources, out_dir, planned, todo, summary, progress,
                             llm)
    finally:
        if llm is not None:
            await llm.aclose()


async def _play_episodes(plugin, params, resources, out_dir, planned, todo, summary, progress,
                         llm) -> None:
    market = plugin.name
    for k, ep in enumerate(todo):
        t0 = time.perf_counter()
        market_obj, agents, agents_table = plugin.build_episode(params, resources, ep.run, llm=llm)
        result = await run_episode(market_obj, agents, ep.seed)
        tables = {"agents": agents_table, "decisions": result.decisions,
                  "llm_calls": result.llm_calls, **result.tables}
        wall = time.perf_counter() - t0
        meta = {"market": market, "lineup": agents_table["name"].tolist(),
                "package_version": package_version()}
        run_info = {"wall_time_s": round(wall, 3),
                    "cost_usd": float(result.llm_calls["cost_usd"].sum()),
                    "llm": usage_by_model(result.llm_calls)}
        logs.write_episode(out_dir, ep, tables, meta, run_info)
        summary["played"] += 1
        if progress:
            usage = f"; LLM {llm.progress()}" if llm is not None else ""
            print(f"[{market}] episode {ep.episode_id} done in {wall:.2f}s "
                  f"({summary['skipped'] + k + 1}/{len(planned)}){usage}", file=sys.stderr, flush=True)
