"""On-disk response cache: the same request gives the same answer, with no network call.

What: ``request_key(request)`` is the sha256 of the request's canonical JSON (sorted keys, no spaces,
UTF-8); ``ResponseCache`` maps that key to the endpoint's response JSON, one file per key at
``<cache_dir>/<key[:2]>/<key>.json``, and counts hits, misses and writes.

Why: re-running a benchmark (or replaying an episode with no key and no network) must reproduce every
answer exactly, and DVC deletes stage outputs before a re-run, so the cache lives outside them
(``.cache/llm`` by default).

Choices:
- The request that is hashed is built by the client: model name, messages, sampling parameters, the
  ``response_format`` actually sent (so the schema), the sample index, a format version and, for a
  model with a ``base_url``, the endpoint (normalised: ``client.endpoint_key``). So a different
  server (another host or port), even one serving a model of the same name, is asked rather than
  answered from another server's cache, while a replay with the same ``base_url`` and no server
  at all (``cache_only``) still hits. The alias is left out: renaming an alias replays nothing.
- Values are plain JSON (no pickle: nothing executable is ever loaded from the cache folder). Each file
  holds ``{"key", "request", "response"}``; the request is kept for audit and a key collision or a
  hand-edited file is detected (the stored request must equal the asked one).
- Writes are atomic (``core.files.write_atomic``): a temporary file in the same folder, then
  ``os.replace``. An interrupted run leaves at most a stray ``.tmp`` file, never a half entry. A
  good entry is never overwritten (a second writer of the same key keeps the first answer). No
  fsync: a killed process loses nothing that was renamed.
- Every read or decode problem (missing is a miss; not UTF-8, not JSON, the wrong shape, a
  directory or an unreadable file where the entry should be) counts as ``corrupt``: a warning names
  the path once, the answer is fetched again and stored in its place (a directory in the way is left
  alone and the answer is not stored). A cache that cannot be written at all raises ``OSError``,
  which the client turns into a run-ending ``CacheError`` naming ``llm.cache_dir``.
- File I/O is synchronous: entries are a few KB and local, far below an LLM call's latency
  (see ``benchmarks/bench_llm_overhead.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketarena.core.files import write_atomic
from marketarena.llm import jsontext

CACHE_FORMAT_VERSION = 1
log = logging.getLogger("marketarena.llm")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, non-ASCII kept, NaN refused (the shared
    ``response_format`` spliced in as encoded once: ``jsontext``)."""
    return jsontext.dumps(obj, canonical=True)


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON of ``request``."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def request_keys(request: dict[str, Any], left_out: str) -> tuple[str, str]:
    """``request_key(request)`` and the key of ``request`` without the field ``left_out``, from one
    encoding of the rest (the conversation is most of the text): when ``left_out`` sorts before
    every other key, the canonical JSON of the whole is the rest's with ``"left_out":value``
    put first."""
    rest = {k: v for k, v in request.items() if k != left_out}
    text = canonical_json(rest)
    rest_key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if left_out not in request:
        return rest_key, rest_key
    if rest and left_out < min(rest):
        whole = f"{{{canonical_json(left_out)}:{canonical_json(request[left_out])},{text[1:]}"
    else:
        whole = canonical_json(request)
    return hashlib.sha256(whole.encode("utf-8")).hexdigest(), rest_key


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
        self._warned: set[Path] = set()

    def _corrupt(self, path: Path, why: str) -> None:
        self.stats.corrupt += 1
        self.stats.misses += 1
        self._warn(path, why)

    def _warn(self, path: Path, why: str) -> None:
        if path not in self._warned:
            self._warned.add(path)
            log.warning(
                "LLM cache entry %s is unusable (%s); the answer is fetched again", path, why
            )

    def _read(self, path: Path, key: str) -> dict[str, Any]:
        """The stored entry, or ValueError / OSError saying why it is unusable."""
        entry = json.loads(path.read_bytes().decode("utf-8"))
        if (
            not isinstance(entry, dict)
            or entry.get("key") != key
            or not isinstance(entry.get("response"), dict)
        ):
            raise ValueError("not an entry for this key")
        return entry

    def path_for(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def get(self, key: str, request: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The cached response for ``key``, or None (a miss). When ``request`` is given, the stored
        request must equal it, otherwise the entry is treated as corrupt."""
        if not self.enabled:
            self.stats.misses += 1
            return None
        path = self.path_for(key)
        if not os.path.lexists(path):  # neither a file nor a symlink (a dangling one is corrupt)
            self.stats.misses += 1
            return None
        try:
            entry = self._read(path, key)
            if request is not None and entry.get("request") != json.loads(canonical_json(request)):
                raise ValueError("the stored request differs")
        except (
            OSError,
            ValueError,
        ) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            self._corrupt(path, f"{type(exc).__name__}: {exc}")
            return None
        self.stats.hits += 1
        return entry["response"]

    def put(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> Path | None:
        """Store ``response`` under ``key`` atomically; returns the entry's path."""
        if not self.enabled:
            return None
        path = self.path_for(key)
        if path.is_dir():
            self._warn(path, "a directory stands where the entry belongs; the answer is not stored")
            return None
        try:
            if self._read(path, key).get("request") == json.loads(canonical_json(request)):
                return path  # a good entry is never overwritten
        except (OSError, ValueError):
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        text = canonical_json(
            {"format": CACHE_FORMAT_VERSION, "key": key, "request": request, "response": response}
        )
        write_atomic(path, text)
        self.stats.writes += 1
        return path
