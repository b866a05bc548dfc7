"""One reader for a market instance's episode logs, whatever their layout on disk.

Every metrics function reads episodes through :class:`EpisodeReader`, never by walking folders
itself. It serves both layouts of ``core.logs``, a folder per episode and shards of many episodes
(Parquet tables with an ``episode_id`` column), and reads only finished units (``meta.json``
status complete):

- ``reader.table("states")``: one table over every episode, ``episode_id`` as its first column;
  folders in id order, shards in name order with their episodes in plan order (the shards' files
  read as one pyarrow dataset, so metrics over 90,000 games read 150 files in one threaded pass).
  An episode without the table contributes nothing;
- ``reader.episodes("states", "trades")``: ``(episode_id, {name: frame})`` one episode at a time
  (frames without the ``episode_id`` column, as an episode folder holds them), for metrics defined
  per episode; a shard is read once and split;
- ``reader.meta(episode_id)``: the episode's meta (its ``meta.json``, or its entry in the shard's).

Both layouts give the same rows for the same episodes (tested), so metrics need not know which
one a market uses.

One episode by id, without reading the set (the episode viewer): :func:`locate` finds its folder,
or the shard whose name (``<first id>..<last id>``, one series) spans its number, from the folder
names alone; :func:`read_episode` reads its meta and tables, from a shard only its rows (a pyarrow
filter on ``episode_id``; one shard of 600 games, not 150 of them). An id that is not a plain name
(:data:`EPISODE_ID`: no path, no leading dot, not longer than a file name) is in no folder. A table
file that cannot be read (truncated, corrupt) raises :class:`UnreadableTable`, naming the file, the
episode and whether the file still has the size and hash its ``meta.json`` records (the check that
makes ``simulate`` replay a damaged unit, ``core.logs.intact``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from marketarena.core import logs


class EpisodeReader:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._folders: dict[str, Path] = {}  # episode id -> its folder (folder layout)
        self._shards: list[tuple[Path, list[dict[str, Any]]]] = []  # (shard, episode metas)
        self._shard_meta: dict[str, dict[str, Any]] = {}  # episode id -> its meta (shard layout)
        self._only: set[str] | None = None  # a subset's episodes (``subset``); None: every one
        for folder, meta in logs.finished_units(self.root):
            if meta.get("layout") == "shard":
                self._shards.append((folder, meta.get("episodes", [])))
                self._shard_meta.update((e["episode_id"], e) for e in meta.get("episodes", []))
            elif meta.get("fingerprint") is not None:
                self._folders[folder.name] = folder

    def __len__(self) -> int:
        return len(self._folders) + len(self._shard_meta)

    def subset(self, episode_ids) -> "EpisodeReader":
        """A reader of the episodes ``episode_ids`` only (among this one's): units holding none
        of them are not read, a shard's other episodes are left out of its rows."""
        ids = set(episode_ids)
        sub = copy.copy(self)
        sub._folders = {k: v for k, v in self._folders.items() if k in ids}
        sub._shards = [
            (folder, [e for e in listed if e["episode_id"] in ids])
            for folder, listed in self._shards
        ]
        sub._shards = [(folder, listed) for folder, listed in sub._shards if listed]
        sub._shard_meta = {k: v for k, v in self._shard_meta.items() if k in ids}
        sub._only = ids if self._only is None else ids & self._only
        return sub

    def episode_ids(self) -> list[str]:
        return sorted([*self._folders, *self._shard_meta])

    def meta(self, episode_id: str) -> dict[str, Any]:
        if episode_id in self._shard_meta:
            return self._shard_meta[episode_id]
        meta = logs.read_meta(self._folders[episode_id])
        if meta is None:
            raise FileNotFoundError(f"{self._folders[episode_id]}: meta.json is unreadable")
        return meta

    @staticmethod
    def _read(
        path: Path, columns: list[str] | None, optional: tuple[str, ...] = ()
    ) -> pd.DataFrame | None:
        if not path.is_file():
            return None
        if columns is not None and optional:
            names = set(pq.read_schema(path).names)
            absent = [c for c in columns if c in optional and c not in names]
            if absent:  # a log written before the column: None there
                df = pd.read_parquet(path, columns=[c for c in columns if c not in absent])
                return df.assign(**dict.fromkeys(absent))[columns]
        return pd.read_parquet(path, columns=columns)

    def table(
        self, name: str, columns: list[str] | None = None, optional: tuple[str, ...] = ()
    ) -> pd.DataFrame:
        """``name`` over every episode (module docstring); ``columns``: only these, of which
        those in ``optional`` may be missing from a file (a column added to the log schema
        later, e.g. ``decisions.failure``): None in its rows."""
        frames = []
        for episode_id in sorted(self._folders):
            df = self._read(self._folders[episode_id] / f"{name}.parquet", columns, optional)
            if df is not None:
                df.insert(0, "episode_id", episode_id)
                frames.append(df)
        files = [
            str(f)
            for f in (folder / f"{name}.parquet" for folder, _ in self._shards)
            if f.is_file()
        ]
        if files:  # every shard's file as one pyarrow dataset, read in one (threaded) pass
            schema = pa.unify_schemas(
                [pq.read_schema(f) for f in files], promote_options="permissive"
            )  # an all-null column: null
            wanted = None if columns is None else ["episode_id", *columns]
            absent = [c for c in wanted or () if c in optional and c not in schema.names]
            where = None if self._only is None else ds.field("episode_id").isin(sorted(self._only))
            read = (
                ds.dataset(files, format="parquet", schema=schema)
                .to_table(
                    columns=[c for c in wanted if c not in absent] if wanted else None, filter=where
                )
                .to_pandas()
            )  # a shard without an optional column the others have: null there (the schema's)
            frames.append(read.assign(**dict.fromkeys(absent))[wanted] if absent else read)
        rows = [f for f in frames if len(f)]  # empty frames would turn typed columns to object
        if rows:
            return pd.concat(rows, ignore_index=True)
        return frames[0] if frames else pd.DataFrame()

    def episodes(self, *names: str) -> Iterator[tuple[str, dict[str, pd.DataFrame]]]:
        for episode_id in sorted(self._folders):
            tables = {}
            for name in names:
                df = self._read(self._folders[episode_id] / f"{name}.parquet", None)
                if df is None:
                    raise FileNotFoundError(f"{self._folders[episode_id]}: no {name}.parquet")
                tables[name] = df
            yield episode_id, tables
        for folder, listed in self._shards:
            split = {}
            for name in names:
                df = self._read(folder / f"{name}.parquet", None)
                if df is None:
                    raise FileNotFoundError(f"{folder}: no {name}.parquet")
                empty = df.iloc[:0].drop(columns="episode_id")
                groups = {
                    k: g.drop(columns="episode_id").reset_index(drop=True)
                    for k, g in df.groupby("episode_id", sort=False)
                }
                split[name] = (groups, empty)
            for entry in listed:
                episode_id = entry["episode_id"]
                yield (
                    episode_id,
                    {
                        name: groups.get(episode_id, empty)
                        for name, (groups, empty) in split.items()
                    },
                )

    def require(self) -> "EpisodeReader":
        """Self, or ``FileNotFoundError`` when there is no finished episode to read."""
        if not len(self):
            raise FileNotFoundError(f"{self.root}: no finished episodes; run the simulate stage")
        return self


#: what an episode id can be: a series' prefix and roster names (letters, digits, ``_ . + -``), not
#: starting with a dot, at most 255 characters (a file name's limit; ``locate`` opens it as one)
EPISODE_ID = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9_.+\-]{0,254}")


