"""Logit Bertrand market (Calvano / Fish et al. and the seed-003 start-up market): economics in ``economics.py``."""
