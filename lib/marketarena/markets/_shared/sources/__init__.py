"""What the sources of several markets share: reading Agent Bazaar's run folders (``agent_bazaar.py``,
for crash's and lemon's importers)."""
