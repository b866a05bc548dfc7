"""DVC stage `stats`. Spearman of the ranking score against every metric (cluster bootstrap): -> reports/stats/<instance>*."""

from marketarena.pipeline import run_stats
from stages._common import stage_app

app = stage_app(run_stats, per_market=True)

if __name__ == "__main__":
    app()
