"""The episode viewer's web app (``marketarena view``): read-only pages over ``data/episodes/``.

Routes (GET only; nothing writes):

- ``/``: the instances with their episodes;
- ``/i/<instance>?player=&seed=&q=&s.<key>=&only=&sort=&desc=&page=``: its players (each with
  its mean score and rank, games won, LLM calls, cost, re-asked and invalid decisions) and its
  episodes (with their players' LLM calls, cost, re-asked and invalid decisions), filtered by
  player (in the lineup: then the player's page), setting (each key of the episode's setting: a
  crash cell, a double_auction distribution...), seed (the episode seed or its run index), id and
  ``only`` (``invalid``, ``reasked``), sorted on the server by ``sort``, 100 per page
  (``view.lists``);
- ``/i/<instance>/p/<player>``: a player's page: its board row, its totals, its episodes with its
  outcome in each (the market's score, rank in the game, seats, LLM calls, tokens, cost, re-asked
  and invalid decisions; ``view.outcomes``), filtered and sorted as above; the results site's
  boards link here;
- ``/i/<instance>/compare?a=&b=``: two players' board rows and their shared episodes with both
  outcomes (the site's head-to-head cells link here);
- ``/i/<instance>/search?text=&player=&model=&invalid=1&reasked=1&episode=&page=``: full text over
  the instance's prompts, answers and errors (``view.search``), each hit linking to its decision;
  ``q=`` is taken for ``text=`` when there is no ``text`` (the usual name of a search query);
- ``/i/<instance>/e/<episode>?player=``: one episode: meta, seats, the timeline (every table with
  a ``step`` column, filtered to one step or all, and small SVG charts drawn by
  ``static/chart.js``), every decision (links to the LLM ones; filters for LLM, invalid and
  re-asked decisions), the other tables. Opened for a player (its page's links carry
  ``player=``), the player's seats are marked in every table and the decisions show its seats
  only (a box to untick), so the first decision link opens its seat;
- ``/i/<instance>/e/<episode>/tables.zip``: its meta and every table as CSV;
- ``/i/<instance>/e/<episode>/d?step=&round=&phase=&agent=``: one decision: each attempt's
  action, validity and reason, and each LLM call's prompt, raw answer, re-asks with their reason,
  tokens, cost, latency and cache hit; the seat's previous and next decision;
- ``/static/*`` (our stylesheet and scripts), ``/vendor/*`` (the DataTables bundle from the
  itables package).

No query string makes a page fail: a parameter a page does not know is ignored, as is an unknown
``only=``; a number that is not one is taken as none, and a page number past the last page as the
last page (``lists.page_number``); whatever the query, the answer is 200 or 404 (a decision or an
episode that is not there), never 500 (``tests/view/test_fuzz.py`` tries every route with hostile
values). Every answer carries ``X-Content-Type-Options: nosniff`` (a 404's plain text echoes the
name asked for, and must never be read as HTML), and is gzipped when the browser accepts it and it
is over 1 KB (the episode page's JSON and the DataTables bundle shrink about fourfold).

An instance that is not one of the folders there, or an episode id that is not a plain name
(``core.reader.EPISODE_ID``: no path, no leading dot, at most 255 characters), is not found (404),
whatever its length. A finished episode whose table file cannot be read (truncated,
corrupt) gets a page (status 500) naming the file and the episode and whether the file still has
the size and hash its ``meta.json`` records (``core.reader.UnreadableTable``), and one
``warning:`` line in the server's log, not a traceback.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from marketarena.core.reader import UnreadableTable
from marketarena.report.board import number
from marketarena.report.safe import script_json
from marketarena.view import lists
from marketarena.view.outcomes import scoring
from marketarena.view.search import CLOSE, OPEN
from marketarena.view.search import PAGE_SIZE as SEARCH_PAGE
from marketarena.view.store import EpisodeStore, decision_view, episode_view, episode_zip

EPISODE_SORTS = ("episode_id", "run", "seed", "calls", "tokens", "cost_usd", "reasked", "invalid")
PLAYER_SORTS = ("episode_id", "run", "seed", *lists.OUTCOME)
SHARED_SORTS = ("episode_id", "run", "seed", "a_score", "a_rank", "b_score", "b_rank", "difference")


HERE = Path(__file__).resolve().parent


def marked(snippet: str) -> Markup:
    """A search hit's text, escaped, with its matches marked."""
    return Markup(str(escape(snippet)).replace(OPEN, "<mark>").replace(CLOSE, "</mark>"))


