"""Episode logs on disk (DESIGN.md section 4): atomic per-episode folders or shards, and resume.

Two layouts, chosen per market instance by ``shard_episodes`` (``MarketParams``):

- a folder per episode (``null``, the default): ``<root>/<episode_id>/`` holding ``meta.json``,
  ``agents.parquet``, ``decisions.parquet``, ``llm_calls.parquet`` and the market's own tables
  (``states.parquet``, ``trades.parquet``, ...);
- shards (``n``): ``<root>/<first id>..<last id>/`` holds the same tables for up to ``n``
  consecutive planned episodes of one series (ids that differ only in their trailing number), each
  table with ``episode_id`` as its first column, and one ``meta.json`` listing every episode's
  meta. 90,000 games in shards of 600 make 150 folders of 11 files instead of 90,000 folders.
  Episodes with LLM seats go in shards of ``LLM_SHARD_EPISODES`` (1), never mixed with scripted
  ones: an LLM run plays many games side by side (``simulate``), and a worker takes a unit when it
  has room to start one episode. With shards of 10, the other nine waited for room in that
  worker, even while the other worker ran out of games, and a game started late plays its 30
  rounds alone at the end: 5 of 13 runs of an entrant's 100 games took 20.2-24.2 s instead of
  19.5 s. A game per unit starts when it is taken (5 of 5 runs 19.55-19.71 s), and an
  interruption loses only the games in flight (their answers are in the response cache). A
  hundred folders of 11 files for 100 LLM games cost nothing next to the games.

Both are written and resumed as *units* (:class:`Unit`): an episode folder, or a shard.

Atomicity: an episode is written into a hidden temporary folder beside its final place and renamed
when every file is on disk, so a killed run leaves either a whole episode or nothing (the
temporaries are swept away on the next start).

Resume: each episode carries a ``fingerprint`` (hash of the market params, the model specs behind
its LLM seats, the run index and seed, the code of the simulator and every input file it read) and,
in ``meta.json["files"]``, the size and sha256 of every table it wrote. A finished folder is kept
and skipped only if its fingerprint is the expected one *and* every recorded file is present with
its recorded size and hash; anything else in the folder (stale fingerprint, a truncated or missing
table, episodes no longer planned, temporaries) is removed before new episodes are played. A shard
is kept only if it holds exactly the planned (episode id, fingerprint) list of its unit, so one
stale episode, or an interrupted shard, replays that shard and no other.

Results and run information are kept apart. The episodes folder (a DVC output, hashed) holds
results only: every file in it is a pure function of the inputs, so two runs with the same seed
give byte-identical folders, and re-simulating identical episodes changes no hash. How a run went
(wall time, when it finished, LLM cost, latency, HTTP retries, cache hits: ``RUN_TABLES`` and the
run info) goes to the *run log*, a folder DVC does not track (``data/run_logs/<instance>/`` in the
pipeline), one sub-folder per unit, named like the unit:

- ``run.json``: ``{"unit", "layout" ("episode" | "shard"), "finished_at" (UTC, ISO 8601),
  "wall_time_s" (the unit's), "episodes": [{"episode_id", "fingerprint", "wall_time_s",
  "cost_usd", "llm": {model alias: {"calls", "cached_calls", "invalid_calls", "attempts",
  "retries", "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "cost_usd"}}}],
  "files": {name: {"bytes", "sha256"}}}``; ``cached_calls`` are calls answered from our response
  cache, ``cached_prompt_tokens`` the prompt tokens the provider served from its prompt cache
  (``llm/prompt_cache.py``);
- ``llm_costs.parquet``: ``episode_id``, then row for row beside the episode's ``llm_calls``:
  ``step, round, phase, agent_id, attempt, purpose, cost_usd, latency_s, cached, retries``.

``run_logs.py`` reads them back: :func:`~marketarena.core.run_logs.read_run_log` gives one row
per episode (its totals over models), :func:`~marketarena.core.run_logs.read_run_table` the
``llm_costs`` rows. A unit's run log is written just before the unit itself, so every
finished unit has one (a run killed in between leaves a run log whose unit replays and rewrites
it); ``simulate`` prunes the run logs of units that are no longer on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from marketarena.core.digest import NOT_CODE, canonical_json, hash_files, sha256_text  # noqa: F401
from marketarena.core.types import Rows, as_columns, as_frame

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

META = "meta.json"
RUN_META = "run.json"
TMP_PREFIX = ".tmp-"
#: blank files made ahead in a unit's temporary folder, named as they are written (:func:`make_room`)
BLANK_PREFIX = ".blank-"
#: tables that say how a run went, not what happened in the episode: written to the run log
RUN_TABLES = ("llm_costs",)


@dataclass(frozen=True)
class PlannedEpisode:
    episode_id: str
    run: int
    seed: int
    fingerprint: str
    llm: bool = False  # it seats an LLM agent (shards of at most LLM_SHARD_EPISODES)


@dataclass(frozen=True)
class Unit:
    """What is written, kept and replayed as one: an episode folder, or a shard of episodes."""

    name: str
    episodes: tuple[PlannedEpisode, ...]
    shard: bool

    def record(self) -> list[list[str]]:
        """(episode id, fingerprint) of every episode, as a shard's ``meta.json`` lists them."""
        return [[e.episode_id, e.fingerprint] for e in self.episodes]


