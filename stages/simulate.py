"""DVC stage `simulate`. The market's reference (computed again only when its fingerprint changed),
then its episodes, resuming finished ones: -> data/references/<market>/, data/episodes/<market>/."""

from marketarena.faults import KEPT
from marketarena.pipeline import run_simulate
from stages._common import stage_app

app = stage_app(run_simulate, per_market=True, kept=KEPT)

if __name__ == "__main__":
    app()
