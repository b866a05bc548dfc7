"""DVC stage `reference`. A market's reference data (e.g. Nash / monopoly solutions, truthful-play
tables): -> data/references/<market>/summary.json (+ the market's own files)."""

from marketarena.pipeline import run_reference
from stages._common import stage_app

app = stage_app(run_reference, per_market=True)

if __name__ == "__main__":
    app()
