"""Shared by the stage wrappers: a typer app around one ``marketarena.pipeline`` function.

Each stage file names its pipeline function; this builds the command line (``--params``, ``--root``
(default: the params file's folder) and, for per-instance stages, the market instance name), loads
and validates params.yaml (exit code 2 with the message naming the bad key), and calls the function.
Whatever stops a stage (``RunAborted``: an endpoint down, the budget spent, an input file missing or
corrupt; a full disk, a read-only folder, a killed worker, ...) ends in one ``error:`` line naming
the cause and what to do, exit code non-zero (``marketarena.faults``; ``MARKETARENA_DEBUG=1`` adds
the traceback); the line says what is kept where it applies (``simulate``: finished episodes are
on disk and the next run resumes; ``report``: the earlier site is left as it was).

``MARKETARENA_RECORD_IMPORTS=<file>`` makes a stage append, when it ends, the source files of every
``marketarena`` module it loaded (one JSON line: the stage's arguments and the files); the end-to-end
test uses it to check that dvc.yaml lists every module each stage imports.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Callable

import typer

from marketarena.config import Params, load_params
from marketarena.faults import one_line_errors
from marketarena.pipeline import Paths


def _record_imports() -> None:
    target = os.environ.get("MARKETARENA_RECORD_IMPORTS")
    if not target:
        return
    files = sorted(
        {
            str(getattr(m, "__file__", None))
            for name, m in list(sys.modules.items())
            if name == "marketarena" or name.startswith("marketarena.")
        }
        - {"None"}
    )
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "files": files}) + "\n")


atexit.register(_record_imports)


def load(path: str, instances: list[str] | None = None) -> Params:
    """The params file, each instance validated by its market's params model alone (the checks
    that need a market's rules are the simulate stage's, before any episode:
    ``config.check_market``)."""
    with one_line_errors():  # a params error: exit code 2, every key on the one line
        return load_params(path, instances, deep=False)


def stage_app(
    fn: Callable, per_market: bool = False, markets: bool = True, kept: str | None = None
) -> typer.Typer:
    """``per_market``: the stage takes a market instance and validates only that instance;
    ``markets=False``: a global stage that reads no market (validates none of them); ``kept``:
    what a stop midway leaves safe, added to the error line where it applies
    (``faults.one_line_errors``; ``faults.KEPT`` for simulate)."""
    app = typer.Typer(add_completion=False, help=fn.__doc__)

    if per_market:

        @app.command()
        def run_market(
            market: str = typer.Argument(..., help="market instance, a key of params.markets"),
            params_file: str = typer.Option("params.yaml", "--params"),
            root: str | None = typer.Option(
                None,
                "--root",
                help="project root holding data/ and reports/ (default: the params file's folder)",
            ),
        ) -> None:
            params = load(params_file, [market])
            with one_line_errors(prefix=f"{market}: ", kept=kept):
                fn(market, params, Paths.of(params_file, root))
    else:

        @app.command()
        def run(
            params_file: str = typer.Option("params.yaml", "--params"),
            root: str | None = typer.Option(
                None,
                "--root",
                help="project root holding data/ and reports/ (default: the params file's folder)",
            ),
        ) -> None:
            params = load(params_file, None if markets else [])
            with one_line_errors(kept=kept):
                fn(params, Paths.of(params_file, root))

    return app
