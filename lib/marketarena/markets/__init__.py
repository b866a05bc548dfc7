"""The market kinds, one subpackage each (``markets/<kind>/``), discovered by
``core.registry.market_names``; ``_shared`` holds what several of them use.

Not empty on purpose: the ``personas`` and ``embed`` stages list this file as a dependency in
``dvc.yaml`` (their params models import the registry), and DVC warns "'...' is empty." about an
empty dependency on every ``dvc repro``."""