class OnceReader:
    """An episode reader that reads each table once and keeps it: a stage that reads the same
    tables of many episodes several times (an imported instance's metrics, replay and series).
    :meth:`only` is a view of some of its episodes (a joint instance's published ones)."""

    def __init__(self, reader: EpisodeReader, episodes: frozenset[str] | None = None):
        self.reader, self.read, self.episodes = reader, {}, episodes

    def only(self, episodes: frozenset[str]) -> "OnceReader":
        """The same tables, of ``episodes`` only (read once, shared with this reader)."""
        view = OnceReader(self.reader, frozenset(episodes))
        view.source = self
        return view

    def table(
        self, name: str, columns: list[str] | None = None, optional: tuple[str, ...] = ()
    ) -> pd.DataFrame:
        if self.episodes is not None:
            frame = self.source.table(name)
            if not frame.empty:
                frame = frame[frame["episode_id"].isin(self.episodes)].reset_index(drop=True)
        else:
            if name not in self.read:
                self.read[name] = self.reader.table(name)
            frame = self.read[name]
        if columns is None or frame.empty:
            return frame
        absent = [c for c in columns if c in optional and c not in frame.columns]
        return frame.assign(**dict.fromkeys(absent))[["episode_id", *columns]]

    def __getattr__(self, name: str):
        return getattr(self.reader, name)


