"""One reader for a market instance's episode logs, whatever their layout on disk.

Every metrics function reads episodes through :class:`EpisodeReader`, never by walking folders
itself, so a new log layout (sharded datasets for markets with many short episodes) changes this
module only. Today's layout is one folder per episode (``core.logs``); only finished episodes
(``meta.json`` status complete) are read.

- ``reader.table("states")``: one table over every episode, ``episode_id`` as its first column,
  episodes in id order (an episode without the table contributes nothing);
- ``reader.episodes("states", "trades")``: ``(episode_id, {name: frame})`` one episode at a time,
  for metrics defined per episode;
- ``reader.meta(episode_id)``: the episode's ``meta.json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from marketarena.core import logs


class EpisodeReader:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._folders = {p.name: p for p in logs.episode_folders(self.root)}

    def __len__(self) -> int:
        return len(self._folders)

    def episode_ids(self) -> list[str]:
        return sorted(self._folders)

    def meta(self, episode_id: str) -> dict[str, Any]:
        meta = logs.read_meta(self._folders[episode_id])
        if meta is None:
            raise FileNotFoundError(f"{self._folders[episode_id]}: meta.json is unreadable")
        return meta

    def _read(self, episode_id: str, name: str, columns: list[str] | None) -> pd.DataFrame | None:
        path = self._folders[episode_id] / f"{name}.parquet"
        return pd.read_parquet(path, columns=columns) if path.is_file() else None

    def table(self, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        frames = []
        for episode_id in self.episode_ids():
            df = self._read(episode_id, name, columns)
            if df is not None:
                df.insert(0, "episode_id", episode_id)
                frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def episodes(self, *names: str) -> Iterator[tuple[str, dict[str, pd.DataFrame]]]:
        for episode_id in self.episode_ids():
            tables = {}
            for name in names:
                df = self._read(episode_id, name, None)
                if df is None:
                    raise FileNotFoundError(f"{self._folders[episode_id]}: no {name}.parquet")
                tables[name] = df
            yield episode_id, tables

    def require(self) -> "EpisodeReader":
        """Self, or ``FileNotFoundError`` when there is no finished episode to read."""
        if not self._folders:
            raise FileNotFoundError(f"{self.root}: no finished episodes; run the simulate stage")
        return self
