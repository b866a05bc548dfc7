"""DVC stage `simulate`. Play a market's episodes, resuming finished ones: -> data/episodes/<market>/."""

from marketarena.faults import KEPT
from marketarena.pipeline import run_simulate
from stages._common import stage_app

app = stage_app(run_simulate, per_market=True, kept=KEPT)

if __name__ == "__main__":
    app()
