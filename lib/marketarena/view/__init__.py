"""The episode viewer: ``marketarena view`` serves read-only pages over ``data/episodes/`` on
loopback (``app``), reading one game by id without loading its shard set (``store``); each
player's outcome in each game from what the pipeline wrote (``outcomes``), the lists built on it
(``lists``) and full-text search over the prompts and answers (``search``).

Dependencies, and why:

- **Starlette** (web framework) with **uvicorn** (its server): a small, well-kept ASGI toolkit
  (routing, responses, static files; the base FastAPI is built on) that needs nothing we do not
  use: no ORM, no forms, no sessions; the viewer is a handful of GET routes rendering Jinja2
  templates. uvicorn is the reference ASGI server, runs in one process and binds to loopback.
- **DataTables**, as the itables package ships it (``itables/html/dt_bundle.js``, one ES module
  with its stylesheet): sorting, searching and paging of the episode's tables in the page, with
  its assets installed from PyPI and served by the viewer (no CDN).
- **No plotting library.** The timeline's small line charts (a title, a line per seat, a legend,
  ticks, the step shown) are SVG drawn by ``static/chart.js``, about 6 KB. plotly.js drew them
  before: 4.8 MB of script for a few lines, which made an episode page take seconds to ``load``
  in Chromium on a busy machine (``benchmarks/bench_viewer_page.py`` measures the page before and
  after); nothing a chart there needs (zoom, export, 3-D) was used.
- **Starlette's GZipMiddleware** gzips the answers over 1 KB (the episode page's JSON, the
  DataTables bundle): no new package.
- **SQLite's FTS5** (Python's ``sqlite3``, in the standard library) indexes the prompts and
  answers for the search, in a temporary file: bounded memory, no server, no new package.
- **pyarrow**, already the logs' engine, reads one game of a shard with a filter on
  ``episode_id`` (``core.reader.read_episode``). Measured on a 90,000-game set
  (``benchmarks/bench_viewer.py``): a game's ten tables in about 80 ms, DuckDB over the same
  files about 25 ms; both are a small part of opening a game (the page's tables and plots take
  longer), so no query engine is added.
"""
