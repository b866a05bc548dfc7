"""The episode viewer's web app (``marketarena view``): read-only pages over ``data/episodes/``.

Routes (GET only; nothing writes):

- ``/``: the instances with their episodes;
- ``/i/<instance>?player=&seed=&q=&s.<key>=&page=``: its episodes, filtered by player (in the
  lineup), setting (each key of the episode's setting: a crash cell, a double_auction
  distribution...), seed (the episode seed or its run index) and id, 100 per page;
- ``/i/<instance>/e/<episode>``: one episode: meta, seats, the timeline (every table with a
  ``step`` column, filtered to one step or all, and small plots), every decision (links to the
  LLM ones), the other tables;
- ``/i/<instance>/e/<episode>/d?step=&round=&phase=&agent=``: one decision: each attempt's
  action, validity and reason, and each LLM call's prompt, raw answer, re-asks with their reason,
  tokens, cost, latency and cache hit;
- ``/static/*`` (our stylesheet and script), ``/vendor/*`` (the DataTables bundle from the
  itables package, plotly.min.js from the plotly package).

An instance that is not one of the folders there, or an episode id that is not a plain name
(``core.reader.EPISODE_ID``: no path, no leading dot, at most 255 characters), is not found (404),
whatever its length. A finished episode whose table file cannot be read (truncated,
corrupt) gets a page (status 500) naming the file and the episode and whether the file still has
the size and hash its ``meta.json`` records (``core.reader.UnreadableTable``), and one
``warning:`` line in the server's log, not a traceback.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from marketarena.core.reader import UnreadableTable
from marketarena.view.store import EpisodeStore, decision_view, episode_view

PAGE_SIZE = 100
HERE = Path(__file__).resolve().parent


def vendor_files() -> dict[str, Path]:
    """The page's libraries, served from the Python packages that ship them (no CDN)."""
    return {"plotly.min.js": Path(str(resources.files("plotly").joinpath("package_data/plotly.min.js"))),
            "dt_bundle.js": Path(str(resources.files("itables").joinpath("html/dt_bundle.js"))),
            "dt_bundle.css": Path(str(resources.files("itables").joinpath("html/dt_bundle.css")))}


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("marketarena.view", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson_script"] = lambda v: Markup(
        json.dumps(v, ensure_ascii=False, allow_nan=False, default=str)
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    return env


def create_app(episodes_root: str | Path) -> Starlette:
    root = Path(episodes_root)
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
            rows.append({"name": name, "market": index.market, "episodes": len(index),
                         "players": len(index.players)})
        return render("home.html.j2", root=str(root), instances=rows)

    def listing(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        index = store.index(instance)
        q = request.query_params
        setting = {k: q.get(f"s.{k}", "") for k in index.settings}
        chosen = {"player": q.get("player", ""), "seed": q.get("seed", "").strip(),
                  "q": q.get("q", "").strip(), "setting": setting}
        found = index.filter(chosen["player"], setting, chosen["seed"], chosen["q"])
        try:
            page = max(0, int(q.get("page", "0")))
        except ValueError:
            page = 0
        pages = max(1, -(-len(found) // PAGE_SIZE))
        page = min(page, pages - 1)
        keep = {k: v for k, v in q.items() if k != "page" and v}
        return render("instance.html.j2", instance=instance, index=index, chosen=chosen,
                      found=found[page * PAGE_SIZE:(page + 1) * PAGE_SIZE], total=len(found),
                      page=page, pages=pages, keep=keep)

    def episode(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        try:
            view = episode_view(root / instance, instance, request.path_params["episode"])
        except KeyError:
            raise HTTPException(404, f"no finished episode {request.path_params['episode'][:100]!r} "
                                     f"in {instance}") from None
        except UnreadableTable as exc:
            return unreadable(instance, exc)
        return render("episode.html.j2", view=view)

    def decision(request: Request) -> HTMLResponse:
        instance = instance_of(request)
        q = request.query_params
        try:
            view = decision_view(root / instance, instance, request.path_params["episode"],
                                 int(q["step"]), int(q["round"]), q["phase"], q["agent"])
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
        Route("/i/{instance}/e/{episode}", episode),
        Route("/i/{instance}/e/{episode}/d", decision),
        Route("/vendor/{name}", vendor_file),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Mount("/site-static", StaticFiles(directory=HERE.parent / "report" / "static")),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app):  # the indexes are built while the user picks an instance
        threading.Thread(target=store.warm, daemon=True).start()
        yield

    return Starlette(routes=routes, lifespan=lifespan)


def serve(episodes_root: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the viewer until interrupted (uvicorn, one process)."""
    import uvicorn

    uvicorn.run(create_app(episodes_root), host=host, port=port, log_level="warning")
