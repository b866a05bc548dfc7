"""What the episode viewer reads: ``data/episodes/<instance>/`` in either layout, read-only.

- :class:`InstanceIndex`: one row per finished episode of an instance (id, run index, seed,
  setting, lineup, unit), built from the folders' and shards' ``meta.json`` once and rebuilt only
  when the instance's folder list changes (a meta without a ``lineup``, as Agent Bazaar's lemon
  runs imported before their importer wrote one, takes it from its unit's ``agents`` table); filtered by player, setting and
  seed in memory; each player's outcome in each episode (``view.outcomes``) built on first use;
- :meth:`EpisodeStore.search`: the instance's full-text index (``view.search``);
- :func:`episode_view` / :func:`decision_view`: one episode, read by id through
  ``core.reader.read_episode`` (from a shard only that game's rows; ``llm_messages`` only for the
  decision asked for), shaped for the pages: its timeline (every table with a ``step`` column,
  and small plots of the numeric columns of those holding one row per step and seat), its
  decisions (marked re-asked where a decision took more than one answer), and a decision's every
  attempt, LLM call, prompt and raw answer, with the seat's previous and next decision; an
  episode opened for a player (``?player=``) knows its seats;
  :func:`episode_zip`: an episode's tables as CSV for download.

Opening a game never builds the index: :func:`core.reader.locate` finds its shard from the folder
names, so the first page of a 90,000-game set does not wait for 150 shard metas.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marketarena.core import logs
from marketarena.core.reader import locate, read_episode, read_rows
from marketarena.report.runinfo import call_costs, episode_run_info
from marketarena.view import outcomes as outcomes_mod
from marketarena.view.search import SearchIndex

RUNNER_TABLES = ("agents", "decisions", "llm_calls", "llm_messages")
DECISION_KEYS = ["step", "round", "phase", "agent_id"]
#: rows of one table sent to the page; longer tables are cut (the page says so)
MAX_ROWS = 20_000
#: small plots per table at most
MAX_PLOTS = 12


@dataclass(frozen=True)
class Entry:
    episode_id: str
    run: int | None
    seed: int | None
    lineup: tuple[str, ...]
    setting: tuple[tuple[str, str], ...]
    unit: str = ""  # the folder or shard holding it


def _setting_text(value: Any) -> str:
    return (
        json.dumps(value) if isinstance(value, (bool, list, dict)) or value is None else str(value)
    )


class InstanceIndex:
    """The finished episodes of one instance, from their metas (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        self.entries: list[Entry] = []
        self.market = ""
        self._outcomes: tuple[float | None, pd.DataFrame, dict] | None = None
        self._outcomes_lock = threading.Lock()
        for folder, meta in logs.finished_units(root):
            listed = meta.get("episodes", []) if meta.get("layout") == "shard" else [meta]
            seated = _seated(folder) if any("lineup" not in m for m in listed) else {}
            for m in listed:
                if "episode_id" not in m:
                    continue
                setting = m.get("setting") or {}
                lineup = m["lineup"] if "lineup" in m else seated.get(m["episode_id"], ())
                self.entries.append(
                    Entry(
                        m["episode_id"],
                        m.get("run_index"),
                        m.get("seed"),
                        tuple(lineup),
                        tuple((k, _setting_text(v)) for k, v in setting.items()) if setting else (),
                        folder.name,
                    )
                )
            if listed and not self.market:
                self.market = str(listed[0].get("market", ""))
        self.players = sorted({p for e in self.entries for p in e.lineup})
        values: dict[str, set[str]] = {}
        for e in self.entries:
            for k, v in e.setting:
                values.setdefault(k, set()).add(v)
        self.settings = {k: sorted(v, key=_natural) for k, v in sorted(values.items())}

    def __len__(self) -> int:
        return len(self.entries)

    def outcomes(self) -> pd.DataFrame:
        """Every player's outcome in every episode (``view.outcomes``), built on first use and
        again when the metrics stage has rewritten its table since."""
        path = outcomes_mod.metrics_file(self.root)
        stamp = path.stat().st_mtime_ns if path is not None and path.is_file() else None
        with self._outcomes_lock:
            if self._outcomes is None or self._outcomes[0] != stamp:
                units: dict[str, list[str]] = {}
                for e in self.entries:
                    units.setdefault(e.unit, []).append(e.episode_id)
                self._outcomes = (stamp, outcomes_mod.build(self.root, self.market, units), {})
            return self._outcomes[1]

    def derived(self, name: str, make):
        """``make(outcomes)``, kept until the outcomes are built again (the lists' per-episode
        totals and per-player summaries: seconds at 90,000 games, so once, not per request)."""
        outcomes = self.outcomes()
        with self._outcomes_lock:
            cache = self._outcomes[2]
            if name not in cache:
                cache[name] = make(outcomes)
            return cache[name]

    def filter(
        self,
        player: str = "",
        setting: dict[str, str] | None = None,
        seed: str = "",
        text: str = "",
    ) -> list[Entry]:
        """Episodes with ``player`` in their lineup, every ``setting`` key at its value, ``seed``
        equal to the episode's seed or run index, and ``text`` in their id (empty: any)."""
        wanted = {(k, v) for k, v in (setting or {}).items() if v != ""}
        out = []
        for e in self.entries:
            if player and player not in e.lineup:
                continue
            if wanted and not wanted <= set(e.setting):
                continue
            if seed and seed not in (str(e.seed), str(e.run)):
                continue
            if text and text not in e.episode_id:
                continue
            out.append(e)
        return out


def _seated(unit: Path) -> dict[str, list[str]]:
    """{episode id: its seats' players} from a unit's ``agents`` table, for metas without a
    ``lineup`` (Agent Bazaar's lemon runs imported before their importer wrote one)."""
    seats = outcomes_mod.unit_table(unit / "agents.parquet", ["name"])
    return (
        {
            e: list(dict.fromkeys(str(n) for n in g["name"]))
            for e, g in seats.groupby("episode_id", sort=False)
        }
        if "name" in seats
        else {}
    )


def _natural(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


class EpisodeStore:
    """``data/episodes``: its instances and, per instance, a cached :class:`InstanceIndex`
    (built once, by whichever request or :meth:`warm` comes first; 90,000 games take a few
    seconds, most of it parsing the shards' meta.json)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._indexes: dict[str, tuple[tuple[str, ...], InstanceIndex]] = {}
        self._searches: dict[str, tuple[tuple[str, ...], SearchIndex]] = {}
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Build every instance's index, then its players' outcomes (the viewer calls this in a
        thread when it starts)."""
        for instance in self.instances():
            self.index(instance)
        for instance in self.instances():
            self.index(instance).outcomes()

    def instances(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")
        )

    def folder(self, instance: str) -> Path:
        if instance not in self.instances():
            raise KeyError(instance)
        return self.root / instance

    def index(self, instance: str) -> InstanceIndex:
        """The instance's index, rebuilt when its list of folders and shards changed."""
        folder = self.folder(instance)
        with self._lock:
            signature = tuple(sorted(os.listdir(folder)))
            cached = self._indexes.get(instance)
            if cached is None or cached[0] != signature:
                cached = (signature, InstanceIndex(folder))
                self._indexes[instance] = cached
            return cached[1]

    def search(self, instance: str) -> SearchIndex:
        """The instance's full-text index (``view.search``; not built until started), made
        afresh when its units changed."""
        index = self.index(instance)
        units = tuple(sorted({e.unit for e in index.entries}))
        with self._lock:
            cached = self._searches.get(instance)
            if cached is None or cached[0] != units:
                if cached is not None:
                    cached[1].close()
                cached = (units, SearchIndex(self.folder(instance), list(units)))
                self._searches[instance] = cached
            return cached[1]

    def close(self) -> None:
        """Remove the search indexes' temporary files."""
        with self._lock:
            for _, index in self._searches.values():
                index.close()
            self._searches.clear()


# ---------------------------------------------------------------------------------------- pages


def _column(values: pd.Series) -> list[Any]:
    """A column as JSON-safe Python values: NaN / inf as None, numpy scalars as Python's."""
    out = values.tolist()
    if pd.api.types.is_float_dtype(values):
        return [v if math.isfinite(v) else None for v in out]
    if values.dtype == object:
        return [
            None
            if isinstance(v, float) and not math.isfinite(v)
            else v
            if v is None or isinstance(v, (str, int, float, bool))
            else str(v)
            for v in out
        ]
    return out


def records(df: pd.DataFrame, limit: int = MAX_ROWS) -> dict[str, Any]:
    """A frame as the page's tables take it: ``columns``, ``data`` (rows, JSON-safe: NaN as
    null), ``total`` rows and whether it was ``cut`` at ``limit``."""
    shown = df.head(limit)
    columns = [_column(shown[c]) for c in shown.columns]
    return {
        "columns": [str(c) for c in df.columns],
        "data": [list(r) for r in zip(*columns)],
        "total": len(df),
        "cut": len(df) > limit,
    }


def plots_of(
    df: pd.DataFrame, labels: dict[str, str] | None = None, missing: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """Small plots of a table holding one row per step (and seat): each numeric column against
    ``step``, one line per ``agent_id`` (named by ``labels``); none for tables with several rows
    per step and seat. ``missing`` maps a column to the value that stands for "none" in it (the
    market's ``viewer.missing``, e.g. in ``double_auction/figures.yaml``: the price -1 of a seat
    that did not trade), drawn as a gap, not as a value."""
    if "step" not in df.columns or df.empty:
        return []
    keys = ["step", "agent_id"] if "agent_id" in df.columns else ["step"]
    if df.duplicated(keys).any():
        return []
    skip = {"step", "round", "agent_id", "episode_id"}
    numeric = [
        c
        for c in df.columns
        if c not in skip
        and pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
        and df[c].nunique(dropna=True) > 1
    ]
    df = df.sort_values(keys[::-1], kind="stable")
    seats = df["agent_id"].astype(str).to_numpy() if "agent_id" in df.columns else None
    groups = (
        [("", slice(None))]
        if seats is None
        else [(a, seats == a) for a in sorted(set(seats.tolist()))]
    )
    steps = df["step"].astype(int).to_numpy()
    out = []
    for column in numeric[:MAX_PLOTS]:
        values = df[column].astype(float).to_numpy()
        if column in (missing or {}):
            values = np.where(values == missing[column], np.nan, values)
        lines = [
            {
                "name": (labels or {}).get(a, a),
                "x": steps[rows].tolist(),
                "y": _column(pd.Series(values[rows])),
            }
            for a, rows in groups
        ]
        out.append({"title": column, "lines": lines})
    return out


@dataclass
class EpisodeView:
    instance: str
    episode_id: str
    meta: dict[str, Any]
    run: dict[str, Any] | None
    agents: dict[str, Any]
    decisions: dict[str, Any]
    timeline: list[dict[str, Any]]  # {name, table, plots}: states first, then by name
    other: list[dict[str, Any]]  # tables without a step column: {name, table}
    empty: list[str]  # tables without rows
    steps: list[int]
    llm_decisions: int
    llm_calls: int
    reasked: int  # decision points with more than one answer
    invalid: int  # decision points whose last answer was invalid (the fallback applied)
    #: its players: the meta's lineup, or (an import whose meta has none) its seats' names
    players: list[str] = field(default_factory=list)
    #: the player the page is opened for and its seats ({player, seats}), None for none
    focus: dict[str, Any] | None = None


def _llm_keys(calls: pd.DataFrame) -> set[tuple]:
    if calls.empty:
        return set()
    return set(map(tuple, calls[DECISION_KEYS].astype(object).itertuples(index=False)))


def marked_decisions(decisions: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """The decisions table as the episode page shows it: ``llm`` (an LLM seat's decision),
    ``answers`` (the answers behind each attempt: 1, and one more for each re-ask of its LLM calls'
    client, whatever the number of calls a harness makes), ``reasked`` (the decision point took more than one answer in all) and ``final``
    (the point's last attempt: its ``valid`` is what counted), then the table's own columns."""
    decisions = decisions.copy()
    keys = decisions[DECISION_KEYS].astype(object).itertuples(index=False)
    llm = _llm_keys(calls)
    answers = pd.Series(1, index=decisions.index)
    if not calls.empty and "attempts" in calls:  # a call's answers past its first are re-asks
        extra = (
            (calls["attempts"] - 1).groupby([calls[k] for k in DECISION_KEYS + ["attempt"]]).sum()
        )
        index = pd.MultiIndex.from_frame(decisions[DECISION_KEYS + ["attempt"]])
        answers = pd.Series(
            1 + extra.reindex(index).fillna(0).astype(int).to_numpy(), index=decisions.index
        )
    point = decisions.groupby(DECISION_KEYS, sort=False)
    total = answers.groupby([decisions[k] for k in DECISION_KEYS], sort=False).transform("sum")
    decisions.insert(
        0, "final", (decisions["attempt"] == point["attempt"].transform("max")).to_numpy()
    )
    decisions.insert(0, "reasked", (total > 1).to_numpy())
    decisions.insert(0, "answers", answers.to_numpy())
    decisions.insert(0, "llm", [tuple(k) in llm for k in keys])
    return decisions


def missing_values(market: str) -> dict[str, dict[str, float]]:
    """The market's "no value" markers per table and column (``viewer`` in its figures.yaml)."""
    from marketarena.report import captions

    try:
        return captions.load(market).viewer.missing
    except (ValueError, ModuleNotFoundError):
        return {}


def episode_view(root: Path, instance: str, episode_id: str, player: str = "") -> EpisodeView:
    """One episode for its page (``KeyError`` when no finished folder or shard holds it), its
    seats of ``player`` in ``focus`` (none when it did not play it)."""
    meta, tables = read_episode(root, episode_id, skip=("llm_messages",))
    unit = locate(root, episode_id)
    calls = tables.get("llm_calls", pd.DataFrame(columns=DECISION_KEYS))
    decisions = marked_decisions(
        tables.get("decisions", pd.DataFrame(columns=DECISION_KEYS + ["attempt", "valid"])), calls
    )
    finals = decisions[decisions["final"]] if len(decisions) else decisions
    agents = tables.get("agents", pd.DataFrame())
    labels = {
        str(a): f"{a} {n}" for a, n in zip(agents.get("agent_id", []), agents.get("name", []))
    }
    missing = missing_values(str(meta.get("market", "")))
    timeline, other, empty, steps = [], [], [], set()
    for name, df in sorted(tables.items(), key=lambda kv: (kv[0] != "states", kv[0])):
        if name in RUNNER_TABLES:
            continue
        if df.empty:
            empty.append(name)
        elif "step" in df.columns:
            steps.update(int(s) for s in df["step"].dropna().unique())
            timeline.append(
                {
                    "name": name,
                    "table": records(df),
                    "plots": plots_of(df, labels, missing.get(name)),
                }
            )
        else:
            other.append({"name": name, "table": records(df)})
    shown_meta = {k: v for k, v in meta.items() if k != "files"}
    run = episode_run_info(root, unit.name, episode_id) if unit is not None else None
    names = [str(n) for n in agents.get("name", [])]
    seats = [str(a) for a, n in zip(agents.get("agent_id", []), names) if player and n == player]
    return EpisodeView(
        instance,
        episode_id,
        shown_meta,
        run,
        records(agents),
        records(decisions),
        timeline,
        other,
        empty,
        sorted(steps),
        len(_llm_keys(calls)),
        len(calls),
        int(finals["reasked"].sum()),
        int((~finals["valid"].astype(bool)).sum()),
        list(dict.fromkeys(meta.get("lineup") or names)),
        {"player": player, "seats": seats} if seats else None,
    )


def episode_zip(root: Path, episode_id: str) -> bytes:
    """One episode as a zip: ``meta.json`` and every table as CSV (the LLM calls' cost, latency
    and cache hits beside them as llm_costs.csv when the run log has them). ``KeyError``
    when no finished folder or shard holds it."""
    import io
    import zipfile

    meta, tables = read_episode(root, episode_id)
    unit = locate(root, episode_id)
    calls = tables.get("llm_calls")
    if unit is not None and calls is not None and len(calls):
        costs = call_costs(root, unit.name, episode_id, len(calls))
        if costs.notna().any().any():
            tables["llm_costs"] = pd.concat(
                [calls[DECISION_KEYS + ["attempt"]].reset_index(drop=True), costs], axis=1
            )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        folder = episode_id
        z.writestr(f"{folder}/meta.json", json.dumps(meta, indent=1, sort_keys=True, default=str))
        for name, df in sorted(tables.items()):
            z.writestr(f"{folder}/{name}.csv", df.to_csv(index=False, lineterminator="\n"))
    return out.getvalue()


@dataclass
class CallView:
    n: int
    purpose: str
    row: dict[str, Any]  # llm_calls (+ llm_costs) fields
    exchanges: list[dict[str, Any]]  # {reask, messages: [{role, content}], answer, error}


@dataclass
class AttemptView:
    attempt: int
    action: str
    valid: bool
    error: str
    notes: str
    calls: list[CallView] = field(default_factory=list)


@dataclass
class DecisionView:
    instance: str
    episode_id: str
    key: dict[str, Any]
    attempts: list[AttemptView]
    seat: dict[str, Any]
    #: the seat's previous and next decision points in the episode (None at either end)
    previous: dict[str, Any] | None = None
    next: dict[str, Any] | None = None
    position: tuple[int, int] = (0, 0)  # (this point's number, the seat's points), from 1


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def decision_view(
    root: Path, instance: str, episode_id: str, step: int, round_: int, phase: str, agent_id: str
) -> DecisionView:
    """Every attempt of one seat at one decision point, each with its LLM calls (what was sent,
    the raw answers, re-asks and their reasons, tokens, cost, latency, cache hit). ``KeyError``
    when the episode or the decision does not exist."""
    unit = locate(root, episode_id)
    if unit is None:
        raise KeyError(episode_id)
    _, tables = read_episode(root, episode_id, names=("agents", "decisions", "llm_calls"))
    key = {"step": step, "round": round_, "phase": phase, "agent_id": agent_id}

    def of(df: pd.DataFrame) -> pd.DataFrame:
        if df.empty:
            return df
        mask = np.ones(len(df), dtype=bool)
        for k, v in key.items():
            mask &= (df[k] == v).to_numpy()
        return df[mask]

    every = tables.get("decisions", pd.DataFrame(columns=DECISION_KEYS))
    decisions = of(every)
    if decisions.empty:
        raise KeyError(f"{episode_id}: no decision {key}")
    points = [
        dict(zip(DECISION_KEYS, (_plain(v) for v in k)))
        for k in every.loc[every["agent_id"] == agent_id, DECISION_KEYS]
        .drop_duplicates()
        .itertuples(index=False)
    ]
    here = points.index(key)
    calls = tables.get("llm_calls", pd.DataFrame(columns=DECISION_KEYS + ["attempt"]))
    calls = pd.concat(
        [calls.reset_index(drop=True), call_costs(root, unit.name, episode_id, len(calls))], axis=1
    )
    calls = of(calls)
    messages_file = unit / "llm_messages.parquet"
    said = pd.DataFrame()
    if not calls.empty and messages_file.is_file():
        said = of(
            read_rows(messages_file, episode_id, [("step", "=", step), ("agent_id", "=", agent_id)])
        )
    attempts = []
    for d in decisions.sort_values("attempt").to_dict(orient="records"):
        view = AttemptView(
            int(d["attempt"]),
            str(d["action"]),
            bool(d["valid"]),
            str(d.get("error") or ""),
            str(d.get("notes") or ""),
        )
        mine = calls[calls["attempt"] == d["attempt"]] if not calls.empty else calls
        for n, c in enumerate(mine.to_dict(orient="records")):
            rows = (
                said[(said["attempt"] == d["attempt"]) & (said["call"] == n)]
                if not said.empty
                else said
            )
            exchanges = [
                {
                    "reask": int(x["reask"]),
                    "messages": json.loads(x["messages"]),
                    "answer": x["answer"],
                    "error": x["error"],
                }
                for x in rows.sort_values("reask").to_dict(orient="records")
            ]
            shown = {k: _plain(v) for k, v in c.items() if k not in DECISION_KEYS + ["attempt"]}
            view.calls.append(CallView(n, str(c.get("purpose", "act")), shown, exchanges))
        attempts.append(view)
    agents = tables.get("agents", pd.DataFrame())
    seat = (
        agents[agents["agent_id"] == agent_id].to_dict(orient="records")
        if "agent_id" in agents
        else []
    )
    return DecisionView(
        instance,
        episode_id,
        key,
        attempts,
        {k: _plain(v) for k, v in seat[0].items()} if seat else {},
        points[here - 1] if here > 0 else None,
        points[here + 1] if here + 1 < len(points) else None,
        (here + 1, len(points)),
    )
