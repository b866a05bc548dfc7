"""marketarena: a reproducible benchmark in which LLM agents and scripted baselines compete in
simulated markets. See README.md and shared/DESIGN.md."""

__version__ = "0.1.0"
