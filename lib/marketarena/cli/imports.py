"""The ``marketarena`` commands that import published games: ``import-bazaar`` (BAZAAR's
double-auction logs) and ``import-agent-bazaar`` (Agent Bazaar's crash and lemon runs), thin
wrappers over ``pipeline.import_folder``. ``cli/__init__.py`` registers them on its app, between
``leaderboard`` and ``serve-local`` as its help lists them. :data:`DebugOpt`, every command's
``--debug``, lives here because this module sits below ``cli/__init__.py``, which imports it (the code
has no import cycles: ``tests/test_architecture.py``)."""

from __future__ import annotations

from pathlib import Path

import typer

from marketarena.faults import one_line_errors

#: ``--debug``: the traceback of an error too (``faults.one_line_errors``)
DebugOpt = typer.Option(
    False, "--debug", help="print the traceback of an error too (or set MARKETARENA_DEBUG=1)"
)


def import_bazaar(
    logs: str = typer.Argument(
        ...,
        help="BAZAAR's logs/ folder (github.com/lechmazur/bazaar, or lechmazur/emergent_collusion)",
    ),
    out: str = typer.Option(
        "data/bazaar",
        "--out",
        help="project folder to write (replaced whole, only when the import succeeds)",
    ),
    passes: int = typer.Option(
        200, min=1, max=100_000, help="shuffled TrueSkill passes of the board"
    ),
    reference_games: int = typer.Option(
        2000,
        "--reference-games",
        min=10,
        max=1_000_000,
        help="games per distribution of our truthful CSα reference "
        "(it rates the games that logged no CSα)",
    ),
    workers: int = typer.Option(
        0, "--workers", min=0, max=1024, help="processes for that reference (0: one per core)"
    ),
    rating: str = typer.Option(
        None,
        "--rating",
        help="a CSV of the study's own published rating (model,rating): the board's LLMs are "
        "set beside it (Spearman, models matched by identity)",
    ),
    debug: bool = DebugOpt,
) -> None:
    """Read BAZAAR's published game logs (JSONL) as an imported instance double_auction of a
    project in --out, through the pipeline's own stages: its reference (our truthful CSα under the
    games' setting, for games that logged none), the games with their chat as episodes
    (data/episodes/double_auction, with import.json), our metrics with each seat's logged CSα or
    ours and a check of our efficiency and surplus shares against the logged ones
    (data/metrics/double_auction), and the board (reports/leaderboards/double_auction.csv:
    multipass TrueSkill on the seed's scale, ranked by CSα). A bad file stops the import in one
    line naming the file and line, and leaves an earlier import in --out as it was. Browse it with
    marketarena view --root <out>; for the results site, make the games an instance (README
    "Published games"). See markets/double_auction/sources/."""
    from marketarena.markets.double_auction.sources.analysis import import_summary
    from marketarena.markets.double_auction.sources.reader import games_setting
    from marketarena.pipeline import import_folder

    with one_line_errors(debug):
        block = {
            **games_setting(Path(logs)),
            "rating_passes": passes,
            "reference": {"games_per_distribution": reference_games},
        }
        import_folder(
            "double_auction",
            "bazaar",
            Path(logs),
            Path(out),
            block=block,
            board=True,
            params={"execution": {"workers": workers or "auto"}},
        )
        s = import_summary(out)
        if rating:
            import pandas as pd

            from marketarena.metrics.published_rating import read_rating, with_rating

            board = pd.read_csv(s["board"])
            _, fit = with_rating(board, read_rating(Path(rating)))
    llm = s.get("spearman_llm") or {"n": 0}  # none: not BAZAAR's own games (seed_comparison)
    chat = f", {s['messages']} chat messages" if s["messages"] else ""
    typer.echo(f"{s['games']} games, {s['seats']} seats ({s['llm_seats']} LLM){chat} -> {out}")
    shown = {
        k: "none" if s[k] is None else f"{s[k]:.2g}"
        for k in ("max_abs_diff_efficiency", "max_abs_diff_surplus_share")
    }
    typer.echo(
        f"largest |ours - logged|: efficiency {shown['max_abs_diff_efficiency']}, "
        f"surplus share {shown['max_abs_diff_surplus_share']}"
    )
    used = ", ".join(f"{src} in {n} games" for src, n in sorted(s["csa_source"].items()))
    ref = s["own_csa_reference"]
    typer.echo(
        f"CSα: {used}"
        + (
            f" (ours: a truthful trader against {ref['opponents']}, "
            f"{ref['n_buyers']}x{ref['n_sellers']} seats, {ref['rounds']} "
            "rounds)"
            if ref
            else ""
        )
    )
    if llm["n"] >= 3:
        typer.echo(
            f"board ({s['board']}): Spearman of the LLMs' μ with the seed's table "
            f"{llm['rho']:.3f} [{llm['lo']:.3f}, {llm['hi']:.3f}] over {llm['n']}"
        )
    elif not s["seed_comparison"]["applies"]:
        typer.echo(
            f"board: {s['board']} (not compared with the seed's table: "
            f"{s['seed_comparison']['why']})"
        )
    else:
        typer.echo(f"board: {s['board']}")
    if rating:
        missing = (
            f"; rated but not on the board: {len(fit['unmatched'])}" if fit["unmatched"] else ""
        )
        typer.echo(
            f"beside {Path(rating).name}: Spearman of the LLMs' μ with its rating "
            f"{fit['rho']:.3f} [{fit['lo']:.3f}, {fit['hi']:.3f}] over {fit['n']} models{missing}"
        )


