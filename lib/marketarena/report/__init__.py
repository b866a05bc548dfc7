"""Reading results: the static results site (``site``, the ``report`` stage), what it says about
each market (``captions``: ``markets/<kind>/figures.yaml``) and who beats whom (``headtohead``);
how a run went, as opposed to its results, is read in one place (``runinfo``). The episode viewer
is ``marketarena.view``; the README's screenshots are made by ``screenshots``.

Dependencies, and why:

- **Jinja2** (already the prompts' template engine) renders the pages from templates in
  ``report/templates/``, autoescaped.
- **markdown-it-py** renders the figures stage's Markdown tables (CommonMark plus GFM tables),
  so the site shows exactly the tables the pipeline wrote, bold / italic best marks included, with
  no table parser of our own. It is well kept (the executablebooks project) and was already
  installed (rich, through typer, needs it).
- No JavaScript library: the pages are static HTML and PNG (every figure is the figures stage's
  PNG), so they open from disk with no server, no network and nothing to load; an ES-module
  table library would not load from ``file://`` anyway. What the pages do (sort a table on a
  header click, compare two players) is ``static/pages.js``, a few lines of plain JavaScript
  loaded with a plain ``<script>``.
- **Playwright** (the ``dev`` extra) drives Chromium for the browser tests and the README's
  screenshots (``report.browser``, ``marketarena.screenshots``); **Pillow**, already installed as
  matplotlib's own dependency, writes a screenshot's signature into its PNG.
"""
