"""Multi-product Cournot market (market division, seed 003): economics in ``economics.py``."""