def series(episode_id: str) -> str:
    """The series an episode id belongs to: the id without its trailing number (``ep-0012`` ->
    ``ep-``, ``x-gpt-4o-0003`` -> ``x-gpt-4o-``). A shard never mixes series, so adding a series
    (a new entrant's games) or episodes at the end of one leaves the other shards as they were."""
    return episode_id.rstrip("0123456789")


#: most episodes with LLM seats in one shard (see the module docstring)
LLM_SHARD_EPISODES = 1


def plan_units(planned: list[PlannedEpisode], shard_episodes: int | None) -> list[Unit]:
    """The planned episodes as units: one per episode (``None``), else consecutive episodes of one
    series and kind (with LLM seats or not), at most ``shard_episodes`` per shard
    (``LLM_SHARD_EPISODES`` with LLM seats), in plan order."""
    if shard_episodes is None:
        return [Unit(p.episode_id, (p,), False) for p in planned]
    out: list[Unit] = []
    chunk: list[PlannedEpisode] = []
    for p in [*planned, None]:
        size = min(shard_episodes, LLM_SHARD_EPISODES) if chunk and chunk[0].llm else shard_episodes
        if chunk and (
            p is None
            or len(chunk) == size
            or p.llm != chunk[0].llm
            or series(p.episode_id) != series(chunk[0].episode_id)
        ):
            out.append(Unit(f"{chunk[0].episode_id}..{chunk[-1].episode_id}", tuple(chunk), True))
            chunk = []
        if p is not None:
            chunk.append(p)
    return out


