"""The CSα reference table: tabulation by hand, pooling of sparse buckets, CSα lookup, the stage,
and its worker processes, which end with the process that started them (issue 49)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.double_auction.analysis.reference import (
    INFO,
    TABLE,
    compute_reference,
    seat_csa,
    tabulate,
)
from tests.processes import alive, children, python, wait_for

from .conftest import small_params


def test_tabulate_by_hand_and_pooling():
    mp = small_params(reference={"games_per_distribution": 10, "min_count": 3})
    seats = pd.DataFrame(
        {
            "role": "buyer",
            "value": [48, 50, 51, 52, 57, 99, 0],
            "surplus": [10, 20, 30, 40, 100, 500, 0],
        }
    )
    t = tabulate(seats, "uniform", mp).set_index("bucket")
    assert len(t) == 21 and set(t["role"]) == {"buyer"}  # centres 0, 5, ..., 100
    b10 = t.loc[10]  # centred on 50: values 48..52, surpluses 10, 20, 30, 40
    assert b10["n_raw"] == 4 and b10["n"] == 4 and b10["mean"] == 25
    assert b10["sd"] == pytest.approx(np.std([10, 20, 30, 40], ddof=1))
    assert (b10["value_lo"], b10["value_hi"]) == (48, 52)
    b11 = t.loc[11]  # one seat (57): borrows buckets 10 and 12 -> 5 seats
    assert b11["n_raw"] == 1 and b11["n"] == 5 and b11["mean"] == 40
    assert (b11["pooled_lo"], b11["pooled_hi"]) == (10, 12)
    assert (t.loc[0, "value_lo"], t.loc[0, "value_hi"]) == (0, 2)
    assert (t.loc[20, "value_lo"], t.loc[20, "value_hi"]) == (98, 100)
    assert t.loc[20, "n_raw"] == 1  # 99
    assert (t["n"] >= 3).all()


def test_sd_floor_for_constant_buckets():
    mp = small_params(reference={"min_count": 2, "sd_floor": 1.5})
    seats = pd.DataFrame({"role": "seller", "value": [90, 91, 92], "surplus": [0, 0, 0]})
    row = tabulate(seats, "uniform", mp).set_index("bucket").loc[18]  # 88..92
    assert row["sd"] == 0 and row["sd_used"] == 1.5


def test_csa_from_a_small_known_table():
    mp = small_params()
    ref = pd.DataFrame(
        {
            "distribution": "uniform",
            "role": ["buyer", "buyer", "seller"],
            "bucket": [11, 12, 12],
            "mean": [100.0, 300.0, 50.0],
            "sd_used": [50.0, 100.0, 10.0],
        }
    )
    seats = pd.DataFrame(
        {
            "distribution": "uniform",
            "role": ["buyer", "buyer", "buyer", "seller"],
            "value": [57, 55, 60, 59],
            "surplus": [150, 1000, 100, 20],
        }
    )
    out = seat_csa(seats, ref, mp)
    np.testing.assert_allclose(out["csa"], [1.0, 5.0, -2.0, -3.0])
    assert out["bucket"].tolist() == [11, 11, 12, 12]  # 57, 55 -> 55; 60, 59 -> 60
    with pytest.raises(ValueError, match="no row"):
        seat_csa(seats.assign(distribution="correlated"), ref, mp)


def test_reference_stage_outputs(tmp_path):
    mp = small_params(reference={"games_per_distribution": 300, "min_count": 20})
    summary = compute_reference(mp, tmp_path)
    table = pd.read_parquet(tmp_path / TABLE)
    info = json.loads((tmp_path / INFO).read_text())
    assert len(table) == 4 * 2 * 21 and (table["n"] >= 20).all()
    assert info["params"]["reference"]["games_per_distribution"] == 300
    assert {o["name"] for o in info["opponents"]} == {e.name for e in mp.roster} - {"truthful"}
    for s in summary["distributions"].values():
        assert s["games"] == 300 and s["mean_ce_surplus"] > 0
        # a truthful seat never loses money, and the table's seats are its games' truthful seats
        assert min(s["mean_truthful_surplus"].values()) >= 0
    assert table.groupby("distribution")["n_raw"].sum().eq(300).all()
    again = tmp_path / "again"
    compute_reference(mp, again, workers=2)  # two processes, the same table byte for byte
    assert (again / TABLE).read_bytes() == (tmp_path / TABLE).read_bytes()


ENDLESS = """
from marketarena.markets.double_auction.analysis.reference import truthful_seats
from tests.markets.double_auction.conftest import small_params
truthful_seats(small_params(reference={"games_per_distribution": 1_000_000}), workers=2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc")
@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda sig: sig.name
)
def test_reference_workers_end_with_their_parent(sig):
    run = python("-c", ENDLESS, cwd=Path(__file__).resolve().parents[3])
    try:

        def workers() -> list[int]:
            assert run.poll() is None, f"the run ended with {run.returncode}"
            return [
                pid
                for pid in children(run.pid)
                if b"--multiprocessing-fork" in Path(f"/proc/{pid}/cmdline").read_bytes()
            ]

        wait_for(lambda: len(workers()) == 2, timeout_s=120, what="two reference workers")
        started = children(run.pid)  # the workers and multiprocessing's resource tracker
        run.send_signal(sig)  # SIGINT: the pool is stopped; the others: the kernel kills them
        run.wait(timeout=30)
        wait_for(
            lambda: not any(alive(p) for p in started),
            timeout_s=10,
            what=f"the workers {sorted(p for p in started if alive(p))} to end",
        )
    finally:
        run.kill()
        run.wait()