def import_agent_bazaar(
    logs: str = typer.Argument(
        ...,
        help="Agent Bazaar's logs-data folder (github.com/sethkarten/AI-Bazaar, branch Market-v1)",
    ),
    out: str = typer.Option(
        "data/agent_bazaar",
        "--out",
        help="folder to write: <out>/crash, "
        "<out>/lemon, each replaced whole only when its import succeeds",
    ),
    market: str = typer.Option("both", "--market", help="crash, lemon or both"),
    debug: bool = DebugOpt,
) -> None:
    """Read Agent Bazaar's published runs into our log schema and check them against our rules:
    the crash runs (exp1) and the lemon runs (exp2), each run an episode of
    <out>/<market>/data/episodes/<market> (browse them: marketarena view --root <out>/<market>);
    the import report (which runs lack what, what was left out and why: import.json beside the
    episodes); our metrics; the replay of their engine through our rules
    (<out>/<market>/replay_rules.csv: the rule that explains each disagreement). A bad file stops the import in one line naming it and leaves an earlier import
    in --out as it was. To rate the runs, draw the paper's figures from them and browse them in
    the viewer, make them instances instead (README "Published games"). These are the authors'
    pre-release runs; they may differ from the paper's final ones."""
    from marketarena.pipeline import import_folder

    if market not in ("crash", "lemon", "both"):
        typer.echo(f"error: --market {market!r}: choose crash, lemon or both", err=True)
        raise typer.Exit(2)
    with one_line_errors(debug):
        for kind in ["crash", "lemon"] if market == "both" else [market]:
            dest = Path(out) / kind
            report, frames = import_folder(
                kind, "agent_bazaar", Path(logs), dest, csv=("replay_rules",)
            )
            typer.echo(
                f"{kind}: {report['runs_imported']} runs imported of {report['runs_found']} "
                f"found ({report['models']} model{'s' * (report['models'] != 1)}), "
                f"{report['runs_without_states']} without states, "
                f"{report['runs_lacking_something']} lacking something "
                f"({dest / 'data' / 'episodes' / kind / 'import.json'})"
            )
            for name, what in (("replay", "firm-days"), ("replay_steps", "steps")):
                if name in frames and len(frames[name]):
                    agree = frames[name]["agree"]
                    typer.echo(
                        f"replay: {int(agree.sum())} of {len(agree)} {what} agree "
                        f"({100 * agree.mean():.3f}%); the rules that explain the rest: "
                        f"{dest / 'replay_rules.csv'}"
                    )
