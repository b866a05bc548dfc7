"""The README's screenshots, made afresh: ``python -m marketarena.screenshots`` (``make
screenshots``) plays a small double_auction run with an offline mock LLM entrant in a scratch
folder (:func:`build_project`: 8 baselines, 16 pool games and 24 games of the entrant, whose
scripted answers are half the time not JSON, so some decisions are re-asked and some fall back),
takes it through metrics, board and site, serves it with the episode viewer, and photographs each page of :data:`SHOTS` in
Chromium (``report.browser``) into ``docs/<name>.png``.

What the hero shows is what such a run shows: the weak entrant is last of the 9 players on this
seed and on every other seed tried (1 to 6; with the 4 + 4 games used before, it led on seed 1
and was last or next to last on the others, so the picture misled), and the README's caption says
so (``tests/report/test_browser.py`` checks the entrant's rank on the board it photographs).

A screenshot cannot go stale silently: each PNG carries, in a text chunk, the *signature* of what
it shows (:func:`signature`: the headings, column headers, labels and links within the shot, with
every digit masked, so numbers may move but no column, section or label may come or go). The
browser tests (``tests/report/test_browser.py``) build the same project, take each page's
signature again and compare it with the committed PNG's: a page whose shown structure changed
fails them until ``make screenshots`` is run and the new PNGs are committed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

INSTANCE = "double_auction"
ENTRANT = "my_llm"
#: the entrant's games (beside 16 pool games): enough that its place on the board is its own
ENTRANT_GAMES = 24
#: the text chunk of a screenshot that holds its signature
KEY = "marketarena-signature"
DOCS = Path(__file__).resolve().parents[3] / "docs"


@dataclass(frozen=True)
class Shot:
    name: str  # docs/<name>.png
    path: str  # the site's file (site/...) or the viewer's path (/i/...)
    scope: str  # the parts of the page it shows (CSS selector): what its signature reads
    width: int = 1280
    height: int = 900


SHOTS = [
    Shot("site.png", f"site/{INSTANCE}.html", "nav.side, p.crumbs, h1, p.toc, #board"),
    Shot("viewer.png", f"/i/{INSTANCE}/p/{ENTRANT}", "nav.side, main", height=1000),
]


def params(folder: Path):
    """The tiny run's params: double_auction's contract-test block, 8 baselines, and the mock
    entrant (scripted answers, half of them a text that is no JSON: re-asked, and invalid when
    every re-ask is no JSON either); its response cache in ``folder``, so every answer is asked
    afresh (and costs what it costs)."""
    from importlib import resources

    import yaml

    from marketarena.config import parse_params

    block = yaml.safe_load(
        resources.files(f"marketarena.markets.{INSTANCE}").joinpath("tiny_params.yaml").read_text()
    )
    block["roster"] = [e for e in block["roster"] if e["name"] != "random"]
    block["roster"].append({"name": ENTRANT, "kind": "llm", "model": "mock"})
    block.update(
        runs=16,
        entrant_games=ENTRANT_GAMES,
        rating_boot=20,
        rating_boot_passes=2,
        shard_episodes=600,
    )
    answers = [
        "I would quote about half of my value",
        "Let me look at the market first.",
        {"quote": 40},
        {"quote": 60},
    ]
    return parse_params(
        {
            "models": {
                "mock": {
                    "model": "mock-scripted",
                    "provider": "mock",
                    "mock": {"policy": "scripted", "answers": answers},
                    "price_in_per_mtok": 0.15,
                    "price_out_per_mtok": 0.6,
                }
            },
            "llm": {"cache_dir": str(folder / ".cache" / "llm")},
            "execution": {"workers": 1},
            "ratings": {"n_boot": 20},
            "stats": {"n_boot": 100},
            "markets": {INSTANCE: block},
        }
    )


def build_project(folder: Path) -> Path:
    """The tiny run in ``folder`` (played, rated and its site built); returns ``folder``."""
    from marketarena.pipeline import (
        Paths,
        run_metrics,
        run_overall,
        run_ratings,
        run_reference,
        run_report,
        run_simulate,
    )

    p, paths = params(folder), Paths(folder)
    paths.data.mkdir(parents=True, exist_ok=True)
    run_reference(INSTANCE, p, paths)
    run_simulate(INSTANCE, p, paths, progress=False)
    run_metrics(INSTANCE, p, paths)
    run_ratings(INSTANCE, p, paths)
    run_overall(p, paths)  # the models matrix and the entrant's model page
    run_report(p, paths)
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def viewer(project: Path):
    """The episode viewer of ``project`` served in a thread on a free loopback port: its URL."""
    import uvicorn

    from marketarena.view.app import create_app

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(project / "data" / "episodes"),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the viewer did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def route_viewer(page, base: str) -> None:
    """Send the site's links to the viewer's default address to ``base`` instead."""
    from marketarena.report.board import VIEWER

    page.route(
        f"{VIEWER}/**", lambda route: route.continue_(url=base + route.request.url[len(VIEWER) :])
    )


def url_of(shot: Shot, project: Path, base: str) -> str:
    if shot.path.startswith("site/"):
        return (project / "reports" / shot.path).as_uri()
    return base + shot.path


#: what a signature reads: every shown element of these kinds in the shot's scope, in order
SIGNED = "h1, h2, h3, th, label, summary, button, p.toc a, .crumbs a, nav a, dt"


def signature(page, scope: str) -> str:
    """What the page shows in ``scope``, as text: each heading, column header, label and
    navigation link there that is displayed, one per line, every digit masked as ``#`` (see the
    module). Read from the page's elements, not from where they fall, so fonts cannot move it."""
    return page.evaluate(
        """([selector, scope]) => Array.from(document.querySelectorAll(selector))
        .filter((el) => el.closest(scope) && el.getClientRects().length > 0)
        .map((el) => el.tagName.toLowerCase() + ": " +
                     el.textContent.replace(/\\s+/g, " ").trim().replace(/[0-9]/g, "#"))
        .join("\\n")""",
        [SIGNED, scope],
    )


def take(project: Path, out: Path | None = None, base: str | None = None) -> dict[str, str]:
    """Each shot's signature, and its PNG (with the signature in it) in ``out`` when given;
    ``base``: the project's viewer when it is served already."""
    from marketarena.report.browser import open_page

    signatures = {}
    with contextlib.nullcontext(base) if base else viewer(project) as base:
        for shot in SHOTS:
            with open_page(shot.width, shot.height) as page:
                route_viewer(page, base)
                page.goto(url_of(shot, project, base))
                page.wait_for_load_state("load")
                signatures[shot.name] = signature(page, shot.scope)
                if out is not None:
                    write_png(page.screenshot(), signatures[shot.name], out / shot.name)
    return signatures


def write_png(data: bytes, sig: str, path: Path) -> None:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_itxt(KEY, sig)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.open(io.BytesIO(data)).save(path, pnginfo=info, optimize=True)


def committed(path: Path) -> str | None:
    """The signature a screenshot was taken with (None: none, e.g. a hand-made image)."""
    from PIL import Image

    with Image.open(path) as image:
        return image.info.get(KEY)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder of the PNGs (docs/)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="marketarena-screenshots-") as tmp:
        project = build_project(Path(tmp))
        for name, sig in take(project, args.out).items():
            print(f"{args.out / name}: {len(sig.splitlines())} labelled elements")


if __name__ == "__main__":  # pragma: no cover
    main()
