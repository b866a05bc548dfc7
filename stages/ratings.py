"""DVC stage `ratings`. An instance's leaderboard (TrueSkill by player, intervals): -> reports/leaderboards/<instance>.csv."""

from marketarena.pipeline import run_ratings
from stages._common import stage_app

app = stage_app(run_ratings, per_market=True)

if __name__ == "__main__":
    app()
