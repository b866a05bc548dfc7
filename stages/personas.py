"""DVC stage `personas`. Generate buyer persona texts: params.personas -> data/personas.parquet."""

from marketarena.pipeline import run_personas
from stages._common import stage_app

app = stage_app(run_personas, markets=False)

if __name__ == "__main__":
    app()
