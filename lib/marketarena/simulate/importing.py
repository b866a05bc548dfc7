"""Imported instances: published games brought into ``data/episodes/<instance>/`` by the simulate
stage, in place of playing.

An instance with a ``source`` (``core.params.SourceSpec``) names a folder of someone else's logs
and the format they are in::

    markets:
      bazaar_games:                  # BAZAAR's 1,954 published games (lechmazur/bazaar, logs/)
        market: double_auction
        source: {format: bazaar, path: ../bazaar/logs}

``simulate@<instance>`` then calls the market's importer (``MarketSource.import_games``) instead
of playing, and every later stage (metrics, stats, ratings, figures, the site, the viewer) works on
the imported episodes as on played ones. What holds for every importer (``core.sources``):

- **Whole or nothing.** The import is written into a new folder beside the instance's
  (``core.files.folder_replaced``) and swapped in only when every game has been read and written;
  a bad file, a full disk or Ctrl-C leave the earlier import exactly as it was. A kill -9 leaves
  the new folder (``.<instance>.<owner>.<random>.tmp``) beside it: the next import removes it
  once its owner process is gone, never while that import runs (``core.files.sweep_stale``).
- **Foreign files are only read.** Every file of the source is read as a regular file inside the
  source folder, bounded (``core.sources.read_bytes``): a FIFO, a device, a link out of the
  folder is refused in one line, never read or waited on.
- **One line.** A problem with the input is a ``SourceError`` naming the file and line, printed as
  one ``error:`` line by the stage (``--debug`` or ``MARKETARENA_DEBUG=1``: the traceback).
- **Done once.** The import's fingerprint hashes the instance's params, the importer's code and the
  source folder's listing (every file's path, size and modification time: reading 5 GB to hash it
  would cost as much as importing it). A re-run with the same fingerprint and every unit intact
  keeps the import; anything else re-imports it whole. Edit a file in place and keep its size and
  time, and the import is not redone: ``dvc repro -f simulate@<instance>`` forces it.
- **What came in is written down.** ``import.json`` beside the units: the source (format and path
  as given), where it stands in its git checkout when it is in one (``checkout``: the commit, the
  folder's tree hash, and the files of that commit absent from the disk, by path:
  :func:`checkout_pin`), the fingerprint, and the importer's report (games read, what was missing
  or left out and why). It is part of the stage's output, so the results site shows it.

The players of an imported instance come from the games (an LLM seat is its logged model), not
from the roster; the roster is then only what the instance's reference plays against (see
``core.params``). A *joint* instance (``MarketSource.joint``, issue 53: BAZAAR's games with LLM
entrants) also plays its entrants' games, after the import, into the same folder: the import
keeps them (:func:`_intact` checks only its own units there) and their run keeps the import
(``simulate(keep=imported_names(...))``); a re-import, when the source changed, drops them and
they are played again (from the response cache where nothing else changed). An instance that is
no longer joint imports again whole, so its former entrants' games leave the board. Nothing of
the source is copied beyond what our log schema holds: the logs stay where the user put them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from marketarena.core import logs
from marketarena.core.files import folder_replaced
from marketarena.core.registry import market_kind
from marketarena.core.sources import REPORT, SourceError, read_report  # noqa: F401

#: files in a source folder that are listed for the fingerprint at most (a larger folder is refused:
#: Agent Bazaar's logs-data holds 100,222)
MAX_SOURCE_FILES = 1_000_000


def source_folder(source_path: str, root: Path) -> Path:
    """The source folder of an instance: ``source.path``, relative to the project root ``root``."""
    path = Path(source_path).expanduser()
    return path if path.is_absolute() else Path(root) / path


def source_listing(folder: Path) -> str:
    """sha256 of every file's relative path, size and modification time under ``folder``."""
    digest = hashlib.sha256()
    count = 0
    top = os.fspath(folder)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        prefix = os.path.relpath(dirpath, top).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for name in sorted(filenames):  # plain strings: 100,000 Path objects cost seconds
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:  # a broken link: listed, its absence is the importer's to report
                st = None
            count += 1
            if count > MAX_SOURCE_FILES:
                raise SourceError(
                    folder,
                    f"holds more than {MAX_SOURCE_FILES:,} files; point "
                    "source.path at the folder of the logs themselves",
                )
            digest.update(
                f"{prefix}{name}\0{st.st_size if st else -1}\0"
                f"{st.st_mtime_ns if st else -1}\n".encode("utf-8", "surrogateescape")
            )
    return digest.hexdigest()


#: paths of absent files listed in import.json at most (their count is always given)
MAX_ABSENT_LISTED = 200


