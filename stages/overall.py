"""DVC stage `overall`. The standing across market instances, for players that played two or more:
-> reports/overall/overall.csv (+ overall.md)."""

from marketarena.pipeline import run_overall
from stages._common import stage_app

app = stage_app(run_overall)

if __name__ == "__main__":
    app()
