"""On-disk response cache: the same request gives the same answer, with no network call.

What: ``request_key(request)`` is the sha256 of the request's canonical JSON (sorted keys, no spaces,
UTF-8); ``ResponseCache`` maps that key to the endpoint's response JSON, one file per key at
``<cache_dir>/<key[:2]>/<key>.json``, and counts hits, misses and writes.

Why: re-running a benchmark (or replaying an episode with no key and no network) must reproduce every
answer exactly, and DVC deletes stage outputs before a re-run, so the cache lives outside them
(``.cache/llm`` by default).

Choices:
- The request that is hashed is built by the client: model name, messages, sampling parameters, the
  ``response_format`` actually sent (so the schema), and the sample index, plus a format version. It
  leaves out the endpoint URL and the alias on purpose, so that a replay against another port, or with
  no server at all, still hits; give different local models different model names.
- Values are plain JSON (no pickle: nothing executable is ever loaded from the cache folder). Each file
  holds ``{"key", "request", "response"}``; the request is kept for audit and a key collision or a
  hand-edited file is detected (the stored request must equal the asked one).
- Writes are atomic: a temporary file in the same folder, then ``os.replace``. Concurrent writers of the
  same key both write the same bytes and the last rename wins; an interrupted run leaves at most a
  stray ``.tmp`` file, never a half entry. No fsync: a killed process loses nothing that was renamed,
  and an entry that a power cut left empty reads as a miss (unreadable entries count as ``corrupt``
  and are simply re-fetched and overwritten).
- File I/O is synchronous: entries are a few KB and local, far below an LLM call's latency
  (see ``benchmarks/bench_llm_overhead.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketarena.core import logs

CACHE_FORMAT_VERSION = 1


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, non-ASCII kept, NaN refused."""
    return logs.canonical_json(obj, strict=True)


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON of ``request``."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0


class ResponseCache:
    """A folder of JSON responses keyed by request hash. ``enabled=False`` makes every lookup a miss
    and every store a no-op (still counted)."""

    def __init__(self, cache_dir: str | os.PathLike[str], *, enabled: bool = True) -> None:
        self.cache_dir = Path(cache_dir)
        self.enabled = enabled
        self.stats = CacheStats()

    def path_for(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def get(self, key: str, request: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The cached response for ``key``, or None (a miss). When ``request`` is given, the stored
        request must equal it, otherwise the entry is treated as corrupt."""
        if not self.enabled:
            self.stats.misses += 1
            return None
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        try:
            entry = json.loads(text)
            response = entry["response"]
            if entry.get("key") != key or not isinstance(response, dict):
                raise ValueError("mismatched entry")
            if request is not None and entry.get("request") != json.loads(canonical_json(request)):
                raise ValueError("stored request differs")
        except (ValueError, KeyError, TypeError):
            self.stats.corrupt += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return response

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> Path | None:
        """Store ``response`` under ``key`` atomically; returns the entry's path."""
        if not self.enabled:
            return None
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = canonical_json(
            {"format": CACHE_FORMAT_VERSION, "key": key, "request": request, "response": response}
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.stats.writes += 1
        return path
