"""Code shared by several markets (not a market: names starting with "_" are skipped by discovery).

Every episode's fingerprint and every market's DVC stages include this folder, so a change here
replays the markets that use it.
"""
