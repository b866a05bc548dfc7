"""Episode logs on disk (DESIGN.md section 4): atomic per-episode folders and resume.

Layout: ``<root>/<episode_id>/`` holding ``meta.json``, ``agents.parquet``, ``decisions.parquet``,
``llm_calls.parquet`` and the market's own tables (``states.parquet``, ``trades.parquet``, ...).

Atomicity: an episode is written into a hidden temporary folder beside its final place and renamed
when every file is on disk, so a killed run leaves either a whole episode or nothing (the
temporaries are swept away on the next start).

Resume: each episode carries a ``fingerprint`` (hash of the market params, the model specs behind
its LLM seats, the run index and seed, the code of the simulator and every input file it read) and,
in ``meta.json["files"]``, the size and sha256 of every table it wrote. A finished folder is kept
and skipped only if its fingerprint is the expected one *and* every recorded file is present with
its recorded size and hash; anything else in the folder (stale fingerprint, a truncated or missing
table, episodes no longer planned, temporaries) is removed before new episodes are played.

Determinism: everything except ``meta.json["run"]`` (wall time, timestamps, cost) is a pure function
of the inputs, so two runs with the same seed give byte-identical tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

META = "meta.json"
TMP_PREFIX = ".tmp-"


def canonical_json(obj: Any, strict: bool = False) -> str:
    """Deterministic JSON text (sorted keys, no whitespace) for hashing.

    ``strict`` refuses NaN and non-JSON values (cache keys must be exact); otherwise such values
    are written as their ``str`` (fingerprints of params that hold paths and the like).
    """
    if strict:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_files(paths: Iterable[Path]) -> str:
    """Content hash of files (and of every file below folders), independent of their mtimes."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__pycache__" in f.parts:
                continue
            digest.update(str(f.name).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class PlannedEpisode:
    episode_id: str
    run: int
    seed: int
    fingerprint: str


def write_table(df: pd.DataFrame, path: Path) -> None:
    df.reset_index(drop=True).to_parquet(path, index=False, engine="pyarrow", compression="zstd")


def file_record(path: Path) -> dict[str, Any]:
    """Size and sha256 of one written file, as ``meta.json["files"]`` records it."""
    data = path.read_bytes()
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
    for name, record in files.items():
        path = folder / name
        try:
            if path.stat().st_size != record.get("bytes") or file_record(path) != record:
                return False
        except (OSError, AttributeError):
            return False
    return True


def finished_fingerprint(folder: Path, verify: bool = False) -> str | None:
    """The fingerprint of a complete episode folder, else None. ``verify`` also re-hashes every
    table against ``meta.json["files"]`` (resume does; readers trust a folder that resume kept)."""
    meta = read_meta(folder)
    if meta is None or meta.get("status") != "complete":
        return None
    if verify and not intact(folder, meta):
        return None
    return meta.get("fingerprint")


def prepare(root: Path, planned: list[PlannedEpisode]) -> list[PlannedEpisode]:
    """Sweep stale or partial episodes from ``root`` and return the planned ones still to play."""
    root.mkdir(parents=True, exist_ok=True)
    wanted = {p.episode_id: p for p in planned}
    for child in root.iterdir():
        if child.name.startswith(TMP_PREFIX):
            shutil.rmtree(child, ignore_errors=True)
            continue
        plan = wanted.get(child.name)
        if plan is None or finished_fingerprint(child, verify=True) != plan.fingerprint:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    return [p for p in planned if not (root / p.episode_id).exists()]


def write_episode(
    root: Path,
    plan: PlannedEpisode,
    tables: dict[str, pd.DataFrame],
    meta: dict[str, Any],
    run_info: dict[str, Any],
) -> Path:
    """Write all tables and meta.json to a temporary folder, then rename it into place."""
    final = root / plan.episode_id
    tmp = root / f"{TMP_PREFIX}{plan.episode_id}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    files = {}
    for name, df in sorted(tables.items()):
        path = tmp / f"{name}.parquet"
        write_table(df, path)
        files[path.name] = file_record(path)
    full_meta = {
        **meta,
        "episode_id": plan.episode_id,
        "run_index": plan.run,
        "seed": plan.seed,
        "fingerprint": plan.fingerprint,
        "status": "complete",
        "files": files,
        "run": {**run_info, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    (tmp / META).write_text(json.dumps(full_meta, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, final)
    return final


def episode_folders(root: Path) -> list[Path]:
    """Finished episode folders under ``root``, sorted by name."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir()
        if p.is_dir() and not p.name.startswith(TMP_PREFIX) and finished_fingerprint(p) is not None
    )


def read_tables(root: Path, name: str) -> pd.DataFrame:
    """Concatenate table ``name`` over every finished episode, with an ``episode_id`` column."""
    frames = []
    for folder in episode_folders(root):
        df = pd.read_parquet(folder / f"{name}.parquet")
        df.insert(0, "episode_id", folder.name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
