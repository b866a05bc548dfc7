"""A market written outside ``lib/marketarena`` (``tests/test_adding_a_market.py``): what
docs/adding-a-market.md describes, whole in its folder ``toy/``."""
