"""DVC stage `stats`. Spearman of the ranking score against every metric (cluster bootstrap): -> reports/stats*."""

from marketarena.pipeline import run_stats
from stages._common import stage_app

app = stage_app(run_stats)

if __name__ == "__main__":
    app()