class UnreadableTable(Exception):
    """A table file of a finished episode cannot be read (truncated, corrupt, unreadable)."""

    def __init__(self, path: Path, episode_id: str, cause: BaseException):
        files = (logs.read_meta(path.parent) or {}).get("files")
        record = files.get(path.name) if isinstance(files, dict) else None
        self.path, self.episode_id = path, episode_id
        self.damaged = record is not None and not logs.matches(path, record)
        why = str(cause).strip().splitlines()[0][:200] if str(cause).strip() else ""
        if self.damaged:
            after = (
                "it no longer has the size and hash its meta.json records (it changed after "
                "it was written); the next simulate run of this instance plays it again"
            )
        elif record is None:
            after = "its meta.json records no size and hash for it"
        else:
            after = (
                "it has the size and hash its meta.json records (it was written so): this "
                "is likely a bug, please report it"
            )
        super().__init__(
            f"{path} of episode {episode_id} cannot be read "
            f"({type(cause).__name__}{': ' + why if why else ''}); {after}"
        )


def _number(episode_id: str) -> int | None:
    digits = episode_id[len(logs.series(episode_id)) :]
    return int(digits) if digits else None


def locate(root: str | Path, episode_id: str) -> Path | None:
    """The finished folder or shard under ``root`` holding ``episode_id`` (None: none), found from
    folder names: an episode folder is named by its id, a shard ``<first>..<last>`` of one series."""
    root = Path(root)
    if not EPISODE_ID.fullmatch(episode_id):
        return None
    if (root / episode_id / logs.META).is_file():
        return root / episode_id
    number, series = _number(episode_id), logs.series(episode_id)
    if number is None or not root.is_dir():
        return None
    for child in root.iterdir():
        first, sep, last = child.name.partition("..")
        if not sep or child.name.startswith(logs.TMP_PREFIX) or logs.series(first) != series:
            continue
        lo, hi = _number(first), _number(last)
        if (
            lo is not None
            and hi is not None
            and lo <= number <= hi
            and (child / logs.META).is_file()
        ):
            return child
    return None


def read_episode(
    root: str | Path,
    episode_id: str,
    skip: tuple[str, ...] = (),
    names: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """(meta, {table: frame}) of one finished episode: the tables in ``names`` that it has (None:
    every table) but those in ``skip``, frames as an episode folder holds them (no
    ``episode_id`` column). ``KeyError`` when no finished folder or shard holds it."""
    unit = locate(root, episode_id)
    meta = logs.read_meta(unit) if unit is not None else None
    if meta is None or meta.get("status") != "complete":
        raise KeyError(episode_id)
    if meta.get("layout") == "shard":
        meta = next(
            (e for e in meta.get("episodes", []) if e.get("episode_id") == episode_id), None
        )
        if meta is None:
            raise KeyError(episode_id)
    files = sorted(
        p
        for p in unit.glob("*.parquet")
        if p.stem not in skip and (names is None or p.stem in names)
    )
    return meta, {p.stem: read_rows(p, episode_id) for p in files}


def read_rows(path: Path, episode_id: str, filters: list[tuple] | None = None) -> pd.DataFrame:
    """One episode's rows of a table file: the whole file of an episode folder, or a shard's
    rows of ``episode_id`` (``filters``: more pyarrow conditions, e.g. ``("step", "=", 3)``).
    :class:`UnreadableTable` when the file cannot be read."""
    try:
        names = pq.read_schema(path).names
        sharded = bool(names) and names[0] == "episode_id"
        conditions = [*([("episode_id", "=", episode_id)] if sharded else []), *(filters or [])]
        table = pq.read_table(path, filters=conditions or None)
        if sharded:
            table = table.drop(["episode_id"])
        return table.to_pandas()
    except (OSError, pa.ArrowException) as exc:
        raise UnreadableTable(path, episode_id, exc) from exc
