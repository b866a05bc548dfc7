"""Shared by the stage wrappers: a typer app around one ``marketarena.pipeline`` function.

Each stage file names its pipeline function; this builds the command line (``--params``, ``--root``
and, for per-instance stages, the market instance name), loads and validates params.yaml (exit code
2 with the message naming the bad key), and calls the function. A run that stops cleanly
(``RunAborted``: an endpoint down, the budget spent, an input file missing or corrupt) exits 1 with
its message; finished episodes are on disk and the next run resumes.
"""

from __future__ import annotations

import sys
from typing import Callable

import typer

from marketarena.config import Params, ParamsError, load_params
from marketarena.core.types import RunAborted
from marketarena.pipeline import Paths


def load(path: str) -> Params:
    try:
        return load_params(path)
    except ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def stage_app(fn: Callable, per_market: bool = False) -> typer.Typer:
    app = typer.Typer(add_completion=False, help=fn.__doc__)

    if per_market:
        @app.command()
        def run_market(
            market: str = typer.Argument(..., help="market instance, a key of params.markets"),
            params_file: str = typer.Option("params.yaml", "--params"),
            root: str = typer.Option(".", "--root", help="project root holding data/ and reports/"),
        ) -> None:
            params = load(params_file)
            if market not in params.markets:
                print(f"error: {market!r} is not in params.markets ({', '.join(params.markets)})",
                      file=sys.stderr)
                raise SystemExit(2)
            try:
                fn(market, params, Paths(root))
            except RunAborted as exc:  # finished episodes are on disk; the next run resumes
                print(f"error: {market}: run stopped: {exc}", file=sys.stderr)
                raise SystemExit(1) from None
    else:
        @app.command()
        def run(
            params_file: str = typer.Option("params.yaml", "--params"),
            root: str = typer.Option(".", "--root", help="project root holding data/ and reports/"),
        ) -> None:
            try:
                fn(load(params_file), Paths(root))
            except RunAborted as exc:
                print(f"error: run stopped: {exc}", file=sys.stderr)
                raise SystemExit(1) from None

    return app
