"""Content digests: deterministic JSON for hashing, and the hash of files and folders.

What fingerprints are made of (an episode's, a reference's, an instance's code file, the response
cache's keys). Apart from the log writer (``core/logs.py``, which re-exports these names) so that a
stage that only hashes files (``instances``, a simulate with nothing to play) imports neither pandas
nor pyarrow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def canonical_json(obj: Any, strict: bool = False) -> str:
    """Deterministic JSON text (sorted keys, no whitespace) for hashing.

    ``strict`` refuses NaN and non-JSON values (cache keys must be exact); otherwise such values
    are written as their ``str`` (fingerprints of params that hold paths and the like).
    """
    if strict:
        return json.dumps(
            obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: files kept beside the code that no simulation, metric or figure reads: the results site's
#: captions (``markets/<kind>/figures.yaml``). Folders are hashed without them, so editing a caption
#: replays no episode and re-runs no stage but ``report``.
NOT_CODE = frozenset({"figures.yaml"})


def hash_files(paths: Iterable[Path]) -> str:
    """Content hash of files (and of every file below folders but :data:`NOT_CODE`), independent
    of their mtimes."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        files = (
            sorted(f for f in path.rglob("*") if f.is_file() and f.name not in NOT_CODE)
            if path.is_dir()
            else [path]
        )
        for f in files:
            if "__pycache__" in f.parts:
                continue
            digest.update(str(f.name).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()
