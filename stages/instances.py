"""DVC stage `instances`. A market instance's kind and the hash of the code its per-instance stages
run: -> data/instances/<instance>.json (the per-instance stages depend on it, not on every market's
code, so editing one market re-runs only its own instances)."""

from marketarena.pipeline import run_instance
from stages._common import stage_app

app = stage_app(run_instance, per_market=True)

if __name__ == "__main__":
    app()
