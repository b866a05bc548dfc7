"""Agents shared across markets: the generic LLM agent and its harnesses and memory add-ons
(DESIGN.md section 1). Scripted baselines live beside their market in ``markets/<name>/``."""
