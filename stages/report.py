"""DVC stage `report`. The results site, opened from disk: -> reports/site/index.html and a page
per market instance (marketarena.report.site)."""

from marketarena.pipeline import run_report
from stages._common import stage_app

app = stage_app(run_report)

if __name__ == "__main__":
    app()
