"""The episode page's weight in Chromium, before and after the viewer dropped plotly.js (issue 59):
the `load` event, the charts drawn, and the bytes transferred (script and all), for the LLM
entrant's game of a 30-round double_auction run (the default rounds, 8 seats, the offline mock
model in one seat), served by each checkout's own `marketarena view` on loopback.

    .venv/bin/python benchmarks/bench_viewer_page.py                    # before: git HEAD's lib/
    .venv/bin/python benchmarks/bench_viewer_page.py --before /work/baseline --loads 7

"Before" is the viewer of another checkout (``--before``: a folder holding ``lib/``, or a git
revision, default HEAD, whose ``lib/`` is extracted with ``git archive`` into a temporary folder),
"after" this working tree's. The run is simulated once with this tree and served by both (the log
format is the same). Each load is a fresh browser context (nothing cached), before and after
alternating so that the machine's load falls on both alike; the medians are printed. Bytes are
what the server sent (Resource Timing's ``transferSize``: compressed when it gzips), so they do not
depend on the machine; times do.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from importlib import resources
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
INSTANCE = "double_auction"
#: the charts drawn: plotly's (before), ours (after)
CHARTS = "#table-states .plot .main-svg, #table-states svg.chart"
MEASURE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource");
  const js = res.filter((e) => e.name.split("?")[0].endsWith(".js"));
  return {load: nav.loadEventEnd, drawn: performance.now(),
          script: js.reduce((a, e) => a + e.transferSize, 0),
          total: nav.transferSize + res.reduce((a, e) => a + e.transferSize, 0),
          plotly: res.some((e) => e.name.includes("plotly"))};
}"""


def simulate_run(project: Path) -> str:
    """One pool game and one game of the mock LLM entrant, 30 rounds; the entrant game's id."""
    sys.path.insert(0, str(REPO / "lib"))
    from marketarena.config import parse_params
    from marketarena.pipeline import Paths, run_reference
    from marketarena.simulate import simulate

    block = yaml.safe_load(
        resources.files("marketarena.markets.double_auction")
        .joinpath("tiny_params.yaml")
        .read_text()
    )
    block["roster"].append({"name": "my_llm", "kind": "llm", "model": "mock"})
    block.update(rounds=30, runs=1, entrant_games=1)
    params = parse_params(
        {
            "models": {
                "mock": {
                    "model": "mock-random",
                    "provider": "mock",
                    "price_in_per_mtok": 0.15,
                    "price_out_per_mtok": 0.6,
                }
            },
            "llm": {"cache_dir": str(project / "llm-cache")},
            "execution": {"workers": 1},
            "markets": {INSTANCE: block},
        }
    )
    paths = Paths(project)
    paths.data.mkdir(parents=True, exist_ok=True)
    run_reference(INSTANCE, params, paths)
    simulate(INSTANCE, params, paths.data, progress=False)
    from marketarena.view.store import InstanceIndex

    index = InstanceIndex(paths.data / "episodes" / INSTANCE)
    return next(e.episode_id for e in index.entries if "my_llm" in e.lineup)


def lib_of(before: str, tmp: Path) -> Path:
    """The ``lib/`` folder of ``before``: a checkout folder, or a git revision extracted."""
    if Path(before, "lib", "marketarena").is_dir():
        return Path(before, "lib")
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", before, "lib"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tmp / "before", filter="data")
    return tmp / "before" / "lib"


@contextlib.contextmanager
def served(lib: Path, project: Path):
    """`marketarena view` of the checkout whose ``lib`` is given, on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(lib)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "marketarena.cli",
            "view",
            "--root",
            str(project),
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/", timeout=5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="HEAD", help="a checkout folder or a git revision")
    ap.add_argument("--loads", type=int, default=5, help="page loads of each viewer")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from playwright.sync_api import sync_playwright

    from marketarena.report.browser import FLAGS, chromium

    if chromium() is None:
        raise SystemExit("no Chromium at /usr/bin/chromium (make install-browser)")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        episode = simulate_run(Path(tmp) / "project")
        print(
            f"a 30-round double_auction run in {time.perf_counter() - t0:.1f} s; "
            f"page: /i/{INSTANCE}/e/{episode}"
        )
        libs = {"before": lib_of(args.before, Path(tmp)), "after": REPO / "lib"}
        got: dict[str, list[dict]] = {k: [] for k in libs}
        with contextlib.ExitStack() as stack, sync_playwright() as p:
            bases = {
                k: stack.enter_context(served(lib, Path(tmp) / "project"))
                for k, lib in libs.items()
            }
            browser = p.chromium.launch(executable_path=chromium(), args=FLAGS)
            for _ in range(args.loads):
                for which, base in bases.items():
                    context = browser.new_context()  # nothing cached
                    page = context.new_page()
                    page.set_default_timeout(120_000)
                    page.goto(f"{base}/i/{INSTANCE}/e/{episode}", wait_until="load")
                    page.wait_for_selector(CHARTS)
                    got[which].append(page.evaluate(MEASURE))
                    context.close()
            browser.close()
    print(
        f"{'median of ' + str(args.loads):22s} {'load (s)':>9s} {'charts (s)':>11s} "
        f"{'script (KB)':>12s} {'all (KB)':>9s}  plotly.min.js"
    )
    for which, runs in got.items():
        med = {
            k: statistics.median(r[k] for r in runs) for k in ("load", "drawn", "script", "total")
        }
        print(
            f"{which:22s} {med['load'] / 1e3:9.2f} {med['drawn'] / 1e3:11.2f} "
            f"{med['script'] / 1e3:12.0f} {med['total'] / 1e3:9.0f}  "
            f"{'fetched' if any(r['plotly'] for r in runs) else 'not fetched'}"
        )


if __name__ == "__main__":
    main()
