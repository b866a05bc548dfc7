"""A study's own published rating beside its board (issue 54): read only where the user gives it
(``source.rating`` of an imported instance, ``marketarena import-bazaar --rating``), models matched
by identity (``identity.py``). A study is never set beside another study's table: this is the
only comparison with an outside rating a board of published games gets, and only on request."""

from __future__ import annotations

import pandas as pd

from marketarena.identity import identify


def read_rating(path) -> pd.DataFrame:
    """A study's published rating (``source.rating``): a CSV with columns ``model`` and
    ``rating`` (a number; higher is better), read as every foreign file is
    (``core.sources.read_bytes``); a bad file is one :class:`~marketarena.core.sources.SourceError`
    naming it and its line."""
    import csv
    import io
    import math

    from marketarena.core.sources import SourceError, read_bytes

    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError(path, "is not UTF-8 text") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or not {"model", "rating"} <= set(rows[0]):
        raise SourceError(path, "needs a header with the columns model and rating")
    out = []
    for line, row in enumerate(rows, start=2):
        model, value = (row.get("model") or "").strip(), row.get("rating")
        try:
            rating = float(value)
        except (TypeError, ValueError):
            raise SourceError(path, f"rating {str(value)[:40]!r} is not a number", line) from None
        if not model or not math.isfinite(rating):
            raise SourceError(path, "each row needs a model and a finite rating", line)
        out.append((model, rating))
    return pd.DataFrame(out, columns=["model", "rating"])


def with_rating(
    board: pd.DataFrame, rating: pd.DataFrame, table=None, n_boot: int = 2000, seed: int = 0
) -> tuple[pd.DataFrame, dict]:
    """A board's LLMs beside a study's published rating (:func:`read_rating`), matched by model
    identity (``identity.identify``: ``openai/gpt-5.4`` on one side is ``gpt-5.4`` on the other):
    per matched model its name, our μ and rank among the matched, their rating and rank; and the
    Spearman of the two with its 95% bootstrap interval over models (``rho``, ``lo``, ``hi``,
    ``n``), and the rated models the board lacks (``unmatched``)."""
    from marketarena.stats import cluster_bootstrap_spearman

    llms = board[board["kind"] == "llm"] if "kind" in board.columns else board
    ours = {
        identify(str(n), table).key: (str(n), float(mu)) for n, mu in zip(llms["name"], llms["mu"])
    }
    theirs = {identify(m, table).key: (m, r) for m, r in zip(rating["model"], rating["rating"])}
    common = sorted(set(ours) & set(theirs))
    side = pd.DataFrame(
        [(ours[k][0], theirs[k][0], ours[k][1], theirs[k][1]) for k in common],
        columns=["name", "rated_as", "mu", "rating"],
    )
    side["rank"] = side["mu"].rank(ascending=False, method="min").astype("int64")
    side["rating_rank"] = side["rating"].rank(ascending=False, method="min").astype("int64")
    side = side.sort_values(["rating_rank", "name"]).reset_index(drop=True)
    r = cluster_bootstrap_spearman(side, "mu", "rating", None, n_boot, seed, n_perm=0)
    unmatched = sorted(theirs[k][0] for k in set(theirs) - set(ours))
    return side, {
        "rho": r["rho"],
        "lo": r["lo"],
        "hi": r["hi"],
        "n": r["n"],
        "unmatched": unmatched,
    }
