"""The dependency lock: ``requirements/lock.txt`` pins every package the Makefile installs.

``lock.txt`` is pip-compile's resolution of ``pyproject.toml``'s dependencies with every extra
(``dev``, ``ray``, ``local-model``) plus ``requirements/pins.in`` (torch's CPU build), each pin with
the sha256 of every file the package index offers for it, so ``pip install --require-hashes``
installs exactly these bytes or stops. ``make lock`` writes it (pip-compile, then ``stamp``);
``make install`` installs it without the local-model packages and what only they need
(``without``), ``make install-local-model`` installs all of it. Its header records the sha256 of the inputs it was
resolved from; ``check`` (``make check-lock``, and ``tests/test_lock.py`` in ``make test``) fails
when ``pyproject.toml``'s dependencies or the pins changed since, or when a pin does not satisfy
them.

    python requirements/lock.py stamp             # after pip-compile (make lock does both)
    python requirements/lock.py check             # the lock matches pyproject.toml
    python requirements/lock.py without NAME...   # print the lock without these requirements and
                                                  # the pins only they need

The standard library only, but ``check``'s version test (``packaging``, in the project's venv).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
PINS = ROOT / "requirements" / "pins.in"
PYPROJECT = ROOT / "pyproject.toml"
STAMP = "# inputs-sha256:"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def canonical(name: str) -> str:
    """A distribution name as the package index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_lines(path: Path = PINS) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.split("#", 1)[0].strip()]


def inputs_digest(pyproject: Path = PYPROJECT, pins: Path = PINS) -> str:
    """sha256 of what the lock is resolved from: pyproject.toml's requires-python, dependencies
    and optional dependencies (as parsed: comments and layout do not count) and the pins."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    inputs = {"requires-python": project.get("requires-python"),
              "dependencies": project.get("dependencies", []),
              "optional-dependencies": project.get("optional-dependencies", {}),
              "pins": pin_lines(pins)}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def blocks(text: str) -> list[tuple[str | None, list[str]]]:
    """The lock's lines grouped: (canonical name, lines) per pinned requirement (its ``--hash``
    and ``# via`` continuation lines included), (None, [line]) for everything else."""
    out: list[tuple[str | None, list[str]]] = []
    for line in text.splitlines():
        match = PIN.match(line)
        if match:
            out.append((canonical(match.group(1)), [line]))
        elif line[:1].isspace() and out and out[-1][0] is not None:
            out[-1][1].append(line)
        else:
            out.append((None, [line]))
    return out


def pins(text: str) -> dict[str, tuple[str, int]]:
    """canonical name -> (pinned version, number of hashes)."""
    found = {}
    for name, lines in blocks(text):
        if name is not None:
            version = PIN.match(lines[0]).group(2)
            found[name] = (version, sum(line.count("--hash=") for line in lines))
    return found


def parents(lines: list[str]) -> set[str]:
    """What a pin is there for, from pip-compile's ``# via`` annotation: canonical names of the
    pins that need it, or ``-r <file>`` / ``<project> (pyproject.toml)`` for the inputs."""
    out, inside = set(), False
    for line in lines[1:]:
        text = line.strip()
        if text.startswith("# via"):
            inside = True
            text = text[len("# via"):].strip()
        elif inside and text.startswith("#"):
            text = text.lstrip("#").strip()
        else:
            continue
        if text:
            out.add(text if " " in text else canonical(text))
    return out


def without(text: str, names: list[str]) -> str:
    """The lock without the requirements ``names`` and the pins that only they need (every pin
    whose ``# via`` parents are all dropped, transitively)."""
    drop = {canonical(n) for n in names}
    found = {name: lines for name, lines in blocks(text) if name is not None}
    missing = drop - set(found)
    if missing:
        raise SystemExit(f"{LOCK}: no pin for {sorted(missing)}")
    needs = {name: parents(lines) for name, lines in found.items()}
    grown = True
    while grown:
        more = {n for n, via in needs.items() if n not in drop and via and via <= drop}
        grown = bool(more)
        drop |= more
    return "\n".join(line for name, lines in blocks(text) if name not in drop for line in lines) + "\n"


def stamp(lock: Path = LOCK) -> None:
    """Record the inputs' digest in the lock's header (replacing an earlier one)."""
    lines = [line for line in lock.read_text(encoding="utf-8").splitlines()
             if not line.startswith(STAMP)]
    lines.insert(0, f"{STAMP} {inputs_digest()} (pyproject.toml dependencies + "
                    "requirements/pins.in; `make lock` writes this file)")
    lock.write_text("\n".join(lines) + "\n", encoding="utf-8")


def check(lock: Path = LOCK, pyproject: Path = PYPROJECT, pins_in: Path = PINS) -> list[str]:
    """What is wrong with the lock, as messages (none: it matches)."""
    from packaging.requirements import Requirement

    if not lock.is_file():
        return [f"{lock} is missing: run `make lock`"]
    text = lock.read_text(encoding="utf-8")
    problems = []
    recorded = next((line.split()[2] for line in text.splitlines() if line.startswith(STAMP)), None)
    if recorded != inputs_digest(pyproject, pins_in):
        problems.append(f"{lock.name} was resolved from other dependencies than {pyproject.name} "
                        f"and {pins_in.name} now list: run `make lock`")
    locked = pins(text)
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    wanted = [*project.get("dependencies", []),
              *(r for extra in project.get("optional-dependencies", {}).values() for r in extra),
              *pin_lines(pins_in)]
    for spec in wanted:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonical(req.name)
        if name not in locked:
            problems.append(f"{spec!r} ({pyproject.name} or {pins_in.name}) has no pin in {lock.name}")
        elif not req.specifier.contains(locked[name][0], prereleases=True):
            problems.append(f"{lock.name} pins {name}=={locked[name][0]}, which {spec!r} does not admit")
    problems += [f"{lock.name}: {name}=={version} has no --hash" for name, (version, n) in
                 sorted(locked.items()) if n == 0]
    return problems


def main(argv: list[str]) -> int:
    command, *args = argv or ["check"]
    if command == "stamp":
        stamp()
    elif command == "without":
        sys.stdout.write(without(LOCK.read_text(encoding="utf-8"), args))
    elif command == "check":
        problems = check()
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            return 1
        print(f"{LOCK.relative_to(ROOT)} matches {PYPROJECT.name} ({len(pins(LOCK.read_text()))} pins)")
    else:
        raise SystemExit(f"unknown command {command!r}: stamp, check or without NAME...")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