def write_table(table: pd.DataFrame | Rows, path: Path) -> dict[str, Any]:
    """``table`` as a zstd Parquet file at ``path``; returns its :func:`file_record`. The bytes are
    exactly ``df.to_parquet(path, index=False, engine="pyarrow", compression="zstd")``'s, ``df``
    the table or (``Rows``) the frame it makes (the same Arrow table and writer, tested), built in
    memory and hashed there: pandas' path handling and the file's read-back cost more than the
    write itself for an episode's small tables. Frames are converted in this thread
    (``nthreads=1``): pyarrow's default starts a thread pool for a frame of many rows, which cost
    more than it saved on every table measured (0.3-0.6 ms a table of 1,000-20,000 rows, even at
    two million rows no faster: the string columns hold the GIL)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    if isinstance(table, Rows):
        pq.write_table(_rows_table(table), sink, compression="zstd")
    elif table.attrs:  # pandas writes them into the schema's metadata: let it (ours have none)
        table.reset_index(drop=True).to_parquet(
            sink, index=False, engine="pyarrow", compression="zstd"
        )
    else:
        pq.write_table(_pandas_table(table.reset_index(drop=True)), sink, compression="zstd")
    data = sink.getvalue().to_pybytes()
    with open(path, "wb") as f:
        f.write(data)
    return _record(data)


#: the Arrow schema pandas gives a ``Rows`` table, by the table's shape (:func:`_rows_table`)
_ROWS_SCHEMAS: dict[tuple, Any] = {}


def _rows_table(rows: Rows) -> Any:
    """The Arrow table ``pa.Table.from_pandas(rows.frame())`` makes, without the frame.

    Building the DataFrame and converting it back column by column was most of an episode's
    write (an LLM crash episode: 29 ms, 16 of them in pandas), and a worker's event loop waits
    for it. What pandas makes of a column (its dtype, so the Arrow type and the schema's pandas
    metadata) depends only on the Arrow type of the column's values, on whether any is missing,
    and on the table's casts (``Rows.dtypes``): the first table of each such shape is converted
    by pandas and its schema kept; later ones have their columns built by Arrow from the values
    and cast to that schema (an int column with a missing value to float, strings to pandas'
    large strings). Values Arrow will not take as pandas would, or cannot cast without loss, go
    through pandas. Tested byte for byte against ``to_parquet`` of the frame."""
    import pyarrow as pa

    try:
        arrays = [pa.array(values, from_pandas=True) for values in as_columns(rows).values()]
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return _pandas_table(rows.frame())
    shape = (
        tuple(rows.columns),
        tuple((a.type, a.null_count > 0) for a in arrays),
        tuple(sorted(rows.dtypes.items())),
    )
    schema = _ROWS_SCHEMAS.get(shape)
    if schema is not None:
        try:
            return pa.Table.from_arrays(
                [a.cast(f.type) for a, f in zip(arrays, schema)], schema=schema
            )
        except (pa.ArrowException, TypeError, ValueError):
            pass
    table = _pandas_table(rows.frame())
    _ROWS_SCHEMAS.setdefault(shape, table.schema)
    return table


def _pandas_table(df: pd.DataFrame) -> Any:
    """pandas' own conversion of a frame to Arrow, in this thread (see :func:`write_table`)."""
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False, nthreads=1)


def file_record(path: Path) -> dict[str, Any]:
    """Size and sha256 of one written file, as ``meta.json["files"]`` records it."""
    return _record(path.read_bytes())


