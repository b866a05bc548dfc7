"""The episode viewer: ``marketarena view`` serves read-only pages over ``data/episodes/`` on
loopback (``app``), reading one game by id without loading its shard set (``store``).

Dependencies, and why:

- **Starlette** (web framework) with **uvicorn** (its server): a small, well-kept ASGI toolkit
  (routing, responses, static files; the base FastAPI is built on) that needs nothing we do not
  use: no ORM, no forms, no sessions; the viewer is a handful of GET routes rendering Jinja2
  templates. uvicorn is the reference ASGI server, runs in one process and binds to loopback.
- **DataTables**, as the itables package ships it (``itables/html/dt_bundle.js``, one ES module
  with its stylesheet): sorting, searching and paging of the episode's tables in the page, with
  its assets installed from PyPI and served by the viewer (no CDN).
- **plotly.js**, as the plotly package ships it (``package_data/plotly.min.js``): the timeline's
  small interactive plots. Only the bundled script is used; nothing of plotly's Python side.
- **pyarrow**, already the logs' engine, reads one game of a shard with a filter on
  ``episode_id`` (``core.reader.read_episode``). Measured against DuckDB over the same files
  (``benchmarks/bench_viewer.py``): both well under the 1 s target for a game of a 90,000-game
  set, so no query engine is added.
"""
