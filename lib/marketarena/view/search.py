"""Full-text search over what an instance's LLM calls said: every prompt, raw answer and error of
``llm_messages`` (only LLM decisions have them), with filters for the seat's model and player, for
answers that were not accepted (``invalid``) and for calls that were re-asked.

The index is SQLite's FTS5 (in Python's standard library; unicode61 tokens, so a query matches
words and numbers, not parts of them) in a temporary file of its own, never in the project: the
viewer is read-only. It is built per instance on the first search, in a thread, unit by unit (one
unit's ``llm_messages`` in memory at a time), and built again when the instance's list of units
changes; the page shows how far the build is meanwhile. Memory stays bounded whatever the number of
episodes: the text lives in the file, SQLite keeps a small page cache, and results come a page at
a time.

A query is matched as a phrase: its words in that order (``not valid JSON``), case-insensitive,
never as FTS5 syntax (quotes are doubled), so no input can break the query.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from marketarena.view.lists import page_number
from marketarena.view.outcomes import unit_table

PAGE_SIZE = 50
#: the markers FTS5's snippet() puts around a match (stripped from the logs' text first)
OPEN, CLOSE = "\x02", "\x03"
FIELDS = (
    "episode_id",
    "step",
    "round",
    "phase",
    "agent_id",
    "attempt",
    "call",
    "reask",
    "player",
    "model",
    "invalid",
    "reasked",
)


def _clean(text: Any) -> str:
    return "" if text is None else str(text).replace(OPEN, "").replace(CLOSE, "")


def _prompt(messages: str) -> str:
    """The messages of one answer (a JSON list of {role, content}) as text, one per paragraph."""
    try:
        parts = json.loads(messages)
    except (TypeError, ValueError):
        return _clean(messages)
    return "\n\n".join(
        f"{m.get('role', '')}: {_clean(m.get('content'))}" for m in parts if isinstance(m, dict)
    )


def phrase(query: str) -> str:
    """``query`` as one FTS5 phrase: its words in order, nothing of it read as syntax."""
    return '"' + query.replace('"', '""') + '"'


@dataclass
class Hit:
    key: dict[str, Any]  # FIELDS
    snippet: str  # the matching text, OPEN / CLOSE around each match


class Found(NamedTuple):
    """One page of a search: how many answers match, the page's hits, its number (from 0)."""

    total: int
    hits: list[Hit]
    page: int


