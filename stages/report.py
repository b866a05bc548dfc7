"""DVC stage `report`. The results site, opened from disk: -> reports/site/index.html and a page
per market instance (marketarena.report.site), replaced whole: a failed run leaves the earlier site."""

from marketarena.pipeline import run_report
from marketarena.report.site import KEPT
from stages._common import stage_app

app = stage_app(run_report, kept=KEPT)

if __name__ == "__main__":
    app()
