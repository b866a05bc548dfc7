"""DVC stage `metrics`. Per-agent, per-step and market metrics from a market's logs: -> data/metrics/<market>/."""

from marketarena.pipeline import run_metrics
from stages._common import stage_app

app = stage_app(run_metrics, per_market=True)

if __name__ == "__main__":
    app()
