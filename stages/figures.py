"""DVC stage `figures`. The papers' figures and tables: -> reports/figures/<market>/, reports/tables/."""

from marketarena.pipeline import run_figures
from stages._common import stage_app

app = stage_app(run_figures)

if __name__ == "__main__":
    app()