def vendor_files() -> dict[str, Path]:
    """The page's libraries, served from the Python packages that ship them (no CDN)."""
    return {
        "dt_bundle.js": Path(str(resources.files("itables").joinpath("html/dt_bundle.js"))),
        "dt_bundle.css": Path(str(resources.files("itables").joinpath("html/dt_bundle.css"))),
    }


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("marketarena.view", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson_script"] = script_json
    env.filters["pathpart"] = lambda v: quote(str(v), safe="")
    env.filters["number"] = number
    return env


class NoSniff:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every answer."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-content-type-options", b"nosniff"),
                ]
            await send(message)

        await self.app(scope, receive, sending if scope["type"] == "http" else send)


MIDDLEWARE = [Middleware(NoSniff), Middleware(GZipMiddleware, minimum_size=1000)]


def create_app(episodes_root: str | Path) -> Starlette:
    root = Path(episodes_root)
    reports = root.parent.parent / "reports"  # data/episodes -> the project's reports/
    store = EpisodeStore(root)
    env = _environment()
    vendor = vendor_files()

    def render(name: str, status_code: int = 200, **context) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status_code)

    def instance_of(request: Request) -> str:
        instance = request.path_params["instance"]
        if len(instance.encode("utf-8", "replace")) > 255 or instance not in store.instances():
            raise HTTPException(404, f"no instance {instance[:100]!r} under {root}")
        return instance

    def unreadable(instance: str, exc: UnreadableTable) -> HTMLResponse:
        print(f"warning: {exc}", file=sys.stderr, flush=True)  # the server's log: one line
        return render("unreadable.html.j2", status_code=500, instance=instance, error=exc)

    async def home(request: Request) -> HTMLResponse:
        rows = []
        for name in store.instances():
            index = store.index(name)
            rows.append(
                {
                    "name": name,
                    "market": index.market,
                    "episodes": len(index),
                    "players": len(index.players),
                }
            )
        return render("home.html.j2", root=str(root), instances=rows)

    def chosen_of(request: Request, index) -> dict:
        q = request.query_params
        return {
            "player": q.get("player", ""),
            "seed": q.get("seed", "").strip(),
            "q": q.get("q", "").strip(),
            "only": q.get("only", "") if q.get("only", "") in lists.ONLY else "",
            "setting": {k: q.get(f"s.{k}", "") for k in index.settings},
        }

    def found_of(index, chosen: dict, player: str = "") -> list:
        return index.filter(
            player or chosen["player"], chosen["setting"], chosen["seed"], chosen["q"]
        )

    def listing(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        index = store.index(instance)
        chosen = chosen_of(request, index)
        found = found_of(index, chosen)
        if chosen["player"] in index.players:
            return player_page(instance, index, chosen, request, found)
        rows = lists.episode_rows(index, found, chosen["only"])
        return render(
            "instance.html.j2",
            instance=instance,
            index=index,
            chosen=chosen,
            listing=lists.page_of(rows, request.query_params, EPISODE_SORTS, "episode_id"),
            players=lists.players(index),
            score=scoring(index.market),
            only=lists.ONLY,
        )

    def player(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        index = store.index(instance)
        name = request.path_params["player"]
        if name not in index.players:
            raise HTTPException(404, f"no player {name[:100]!r} in {instance}")
        chosen = {**chosen_of(request, index), "player": name}
        return player_page(instance, index, chosen, request, found_of(index, chosen))

    def player_page(instance: str, index, chosen: dict, request: Request, found) -> HTMLResponse:
        name = chosen["player"]
        rows = lists.player_rows(index, name, found, chosen["only"])
        return render(
            "player.html.j2",
            instance=instance,
            index=index,
            chosen=chosen,
            player=name,
            totals=lists.totals(rows),
            listing=lists.page_of(rows, request.query_params, PLAYER_SORTS, "episode_id"),
            board=lists.board_rows(reports, instance, [name]),
            score=scoring(index.market),
            only=lists.ONLY,
            of=len(index),
        )

    def compare(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        index = store.index(instance)
        chosen = chosen_of(request, index)
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        for name in (a, b):
            if name not in index.players:
                raise HTTPException(404, f"no player {name[:100]!r} in {instance}")
        rows = lists.shared_rows(index, a, b, found_of(index, chosen, a))
        return render(
            "compare.html.j2",
            instance=instance,
            index=index,
            chosen=chosen,
            a=a,
            b=b,
            listing=lists.page_of(rows, request.query_params, SHARED_SORTS, "episode_id"),
            summary=lists.versus(rows),
            board=lists.board_rows(reports, instance, [a, b]),
            score=scoring(index.market),
        )

    def search(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        q = request.query_params
        index = store.search(instance)
        index.start()
        chosen = {
            "text": q.get("text", q.get("q", ""))[:500],
            "player": q.get("player", ""),
            "model": q.get("model", ""),
            "invalid": q.get("invalid") == "1",
            "reasked": q.get("reasked") == "1",
            "episode": q.get("episode", ""),
        }
        total, hits, page = 0, [], 0
        if index.ready:
            total, hits, page = index.query(**chosen, page=lists.page_number(q.get("page")))
        keep = {k: v for k, v in q.items() if k != "page" and v}
        return render(
            "search.html.j2",
            instance=instance,
            index=index,
            chosen=chosen,
            total=total,
            hits=hits,
            page=page,
            page_size=SEARCH_PAGE,
            keep=keep,
            choices=index.choices(),
            marked=marked,
        )

    def episode(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        try:
            view = episode_view(
                root / instance,
                instance,
                request.path_params["episode"],
                request.query_params.get("player", ""),
            )
        except KeyError:
            raise HTTPException(
                404, f"no finished episode {request.path_params['episode'][:100]!r} in {instance}"
            ) from None
        except UnreadableTable as exc:
            return unreadable(instance, exc)
        return render("episode.html.j2", view=view)

    def download(request: Request) -> Response:
        instance = instance_of(request)
        episode_id = request.path_params["episode"]
        try:
            data = episode_zip(root / instance, episode_id)
        except KeyError:
            raise HTTPException(
                404, f"no finished episode {episode_id[:100]!r} in {instance}"
            ) from None
        except UnreadableTable as exc:
            return unreadable(instance, exc)
        return Response(
            data,
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{instance}-{episode_id}.zip"'},
        )

    def decision(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        q = request.query_params
        try:
            view = decision_view(
                root / instance,
                instance,
                request.path_params["episode"],
                int(q["step"]),
                int(q["round"]),
                q["phase"],
                q["agent"],
            )
        except UnreadableTable as exc:
            return unreadable(instance, exc)
        except (KeyError, ValueError) as exc:
            raise HTTPException(404, f"no such decision ({str(exc)[:200]})") from None
        return render("decision.html.j2", view=view)

    async def vendor_file(request: Request) -> FileResponse:
        path = vendor.get(request.path_params["name"])
        if path is None or not path.is_file():
            raise HTTPException(404)
        return FileResponse(path, headers={"Cache-Control": "max-age=86400"})  # fixed per install

    routes = [
        Route("/", home),
        Route("/i/{instance}", listing),
        Route("/i/{instance}/p/{player:path}", player),
        Route("/i/{instance}/compare", compare),
        Route("/i/{instance}/search", search),
        Route("/i/{instance}/e/{episode}", episode),
        Route("/i/{instance}/e/{episode}/tables.zip", download),
        Route("/i/{instance}/e/{episode}/d", decision),
        Route("/vendor/{name}", vendor_file),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Mount("/site-static", StaticFiles(directory=HERE.parent / "report" / "static")),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):  # the indexes are built while the user picks an instance
        threading.Thread(target=store.warm, daemon=True).start()
        try:
            yield
        finally:
            store.close()  # the search indexes' temporary files

    return Starlette(routes=routes, lifespan=lifespan, middleware=MIDDLEWARE)


def serve(episodes_root: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the viewer until interrupted (uvicorn, one process)."""
    import uvicorn

    uvicorn.run(create_app(episodes_root), host=host, port=port, log_level="warning")