@dataclass
class SearchIndex:
    """One instance's index; :meth:`status` says whether it is ready (see the module)."""

    root: Path  # data/episodes/<instance>
    units: list[str]
    folder: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="marketarena-search-"))
    )
    done: int = 0
    rows: int = 0
    seconds: float = 0.0
    error: str = ""
    ready: bool = False
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def path(self) -> Path:
        return self.folder / "index.sqlite"

    def start(self) -> None:
        """Build in a thread unless started already."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._build, daemon=True)
                self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        self.start()
        assert self._thread is not None
        self._thread.join(timeout)
        return self.ready

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _build(self) -> None:
        start = time.perf_counter()
        try:
            db = sqlite3.connect(self.path)
            db.execute(
                "CREATE TABLE calls (id INTEGER PRIMARY KEY, episode_id TEXT, step INT, "
                "round INT, phase TEXT, agent_id TEXT, attempt INT, call INT, reask INT, "
                "player TEXT, model TEXT, invalid INT, reasked INT)"
            )
            db.execute(
                "CREATE VIRTUAL TABLE text USING fts5(prompt, answer, error, tokenize='unicode61')"
            )
            for unit in self.units:
                self._add_unit(db, self.root / unit)
                db.commit()
                self.done += 1
            for column in ("player", "model"):
                db.execute(f"CREATE INDEX calls_{column} ON calls ({column})")
            db.commit()
            db.close()
            self.ready = True
        except (OSError, sqlite3.Error) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.seconds = time.perf_counter() - start

    def _add_unit(self, db: sqlite3.Connection, folder: Path) -> None:
        path = folder / "llm_messages.parquet"
        if not path.is_file():
            return
        messages = unit_table(
            path,
            [
                "step",
                "round",
                "phase",
                "agent_id",
                "attempt",
                "call",
                "reask",
                "messages",
                "answer",
                "error",
            ],
        )
        if messages.empty:
            return
        seats = unit_table(folder / "agents.parquet", ["agent_id", "name", "model"])
        who = (
            {
                (e, a): (n, m)
                for e, a, n, m in seats[["episode_id", "agent_id", "name", "model"]].itertuples(
                    index=False
                )
            }
            if len(seats)
            else {}
        )
        keys = ["episode_id", "step", "round", "phase", "agent_id", "attempt", "call"]
        reasked = messages.groupby(keys)["reask"].transform("max") > 0
        calls, texts = [], []
        for row, again in zip(messages.itertuples(index=False), reasked.tolist()):
            self.rows += 1  # the row's id in both tables
            player, model = who.get((row.episode_id, row.agent_id), ("", ""))
            calls.append(
                (
                    self.rows,
                    row.episode_id,
                    int(row.step),
                    int(row.round),
                    str(row.phase),
                    str(row.agent_id),
                    int(row.attempt),
                    int(row.call),
                    int(row.reask),
                    _clean(player),
                    _clean(model),
                    int(bool(row.error)),
                    int(again),
                )
            )
            texts.append((self.rows, _prompt(row.messages), _clean(row.answer), _clean(row.error)))
        db.executemany(
            "INSERT INTO calls (id, episode_id, step, round, phase, agent_id, attempt, "
            "call, reask, player, model, invalid, reasked) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            calls,
        )
        db.executemany("INSERT INTO text (rowid, prompt, answer, error) VALUES (?,?,?,?)", texts)

    def choices(self) -> dict[str, list[str]]:
        """The players and models that have LLM calls (for the filters)."""
        if not self.ready:
            return {"player": [], "model": []}
        with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
            return {
                c: [r[0] for r in db.execute(f"SELECT DISTINCT {c} FROM calls ORDER BY {c}")]
                for c in ("player", "model")
            }

    def query(
        self,
        text: str = "",
        player: str = "",
        model: str = "",
        invalid: bool = False,
        reasked: bool = False,
        episode: str = "",
        page: int = 0,
    ) -> Found:
        """How many answers match, the ``page``-th page of them in log order (the last page
        when ``page`` is past it), and that page's number."""
        where, args = [], []
        for column, value in (("player", player), ("model", model), ("episode_id", episode)):
            if value:
                where.append(f"calls.{column} = ?")
                args.append(value)
        if invalid:
            where.append("calls.invalid = 1")
        if reasked:
            where.append("calls.reasked = 1")
        if text.strip():
            where.append("text MATCH ?")
            args.append(phrase(text.strip()))
            shown = f"snippet(text, -1, '{OPEN}', '{CLOSE}', '…', 24)"
        else:
            shown = "substr(text.answer, 1, 200)"
        sql = " FROM calls JOIN text ON text.rowid = calls.id" + (
            " WHERE " + " AND ".join(where) if where else ""
        )
        with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
            try:
                total = db.execute("SELECT count(*)" + sql, args).fetchone()[0]
                page = page_number(page, -(-total // PAGE_SIZE))
                rows = db.execute(
                    "SELECT "
                    + ", ".join(f"calls.{f}" for f in FIELDS)
                    + f", {shown}"
                    + sql
                    + " ORDER BY calls.id LIMIT ? OFFSET ?",
                    [*args, PAGE_SIZE, page * PAGE_SIZE],
                ).fetchall()
            except sqlite3.OperationalError:  # a query of no word at all (only punctuation)
                return Found(0, [], 0)
        return Found(total, [Hit(dict(zip(FIELDS, r[:-1])), r[-1] or "") for r in rows], page)
