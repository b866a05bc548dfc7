"""The episode viewer at BAZAAR's scale (issue 26): how long it takes to open one game of a
90,000-game double_auction shard set (target: under 1 s), and to list the set.

    .venv/bin/python benchmarks/bench_viewer.py                  # 90,000 games, 150 shards
    .venv/bin/python benchmarks/bench_viewer.py --games 6000     # a quicker look
    .venv/bin/python benchmarks/bench_viewer.py --episodes <data/episodes/double_auction>
    .venv/bin/python benchmarks/bench_viewer.py --keep /tmp/da90k   # keep the set it builds

The set: one shard of 600 pool games simulated with the default block (BAZAAR's 29 baselines),
then replicated into 150 shards (``ep-0000..ep-0599`` ... ``ep-89400..ep-89999``) whose
``episode_id`` columns and metas are renumbered: the same files, sizes and row counts as
``bench_da_scale.py --keep`` writes, in a minute instead of ten. ``--episodes`` uses a real set.

Prints, for a game in the middle shard: reading it by id (``core.reader.read_episode``: pyarrow
with a filter on ``episode_id``), the same rows with DuckDB when it is installed, the episode page
and a decision page as the viewer serves them (uvicorn on loopback, median of 5 after the first
request), the page in Chromium (tables drawn, plots drawn) when Playwright and Chromium are
there, and the listing (the index of the whole set, built when the viewer starts; later
requests reuse it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import locate, read_episode
from marketarena.pipeline import Paths, run_reference, run_simulate

DEFAULT = (
    Path(__file__).resolve().parents[1]
    / "lib/marketarena/markets/double_auction/default_params.yaml"
)
SHARD = 600


def simulate_one_shard(root: Path) -> Path:
    block = yaml.safe_load(DEFAULT.read_text())["double_auction"]
    block.update(games_per_distribution=SHARD // len(block["distributions"]), shard_episodes=SHARD)
    block["reference"]["games_per_distribution"] = 100
    block["reference"]["min_count"] = 5
    params = parse_params({"markets": {"double_auction": block}, "execution": {"workers": 1}})
    paths = Paths(root)
    run_reference("double_auction", params, paths)
    run_simulate("double_auction", params, paths, progress=False)
    (shard,) = [p for p in paths.episodes("double_auction").iterdir() if p.is_dir()]
    return shard


def replicate(shard: Path, out: Path, games: int) -> None:
    """``games // 600`` copies of ``shard`` with their games renumbered."""
    meta = json.loads((shard / logs.META).read_text())
    tables = {p.name: pq.read_table(p) for p in shard.glob("*.parquet")}
    for k in range(games // SHARD):
        first = k * SHARD
        new = {e["episode_id"]: f"ep-{first + i:04d}" for i, e in enumerate(meta["episodes"])}
        name = (
            f"{new[meta['episodes'][0]['episode_id']]}..{new[meta['episodes'][-1]['episode_id']]}"
        )
        folder = out / name
        folder.mkdir(parents=True)
        old_ids, new_ids = pa.array(list(new)), pa.array(list(new.values()))
        for file, table in tables.items():
            index = pc.index_in(table["episode_id"], value_set=old_ids)
            ids = pc.take(new_ids, index).cast(table.schema.field("episode_id").type)
            pq.write_table(
                table.set_column(0, "episode_id", ids), folder / file, compression="zstd"
            )
        listed = [
            {**e, "episode_id": new[e["episode_id"]], "run_index": first + i}
            for i, e in enumerate(meta["episodes"])
        ]
        (folder / logs.META).write_text(
            json.dumps({**meta, "shard": name, "episodes": listed}, indent=1, sort_keys=True)
        )


def best(fn, n: int = 5) -> tuple[float, float]:
    """(first call, median of the next ``n``) in seconds."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def serve(episodes: Path):
    import uvicorn

    from marketarena.view.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(episodes), host="127.0.0.1", port=port, log_level="warning")
    )
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=90_000)
    ap.add_argument("--episodes", default=None, help="an existing double_auction shard set")
    ap.add_argument("--keep", default=None, help="build the set in this folder and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.episodes:
            root = Path(args.episodes)
        else:
            t0 = time.perf_counter()
            work = Path(args.keep or tmp)
            shard = simulate_one_shard(work / "one")
            root = work / "episodes" / "double_auction"
            replicate(shard, root, args.games)
            shutil.rmtree(work / "one")
            print(
                f"built {args.games:,} games in {len(list(root.iterdir()))} shards "
                f"in {time.perf_counter() - t0:.1f} s (rerun with --episodes {root})"
            )
        size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
        units = sorted(p.name for p in root.iterdir() if p.is_dir())
        middle = units[len(units) // 2].partition("..")[0]
        print(f"set: {root} ({len(units)} shards, {size / 1e6:.0f} MB); game {middle}")

        first, warm = best(lambda: read_episode(root, middle))
        print(
            f"read one game by id (pyarrow filter)      first {first * 1e3:7.1f} ms   "
            f"then {warm * 1e3:7.1f} ms"
        )
        try:
            import duckdb
        except ImportError:
            print("read one game by id (duckdb)             not installed")
        else:
            unit = locate(root, middle)

            def by_duckdb():
                con = duckdb.connect()
                for f in sorted(unit.glob("*.parquet")):
                    con.execute(
                        "select * exclude (episode_id) from read_parquet(?) where episode_id = ?",
                        [str(f), middle],
                    ).df()
                con.close()

            first, warm = best(by_duckdb)
            print(
                f"read one game by id (duckdb)             first {first * 1e3:7.1f} ms   "
                f"then {warm * 1e3:7.1f} ms"
            )

        from marketarena.view.store import InstanceIndex

        first, warm = best(lambda: InstanceIndex(root), n=1)
        print(
            f"{'index of the set (at viewer start)':40s} first {first * 1e3:7.1f} ms   "
            f"then {warm * 1e3:7.1f} ms"
        )
        server, base = serve(root.parent)
        try:
            agent = read_episode(root, middle)[1]["agents"]["agent_id"].iloc[0]
            pages = {
                "episode page": f"{base}/i/double_auction/e/{middle}",
                "decision page": f"{base}/i/double_auction/e/{middle}/d?step=3&round=0"
                f"&phase=quote&agent={agent}",
            }
            for what, url in pages.items():
                first, warm = best(lambda url=url: fetch(url))
                print(f"{what:40s} first {first * 1e3:7.1f} ms   then {warm * 1e3:7.1f} ms")
            first, warm = best(lambda: fetch(f"{base}/i/double_auction"), n=3)
            print(
                f"{'listing, first page of 100':40s} first {first * 1e3:7.1f} ms   "
                f"then {warm * 1e3:7.1f} ms"
            )
            first, warm = best(lambda: fetch(f"{base}/i/double_auction?seed=45123"), n=3)
            print(
                f"{'filter by seed/run (index reused)':40s} first {first * 1e3:7.1f} ms   "
                f"then {warm * 1e3:7.1f} ms"
            )
            browser_open(pages["episode page"])
        finally:
            server.should_exit = True


def browser_open(url: str) -> None:
    """The episode page opened in Chromium: until its tables are drawn (DOMContentLoaded: the
    page's module has built them) and until its charts are (SVG, drawn after the tables)."""
    try:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from playwright.sync_api import sync_playwright

        from tests.browser import FLAGS, chromium
    except ImportError:
        print("in Chromium                              playwright not installed")
        return
    if chromium() is None:
        print("in Chromium                              no Chromium")
        return
    tables, plots = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
        page = browser.new_page()
        for _ in range(6):
            t0 = time.perf_counter()
            page.goto(url, wait_until="domcontentloaded")
            tables.append(
                page.evaluate(
                    "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
                )
                / 1e3
            )
            page.wait_for_selector("#table-states svg.chart")
            plots.append(time.perf_counter() - t0)
        browser.close()
    for what, times in (("in Chromium, tables drawn", tables), ("in Chromium, plots drawn", plots)):
        print(
            f"{what:40s} first {times[0] * 1e3:7.1f} ms   "
            f"then {statistics.median(times[1:]) * 1e3:7.1f} ms"
        )


if __name__ == "__main__":
    main()
