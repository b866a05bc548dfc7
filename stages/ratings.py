"""DVC stage `ratings`. TrueSkill leaderboards with bootstrap intervals: -> reports/leaderboards/."""

from marketarena.pipeline import run_ratings
from stages._common import stage_app

app = stage_app(run_ratings)

if __name__ == "__main__":
    app()
