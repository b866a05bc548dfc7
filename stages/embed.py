"""DVC stage `embed`. Embed persona texts: data/personas.parquet -> data/persona_embeddings.parquet."""

from marketarena.pipeline import run_embed
from stages._common import stage_app

app = stage_app(run_embed, markets=False)

if __name__ == "__main__":
    app()