def _record(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def read_meta(folder: Path) -> dict[str, Any] | None:
    """``meta.json`` of a folder, or None when it is missing or not valid JSON."""
    try:
        data = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def intact(folder: Path, meta: dict[str, Any]) -> bool:
    """Every file ``meta`` records is present with its recorded size and hash (no other check:
    a folder written before files were recorded has an empty record and is not intact)."""
    files = meta.get("files")
    if not isinstance(files, dict) or not files:
        return False
    return all(matches(folder / name, record) for name, record in files.items())


def matches(path: Path, record: Any) -> bool:
    """``path`` is present with the size and sha256 of ``record`` (its entry in
    ``meta.json["files"]``)."""
    try:
        return path.stat().st_size == record.get("bytes") and file_record(path) == record
    except (OSError, AttributeError):
        return False


def finished(folder: Path, unit: Unit) -> bool:
    """``folder`` holds ``unit`` complete, intact and exactly as planned."""
    meta = read_meta(folder)
    if meta is None or meta.get("status") != "complete" or not intact(folder, meta):
        return False
    if unit.shard:
        listed = [[e.get("episode_id"), e.get("fingerprint")] for e in meta.get("episodes", [])]
        return meta.get("layout") == "shard" and listed == unit.record()
    return (
        meta.get("layout", "episode") == "episode"
        and meta.get("fingerprint") == unit.episodes[0].fingerprint
    )


def prepare_units(root: Path, units: list[Unit], keep: Iterable[str] = ()) -> list[Unit]:
    """Sweep stale or partial units (and anything unplanned but the names in ``keep``: a joint
    instance's imported games) from ``root``; return the planned units still to play."""
    root.mkdir(parents=True, exist_ok=True)
    wanted = {u.name: u for u in units}
    kept = set(keep)
    for child in root.iterdir():
        if child.name in kept:
            continue
        if child.name.startswith(TMP_PREFIX):
            shutil.rmtree(child, ignore_errors=True)
            continue
        unit = wanted.get(child.name)
        if unit is None or not child.is_dir() or not finished(child, unit):
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    return [u for u in units if not (root / u.name).exists()]


def prepare(root: Path, planned: list[PlannedEpisode]) -> list[PlannedEpisode]:
    """:func:`prepare_units` for the folder-per-episode layout: the planned episodes to play."""
    return [u.episodes[0] for u in prepare_units(root, plan_units(planned, None))]


def write_episode(
    root: Path,
    plan: PlannedEpisode,
    tables: dict[str, pd.DataFrame | Rows],
    meta: dict[str, Any],
    run_info: dict[str, Any] | None = None,
    run_dir: Path | None = None,
    before_commit: Callable[[], None] | None = None,
) -> Path:
    """Write the episode's result tables and meta.json to a temporary folder, then rename it into
    place (after calling ``before_commit``, which may raise to keep it out). Its run information
    (``run_info`` and the ``RUN_TABLES``) goes to ``run_dir``'s run log first; without
    ``run_dir`` (tests, benchmarks) it is not kept."""
    results, run_tables = _split(tables)
    if run_dir is not None:
        unit = Unit(plan.episode_id, (plan,), False)
        _write_run_log(
            run_dir, unit, [(run_tables, run_info or {})], (run_info or {}).get("wall_time_s", 0.0)
        )
    return _write_folder(
        root,
        plan.episode_id,
        results,
        {**_episode_meta(plan, meta), "status": "complete"},
        indent=2,
        before_commit=before_commit,
    )


def _split(tables: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(result tables, run tables) of one episode."""
    return (
        {n: t for n, t in tables.items() if n not in RUN_TABLES},
        {n: t for n, t in tables.items() if n in RUN_TABLES},
    )


def _episode_meta(plan: PlannedEpisode, meta: dict[str, Any]) -> dict[str, Any]:
    """An episode's meta as logged: the market's ``meta`` plus its id, run index, seed and
    fingerprint (an episode folder's meta.json, or its entry in a shard's)."""
    return {
        **meta,
        "episode_id": plan.episode_id,
        "run_index": plan.run,
        "seed": plan.seed,
        "fingerprint": plan.fingerprint,
    }


def _write_folder(
    root: Path,
    name: str,
    frames: dict[str, pd.DataFrame | Rows],
    meta: dict[str, Any],
    indent: int,
    meta_name: str = META,
    before_commit: Callable[[], None] | None = None,
) -> Path:
    """``frames`` as ``<name>.parquet`` files and ``meta`` (plus the files' sizes and hashes) as
    ``meta_name``, in a temporary folder renamed to ``root / name`` once everything is on disk
    and ``before_commit`` (if any) has returned (an existing ``root / name`` is replaced). A
    folder :func:`make_room` made ahead is used, its blank files renamed to the files written
    and the ones left over removed; any other temporary folder of the name is a dead write's."""
    final = root / name
    tmp = _tmp_folder(root, name)
    blanks = _made_room.pop(tmp, None)
    if blanks is None or not tmp.is_dir():  # not made ahead, or swept since (a new run)
        blanks = []
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
    files = {}
    for table, df in sorted(frames.items()):
        path = _named(blanks, tmp / f"{table}.parquet")
        files[path.name] = write_table(df, path)
    text = json.dumps({**meta, "files": files}, indent=indent, sort_keys=True, default=str)
    _named(blanks, tmp / meta_name).write_text(text + "\n")
    for blank in blanks:
        blank.unlink(missing_ok=True)
    _files_written[root] = len(frames) + 1
    if before_commit is not None:
        before_commit()
    if final.exists():  # a run log being rewritten (results folders are swept before a replay)
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def _tmp_folder(root: Path, name: str) -> Path:
    return root / f"{TMP_PREFIX}{name}-{os.getpid()}"


def _named(blanks: list[Path], path: Path) -> Path:
    """``path``, a blank file renamed to it if any is left."""
    while blanks:
        try:
            os.replace(blanks.pop(), path)
            break
        except FileNotFoundError:  # gone from under us: the next, or none
            continue
    return path


#: folders :func:`make_room` made, with their blank files, until written
_made_room: dict[Path, list[Path]] = {}
#: files the last unit written under a folder wrote (results folders or run logs)
_files_written: dict[Path, int] = {}
#: blank files for a unit's results before any unit was written under its folder
FIRST_GUESS = 12


def make_room(root: Path, unit: Unit, run_dir: Path | None = None) -> None:
    """Make ``unit``'s temporary folders (under ``root`` and ``run_dir``) ahead of its write,
    each with as many blank files as the last unit written there wrote (before one:
    ``FIRST_GUESS``, or a run log's tables and ``run.json``), unless the unit is written already
    or its folder is there. Call it from the thread that writes the unit, while its episodes
    wait on an endpoint.

    Why: creating a file or a folder is the costliest part of writing a small one on the
    machines measured (0.2-0.9 ms of the kernel's CPU each on ext4, against 0.1 ms to rename a
    blank file and write it); a BAZAAR game's unit makes 2 folders and 12 files. Its 30 rounds
    end with every other game's, so its write is the run's tail: BAZAAR's 40 entrant games on
    2 cores spent a median 17-35 ms a unit there, 20 units a worker one after another, with
    their folders made ahead 11-17 ms (the tail after the last answer 0.42-0.61 s, then
    0.22-0.42 s). The blanks are named as the files are written, the leftovers removed
    before the folder is renamed into place, so what is committed is as before; a run killed
    before leaves a temporary folder, swept at the next start like any other."""
    for folder, guess in ((root, FIRST_GUESS), (run_dir, len(RUN_TABLES) + 1)):
        if folder is None:
            continue
        folder = Path(folder)
        tmp = _tmp_folder(folder, unit.name)
        if tmp.exists() or (folder / unit.name).exists():
            continue
        tmp.mkdir(parents=True)
        count = _files_written.get(folder, guess)
        blanks = [tmp / f"{BLANK_PREFIX}{i}" for i in range(count)]
        for blank in blanks:
            blank.touch(exist_ok=False)
        _made_room[tmp] = blanks


def _concat_episodes(
    unit: Unit, tables: list[dict[str, pd.DataFrame | Rows]]
) -> dict[str, pd.DataFrame | Rows]:
    """Each table of ``unit``'s episodes (``tables`` in unit order) as the episodes' rows one after
    another with ``episode_id`` first (an episode without rows adds none): one ``Rows`` of all the
    rows when every episode gave :class:`Rows` (the same casts, ``episode_id`` a string), else the
    non-empty frames concatenated."""
    import numpy as np
    import pandas as pd

    frames: dict[str, pd.DataFrame | Rows] = {}
    for name in sorted({name for t in tables for name in t}):
        held = [(plan.episode_id, t[name]) for plan, t in zip(unit.episodes, tables) if name in t]
        rows = [(i, t) for i, t in held if len(t)]
        first = held[0][1]
        if isinstance(first, Rows) and all(
            isinstance(t, Rows) and t.columns == first.columns for _, t in held
        ):  # one table of all the rows
            frames[name] = Rows(
                ["episode_id", *first.columns],
                [(i, *row) for i, t in rows for row in t.rows],
                {**first.dtypes, "episode_id": "str"},
            )
            continue
        ids = np.repeat(np.array([i for i, _ in rows], dtype=object), [len(t) for _, t in rows])
        if rows:
            table = pd.concat([as_frame(t) for _, t in rows], ignore_index=True)
        else:
            table = as_frame(first).reset_index(drop=True)
        table.insert(0, "episode_id", pd.array(ids, dtype="str"))
        frames[name] = table
    return frames


def write_shard(
    root: Path,
    unit: Unit,
    episodes: list[tuple[dict[str, pd.DataFrame | Rows], dict[str, Any], dict[str, Any]]],
    run_info: dict[str, Any] | None = None,
    run_dir: Path | None = None,
    before_commit: Callable[[], None] | None = None,
) -> Path:
    """Write one shard: ``episodes`` holds (tables, meta, run info) of each of ``unit``'s episodes
    in unit order. Each result table is the episodes' rows one after another with ``episode_id``
    first; the run tables and run information go to ``run_dir``'s run log first (not kept without
    ``run_dir``). Written to a temporary folder renamed into place when complete and
    ``before_commit`` has returned, like an episode folder."""
    if len(episodes) != len(unit.episodes):
        raise ValueError(
            f"shard {unit.name}: {len(episodes)} episodes for {len(unit.episodes)} planned"
        )
    split = [_split(tables) for tables, _, _ in episodes]
    if run_dir is not None:
        _write_run_log(
            run_dir,
            unit,
            [(run, info) for (_, run), (_, _, info) in zip(split, episodes)],
            (run_info or {}).get("wall_time_s", 0.0),
        )
    listed = [_episode_meta(plan, meta) for plan, (_, meta, _) in zip(unit.episodes, episodes)]
    return _write_folder(
        root,
        unit.name,
        _concat_episodes(unit, [r for r, _ in split]),
        {"layout": "shard", "shard": unit.name, "status": "complete", "episodes": listed},
        indent=1,
        before_commit=before_commit,
    )


# ---------------------------------- run logs (not hashed by DVC; ``run_logs.py`` reads them back)
def _write_run_log(
    run_dir: Path,
    unit: Unit,
    episodes: list[tuple[dict[str, pd.DataFrame | Rows], dict[str, Any]]],
    wall_time_s: float,
) -> Path:
    """``unit``'s run log: ``run.json`` and its episodes' run tables (module docstring)."""
    listed = [
        {**info, "episode_id": plan.episode_id, "fingerprint": plan.fingerprint}
        for plan, (_, info) in zip(unit.episodes, episodes)
    ]
    return _write_folder(
        Path(run_dir),
        unit.name,
        _concat_episodes(unit, [t for t, _ in episodes]),
        {
            "unit": unit.name,
            "layout": "shard" if unit.shard else "episode",
            "episodes": listed,
            "wall_time_s": wall_time_s,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        indent=1,
        meta_name=RUN_META,
    )


def finished_units(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(folder, meta) of every finished episode folder or shard under ``root``, sorted by name."""
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.iterdir()):
        if p.is_dir() and not p.name.startswith(TMP_PREFIX):
            meta = read_meta(p)
            if meta is not None and meta.get("status") == "complete":
                out.append((p, meta))
    return out


def episode_folders(root: Path) -> list[Path]:
    """Finished episode folders (not shards) under ``root``, sorted by name."""
    return [
        p
        for p, meta in finished_units(root)
        if meta.get("layout", "episode") == "episode" and meta.get("fingerprint") is not None
    ]


def write_games(
    out: Path,
    games: Iterable[tuple[str, dict[str, "pd.DataFrame | Rows"], dict]],
    shard_episodes: int | None,
    fingerprint_of: str = "",
) -> int:
    """Write published games (an importer's, ``core.sources.MarketSource.import_games``) into ``out`` as units, streaming (a shard's games at a time in
    memory): ``games`` yields (episode id, tables, meta) in order; consecutive games of one id
    series (``core.series``) share a shard of at most ``shard_episodes`` (``None``: a folder
    per game). Game ``k`` gets run index ``k`` and seed 0 (we did not seed it: its source's seed,
    if any, is in its meta). Returns the number of games written."""
    seen: set[str] = set()
    buffer: list[tuple[PlannedEpisode, dict, dict]] = []

    def flush() -> None:
        if not buffer:
            return
        plans = tuple(p for p, _, _ in buffer)
        if shard_episodes is None:
            write_episode(out, plans[0], buffer[0][1], buffer[0][2])
        else:
            unit = Unit(f"{plans[0].episode_id}..{plans[-1].episode_id}", plans, True)
            write_shard(out, unit, [(tables, meta, {}) for _, tables, meta in buffer])
        buffer.clear()

    for k, (episode_id, tables, meta) in enumerate(games):
        if episode_id in seen:
            raise ValueError(f"two imported games share the episode id {episode_id!r}")
        seen.add(episode_id)
        plan = PlannedEpisode(episode_id, k, 0, sha256_text(f"{fingerprint_of}:{episode_id}"))
        if buffer and (
            shard_episodes is None
            or len(buffer) == shard_episodes
            or series(episode_id) != series(buffer[0][0].episode_id)
        ):
            flush()
        buffer.append((plan, tables, meta))
    flush()
    return len(seen)
