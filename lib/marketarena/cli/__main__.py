"""``python -m marketarena.cli``: the ``marketarena`` command."""

from marketarena.cli import main

main()