def _git(args: list[str], cwd: Path) -> str | None:
    """``git <args>`` run in ``cwd``: its output, or None (no git, not a checkout, a failure)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def checkout_pin(folder: Path) -> dict | None:
    """Where the source folder stands in its git checkout, if it is in one (issue 54): the
    repository's ``commit`` (HEAD), the ``tree`` hash of the folder at that commit (the logs'
    identity, whatever the folder is called), its ``path`` in the repository, and the files that
    commit holds under the folder which are absent from the disk (``absent``: how many, and the
    first :data:`MAX_ABSENT_LISTED` paths in ``absent_paths``: a snapshot may leave out its largest
    files). None outside a checkout or without git."""
    top = _git(["rev-parse", "--show-toplevel"], folder)
    if top is None:
        return None
    top_path = Path(top.strip()).resolve()
    rel = Path(os.path.relpath(folder.resolve(), top_path)).as_posix()
    commit = (_git(["rev-parse", "HEAD"], top_path) or "").strip() or None
    tree = _git(["rev-parse", "HEAD" if rel == "." else f"HEAD:{rel}"], top_path) or ""
    listed = _git(["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", rel], top_path) or ""
    absent = [p for p in listed.split("\0") if p and not os.path.lexists(top_path / p)]
    return {
        "commit": commit,
        "tree": tree.strip() or None,
        "path": rel,
        "absent": len(absent),
        "absent_paths": absent[:MAX_ABSENT_LISTED],
    }


def fingerprint(mp, folder: Path) -> str:
    """What the import depends on (module docstring)."""
    from marketarena.simulate.planning import code_hash

    return logs.sha256_text(
        logs.canonical_json(
            {
                "params": mp.episode_params(),
                "code": code_hash(mp.market),
                "source": source_listing(folder),
            }
        )
    )


def _intact(out_dir: Path, joint: bool = False) -> bool:
    """Every unit the report lists is on disk with the files its meta records, and no other
    unit; a joint instance's folder also holds its entrants' games, the simulate run's to check."""
    report = read_report(out_dir)
    if report is None:
        return False
    units = {p.name: (p, meta) for p, meta in logs.finished_units(out_dir)}
    listed = report.get("units", [])
    if not joint and set(units) != set(listed):
        return False
    return all(name in units and logs.intact(*units[name]) for name in listed)


def imported_names(out_dir: Path) -> frozenset[str]:
    """What the import wrote into ``out_dir``: its units and ``import.json`` (a joint instance's
    simulate run keeps them, ``simulate(keep=...)``)."""
    report = read_report(out_dir) or {}
    return frozenset([REPORT, *report.get("units", [])])


def import_instance(
    instance: str,
    params,
    data_dir: Path,
    out_dir: Path | None = None,
    root: Path | None = None,
    progress: bool = True,
) -> dict:
    """Import ``instance``'s source into ``out_dir`` (default ``data_dir/episodes/<instance>``),
    unless the import there has the same fingerprint and is intact. ``root``: the project root
    that a relative ``source.path`` is relative to (default: ``data_dir``'s parent). Returns a
    summary (``market``, ``imported``, ``skipped``, the report's headline)."""
    import sys

    from marketarena.simulate.locks import episodes_lock

    mp = params.markets[instance]
    source = market_kind(mp.market).source(mp.source.format)
    data_dir = Path(data_dir)
    out_dir = Path(out_dir or data_dir / "episodes" / instance)
    folder = source_folder(mp.source.path, Path(root) if root is not None else data_dir.parent)
    if not folder.is_dir():
        raise SourceError(
            folder,
            f"markets.{instance}.source.path: not a folder (the published "
            f'logs of format {mp.source.format!r}; see README "Published games")',
        )
    expected = fingerprint(mp, folder)
    with episodes_lock(out_dir):
        old = read_report(out_dir)
        if (
            old is not None
            and old.get("fingerprint") == expected
            and _intact(out_dir, source.joint(mp))
        ):
            return {
                "market": instance,
                "imported": 0,
                "skipped": old.get("episodes", 0),
                "source": str(folder),
            }
        if progress:
            print(f"{instance}: importing {mp.source.format} games from {folder}", file=sys.stderr)
        with folder_replaced(out_dir) as tmp:
            report = source.import_games(mp, folder, tmp)
            units = sorted(p.name for p, _ in logs.finished_units(tmp))
            episodes = sum(
                len(m.get("episodes", [])) if m.get("layout") == "shard" else 1
                for _, m in logs.finished_units(tmp)
            )
            record = {
                "instance": instance,
                "market": mp.market,
                "source": mp.source.model_dump(mode="json"),
                "checkout": checkout_pin(folder),
                "fingerprint": expected,
                "episodes": episodes,
                "units": units,
                "report": report,
            }
            (tmp / REPORT).write_text(
                json.dumps(record, indent=1, sort_keys=True, allow_nan=False, default=str) + "\n"
            )
    return {"market": instance, "imported": episodes, "skipped": 0, "source": str(folder)}
