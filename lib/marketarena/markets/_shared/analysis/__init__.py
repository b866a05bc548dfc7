"""What the analyses of several markets share: the usual TrueSkill board (``boards.py``) and the
oligopolies' board and figure helpers (``oligopoly.py``)."""
