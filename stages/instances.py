"""DVC stage `instances`. Every market instance's kind, the hash of the code its stages run and of
the global inputs its market reads: -> data/instances/<instance>.json, one per instance (the
per-instance stages depend on their own file, not on the whole library, so editing one market, or
the personas, re-runs only the instances it concerns)."""

from marketarena.pipeline import run_instances
from stages._common import stage_app

app = stage_app(run_instances)

if __name__ == "__main__":
    app()
