"""The spend ledger's journal (``llm.ledger.SpendLedger``): one line appended per transaction, the
last complete line the state; a line cut short by a killed process dropped; compaction; an earlier
version's ledger carried over."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from marketarena.core.owners import owner as process_owner
from marketarena.llm import ledger
from marketarena.llm.budget import CostGuard
from marketarena.llm.errors import LedgerError
from marketarena.llm.ledger import SpendLedger, read_ledger

ROOT = Path(__file__).resolve().parents[2]


def lines(path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_a_reservation_is_a_line_on_disk_before_it_returns_and_a_read_adds_none(tmp_path):
    path = tmp_path / "spend.jsonl"
    guard = CostGuard(10.0, SpendLedger(path))
    before = len(lines(path))
    [first, second] = guard.reserve_all([(1.0, "m"), (2.0, "m")])
    assert len(lines(path)) == before + 1  # one transaction, one line
    assert sorted(read_ledger(path)["reserved"]) == sorted([first.id, second.id])
    guard.settle(first, 0.5)  # queued: the reservation stands for it until the next write
    assert first.id in read_ledger(path)["reserved"]
    assert guard.spent_usd == 0.5  # that read's transaction wrote the settle
    written = len(lines(path))
    assert guard.spent_usd == 0.5 and guard.reserved_usd == 2.0  # reads that change nothing
    assert len(lines(path)) == written
    assert all(line.endswith(b"\n") and json.loads(line) for line in lines(path))


def test_a_line_cut_short_by_a_killed_process_is_dropped_and_the_state_before_it_stands(tmp_path):
    path = tmp_path / "spend.jsonl"
    guard = CostGuard(10.0, SpendLedger(path))
    kept = guard.reserve(1.0, "m")
    whole = path.read_bytes()
    # what a process killed in the middle of appending its line leaves: a prefix, no newline
    cut = json.dumps({"spent_usd": 9.0, "reserved": {}}).encode()[:25]
    with open(path, "ab") as f:
        f.write(cut)
    assert read_ledger(path)["reserved"] == {kept.id: [1.0, process_owner()]}  # not the cut line
    other = CostGuard(10.0, SpendLedger(path))  # the next transaction (another process's)
    assert path.read_bytes() == whole  # the cut tail truncated, nothing else touched
    assert other.spent_usd == 0.0 and other.reserved_usd == 1.0
    later = other.reserve(2.0, "m")
    assert all(line.endswith(b"\n") for line in lines(path))
    assert set(read_ledger(path)["reserved"]) == {kept.id, later.id}


def test_the_journal_is_compacted_and_every_ledger_on_it_follows(tmp_path, monkeypatch):
    """Two ledgers on one file (each with its own lock handle and known state, as two processes
    have) take turns past several compactions: no charge is lost, the file stays small."""
    monkeypatch.setattr(ledger, "COMPACT_AT_BYTES", 2000)
    path = tmp_path / "spend.jsonl"
    guards = [CostGuard(None, SpendLedger(path)) for _ in range(2)]
    inodes = [path.stat().st_ino]
    for i in range(200):
        guard = guards[i % 2]
        guard.settle(guard.reserve(0.25, "m"), 0.125)
        inodes.append(path.stat().st_ino)
    for guard in guards:
        guard.flush()
    assert sum(a != b for a, b in zip(inodes, inodes[1:])) > 3  # rewritten several times
    assert path.stat().st_size <= 2000
    state = read_ledger(path)
    assert state["spent_usd"] == 200 * 0.125 and state["reserved"] == {}
    assert guards[0].spent_usd == guards[1].spent_usd == 200 * 0.125


def test_a_ledger_deleted_between_runs_starts_counting_afresh(tmp_path):
    path = tmp_path / "spend.jsonl"
    guard = CostGuard(None, SpendLedger(path))
    guard.settle(guard.reserve(1.0, "m"), 1.0)
    assert guard.spent_usd == 1.0
    path.unlink()
    assert CostGuard(None, SpendLedger(path)).spent_usd == 0.0
    assert guard.spent_usd == 0.0  # a ledger in use follows the file now at its path


def test_an_earlier_versions_ledger_is_carried_over_then_removed(tmp_path):
    legacy = tmp_path / "crash.json"
    legacy.write_text(
        '{\n "reserved": {"r1": [0.75, [1, 2]]},\n "spent_usd": 2.5,\n "tripped": false\n}'
    )  # one JSON document, as the earlier version wrote it
    ledger = SpendLedger(tmp_path / "crash.jsonl", exclusive=True)  # the run lock held: settled
    state = ledger.read()
    assert state["spent_usd"] == 2.5 + 0.75 and state["reserved"] == {}
    assert state["settled_in_flight"] == {"calls": 1, "usd": 0.75}
    assert not legacy.exists()
    assert read_ledger(tmp_path / "crash.jsonl")["spent_usd"] == 3.25


@pytest.mark.parametrize(
    "text",
    [
        b'{"spent_usd": 1.0}\nnot json\n',
        b"[1, 2]\n",
        b'{"spent_usd": 1.0}\nnot a line of ours, no newline',
        b'{\n "spent_usd": 1.0\n}',
    ],
)  # the earlier format at this path
def test_a_last_line_that_is_not_a_state_is_an_error_naming_the_file(tmp_path, text):
    path = tmp_path / "spend.jsonl"
    path.write_bytes(text)
    with pytest.raises(LedgerError, match="spend.jsonl.*delete the file to start counting afresh"):
        SpendLedger(path)
    assert path.read_bytes() == text  # nothing lost


def test_a_long_last_line_is_read_whole(tmp_path):
    """A state longer than the first look back from the end (many requests in flight)."""
    path = tmp_path / "spend.jsonl"
    guard = CostGuard(None, SpendLedger(path))
    held = guard.reserve_all([(0.001, "m")] * 1000)
    assert len(lines(path)[-1]) > 1 << 16  # past the first look back (16 KiB) and the second
    assert set(read_ledger(path)["reserved"]) == {r.id for r in held}
    assert CostGuard(None, SpendLedger(path)).reserved_usd == pytest.approx(1.0)


WRITER = """
import sys
from marketarena.llm.budget import CostGuard
from marketarena.llm.ledger import SpendLedger
guard = CostGuard(None, SpendLedger(sys.argv[1]))
guard.reserve_all([(0.001, "m")] * 800)  # lines of some 80 KB: a write spans many pages
print("ready", flush=True)
while True:
    print(guard.reserve(0.001, "m").id, flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the owner check reads /proc")
def test_kill_9_in_the_middle_of_writing_loses_no_reservation_that_was_granted(tmp_path):
    """A process reserving in a loop, killed at arbitrary moments: the ledger always opens, every
    reservation it announced (after ``reserve`` returned) is in it, and reopening charges them."""
    path = tmp_path / "spend.jsonl"
    rng = random.Random(7)
    spent = 0.0
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "lib")},
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.3))
        proc.kill()
        announced = [line.strip() for line in proc.stdout if line.strip()]
        proc.wait()
        state = read_ledger(path)
        assert set(announced) <= set(state["reserved"])
        in_flight = sum(v[0] for v in state["reserved"].values())
        after = SpendLedger(path).read()  # the owner is gone: everything charged at its bound
        assert after["reserved"] == {}
        assert after["spent_usd"] == pytest.approx(spent + in_flight)
        spent = after["spent_usd"]
