"""DVC stage `figures`. An instance's figures and tables: -> reports/figures/<instance>/, reports/tables/<instance>/."""

from marketarena.pipeline import run_figures
from stages._common import stage_app

app = stage_app(run_figures, per_market=True)

if __name__ == "__main__":
    app()
